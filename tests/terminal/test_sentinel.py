"""The line matcher: stripping rules, real TUI captures, bounds, echo."""

from __future__ import annotations

import re
import time
import tracemalloc

import pytest

from agentd.terminal.ansi import strip_ansi
from agentd.terminal.matcher import PARTIAL_MAX, LineMatcher
from agentd.terminal.regexlit import required_literal
from agentd.terminal.rules import Hit, Rule
from tests.conftest import FIXTURES

COMPACTING = Rule("compacting", re.compile("Compacting conversation"))
COMPACTED = Rule("compacted", re.compile("Conversation compacted"))
LIMIT = Rule("limit", re.compile("Context limit reached"))
PACK = (COMPACTING, COMPACTED, LIMIT)


def names(hits: list[Hit]) -> list[str]:
    return [h.rule.name for h in hits]


def run(chunks: list[bytes], rules=PACK, **kw) -> list[Hit]:
    m = LineMatcher(rules, **kw)
    hits: list[Hit] = []
    for c in chunks:
        hits += m.feed(c)
    return hits + m.flush()


@pytest.mark.parametrize(
    ("raw", "lines"),
    [
        ("plain", ["plain"]),
        ("\x1b[1;31mred\x1b[0m text", ["red text"]),
        ("Compact\x1b[1mi\x1b[0mng conversation", ["Compacting conversation"]),
        # line breaks
        ("a\nb", ["a", "b"]),
        ("a\r\nb", ["a", "b"]),
        ("Thinking…\rCompacting", ["Thinking…", "Compacting"]),
        ("a\x1b[Kb", ["a", "b"]),
        ("a\x1b[2Kb\x1b[0Jc\x1b[Jd", ["a", "b", "c", "d"]),
        ("a\x1b[3Ab\x1b[Bc\x1b[2Ed\x1b[Fe", ["a", "b", "c", "d", "e"]),
        ("a\x1b[5;10Hb\x1b[Hc\x1b[1;1fd\x1b[4de", ["a", "b", "c", "d", "e"]),
        ("a\x1bMb", ["a", "b"]),
        ("a\x0bb\x0cc", ["a", "b", "c"]),
        # horizontal moves are one space
        ("Compacting\x1b[1Cconversation", ["Compacting conversation"]),
        ("a\x1b[5Cb\x1b[20Gc\x1b[2Dd\x1b[7`e", ["a b c d e"]),
        ("Bash\x1b[22m(\x1b[9Gch\x1b[12G step-two)", ["Bash( ch  step-two)"]),
        ("a\tb", ["a b"]),
        # dropped
        ("\x1b[?2004h\x1b[?25lx\x1b[>0q\x1b[c\x1b[2 q", ["x"]),
        ("\x1b]0;✳ Claude Code\x07title gone", ["title gone"]),
        ("\x1b]8;;http://x.test/\x1b\\link\x1b]8;;\x1b\\", ["link"]),
        ("\x1bPq#0;2;0;0;0\x1b\\after\x1b_apc\x1b\\", ["after"]),
        ("\x1b7a\x1b8b\x1b(Bc\x1b=d\x1b>", ["abcd"]),
        ("ab\x08c\x07d\x00e\x7f", ["abcd" + "e"]),
        ("a\x9bb\x85c", ["abc"]),
        # empty lines never count; nothing else is collapsed
        ("\r\n\r\n\x1b[K\r\n  \r\n", ["  "]),
        ("a   b  ", ["a   b  "]),
        ("中文\u00a0emoji 🎉", ["中文\u00a0emoji 🎉"]),
        # a CSI broken by a control character: ESC [ is dropped, the rest is text
        ("x\x1b[12\nz", ["x12", "z"]),
    ],
)
def test_strip_rules(raw: str, lines: list[str]) -> None:
    assert strip_ansi(raw) == lines
    # the matcher sees the same lines, fed whole or byte by byte
    every = Rule("every", re.compile(".+"))
    data = raw.encode()
    assert [h.line for h in run([data], [every])] == lines
    assert [h.line for h in run([data[i : i + 1] for i in range(len(data))], [every])] == lines


EXPECTED = {
    "claude-code-2.1.197-autocompact.raw": ["compacting", "compacted"],
    "claude-code-2.1.332-autocompact.raw": ["compacting", "compacted"],
    "claude-code-2.1.197-context-limit.raw": ["limit"],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("chunk", [1, 7, 100, 4096, 1 << 20])
def test_real_tui_captures(name: str, chunk: int) -> None:
    data = (FIXTURES / name).read_bytes()
    hits = run([data[i : i + chunk] for i in range(0, len(data), chunk)])
    assert names(hits) == EXPECTED[name]


def test_fixture_lines_read_as_on_screen() -> None:
    data = (FIXTURES / "claude-code-2.1.197-autocompact.raw").read_bytes()
    hits = run([data])
    assert hits[0].line == "* Compacting conversation… (0s · ↑ 2 tokens)"
    assert hits[1].line == "✻ Conversation compacted (ctrl+o for history)"


@pytest.mark.parametrize(
    "stream",
    [
        [b"Compact\x1b[1mi\x1b[0mng conversation\r\n"],
        [b"Compact\x1b[1", b"mi\x1b[0mng conver", b"sation\r\n"],
        [
            b"\xe2\xa0\x82 Thinking\xe2\x80\xa6\r\x1b[2K",
            b"* Compacting conversation\xe2",
            b"\x80\xa6\r\n",
        ],
        [b"\x1b[97m*\x1b[3GCompacting\x1b[1Cconversation\x1b[K"],
        [b"\x1b]0;title\x07Compacting", b" conversation", b"\n"],
        [b"\x1b]0;long title ", b"x" * 10000, b"\x07Compacting conversation\n"],
    ],
)
def test_sentinel_survives_tui_rendering(stream: list[bytes]) -> None:
    assert names(run(stream)) == ["compacting"]


def test_hits_carry_named_groups_without_nones() -> None:
    rule = Rule("usage", re.compile(r"limit reached.*reset at (?P<until>[^.]+)(?P<zone> \(\S+\))?"))
    (hit,) = run([b"Usage limit reached. Your limit will reset at 3pm.\n"], [rule])
    assert hit.groups == {"until": "3pm"}
    assert hit.line == "Usage limit reached. Your limit will reset at 3pm."


def test_hits_come_in_line_then_rule_order() -> None:
    data = b"Conversation compacted\nx\nCompacting conversation; Conversation compacted\n"
    assert names(run([data])) == ["compacted", "compacting", "compacted"]


def test_rules_that_must_be_matched_line_by_line() -> None:
    start = Rule("start", re.compile(r"\AError"))
    not_after_space = Rule("bare", re.compile(r"(?<!\s)Error"))
    hits = run([b"Error one\n  Error two\nError three\n"], [start, not_after_space])
    assert [(h.rule.name, h.line) for h in hits] == [
        ("start", "Error one"),
        ("bare", "Error one"),
        ("start", "Error three"),
        ("bare", "Error three"),
    ]


def test_anchors_mean_line_ends() -> None:
    rule = Rule("prompt", re.compile(r"^\s*Continue\?$"))
    assert [h.line for h in run([b"x Continue?\nContinue?\n  Continue?\n"], [rule])] == [
        "Continue?",
        "  Continue?",
    ]


def test_rules_change_between_feeds() -> None:
    m = LineMatcher([COMPACTING])
    assert names(m.feed(b"Compacting conversation\n")) == ["compacting"]
    m.add_rule(Rule("ready", re.compile(r"^> $"), action="inject"))
    m.remove_rule("compacting")
    assert names(m.feed(b"Compacting conversation\n> \n")) == ["ready"]
    m.add_rule(Rule("ready", re.compile("Compacting")))  # same name replaces
    assert [r.name for r in m.rules] == ["ready"]
    assert names(m.feed(b"Compacting\n> \n")) == ["ready"]
    m.remove_rule("nonexistent")


def test_check_partial_sees_a_prompt_without_newline() -> None:
    prompt = Rule(
        "prompt", re.compile(r"Continue\? $"), action="inject", echo_check=False, partial=True
    )
    answered = Rule("answered", re.compile(r"Continue\? y"))
    m = LineMatcher([prompt, answered])
    assert m.feed(b"\x1b[1mContinue?\x1b[0m ") == []
    assert names(m.check_partial()) == ["prompt"]
    assert m.check_partial() == []  # nothing changed
    m.add_rule(Rule("other", re.compile("zzz")))
    assert m.check_partial() == []  # reported once per line
    # the same line completes: only the rule that had not hit yet is reported
    assert names(m.feed(b"y\r\n")) == ["answered"]
    assert names(m.feed(b"Continue? \n")) == ["prompt"]  # a new line hits again


def test_check_partial_ignores_a_long_unterminated_line() -> None:
    m = LineMatcher([Rule("compacting", COMPACTING.pattern, partial=True)])
    m.feed(b"Compacting conversation" + b"." * PARTIAL_MAX)
    assert m.check_partial() == []  # no prompt is that long
    assert names(m.feed(b"\n")) == ["compacting"]  # matched when it completes


def test_check_partial_leaves_sentinels_to_complete_lines() -> None:
    usage = Rule("usage", re.compile(r"reset at (?P<until>[^.]+)"))
    m = LineMatcher([usage])
    m.feed(b"usage limit reached, reset at 3")
    assert m.check_partial() == []  # half drawn: the group would be "3"
    hits = m.feed(b"pm.\r\n")
    assert [h.groups["until"] for h in hits] == ["3pm"]


def test_flush_matches_the_last_unterminated_line() -> None:
    m = LineMatcher(PACK)
    assert m.feed(b"Context limit reached \xc2") == []
    assert names(m.flush()) == ["limit"]
    assert m.flush() == []


def test_tokens_and_bytes_in() -> None:
    m = LineMatcher()
    m.feed("中文".encode() + b"\x1b[31mabcd\x1b[0m\r\n")
    m.feed(b"efgh")
    assert m.bytes_in == len("中文".encode()) + 15 + 4
    assert m.tokens == 2 + 2  # 2 CJK chars + 8 other chars / 4


def test_a_huge_line_keeps_memory_bounded_and_its_end_matches() -> None:
    m = LineMatcher(PACK)
    block = b"x" * 65536
    tracemalloc.start()
    try:
        for _ in range(20 * 16):  # 20 MB
            assert m.feed(block) == []
        hits = m.feed(b" Compacting conversation\n")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert names(hits) == ["compacting"]
    assert len(hits[0].line) == 65536
    assert peak < 3 * 2**20, f"peak {peak} bytes"


def test_a_huge_line_is_fed_in_linear_time() -> None:
    m = LineMatcher(PACK)
    block = b"x" * 65536
    started = time.perf_counter()
    for _ in range(20 * 16):
        m.feed(block)
        m.check_partial()
    assert names(m.feed(b"Context limit reached\n")) == ["limit"]
    # ~0.1 s here; quadratic re-joining of the line would take minutes
    assert time.perf_counter() - started < 10


def test_max_line_chars_keeps_the_newest_characters() -> None:
    tail = Rule("tail", re.compile(r"^x{5}END$"))
    assert names(run([b"x" * 100 + b"END\n"], [tail], max_line_chars=8)) == ["tail"]
    assert names(run([b"x" * 100 + b"END\n"], [tail], max_line_chars=9)) == []
    chunks = [b"x" * 7] * 15 + [b"END", b"\n"]
    assert names(run(chunks, [tail], max_line_chars=8)) == ["tail"]


BOOTSTRAP = (
    "# Unit cart-cache, session 3\n"
    "Last session ended: sentinel:compaction. If you see Compacting conversation, stop and\n"
    "save your state first. The state files win over any memory of the conversation.\n"
    "Next action: replace the redis calls in src/cart.py.\n"
)


def test_echo_of_the_bootstrap_is_not_a_hit_but_the_real_sentinel_is() -> None:
    m = LineMatcher(PACK)
    m.expect_echo(BOOTSTRAP)
    banner = b"\x1b[31m\xe2\x95\xad\xe2\x94\x80 Claude Code\r\r\n"
    echo = b"".join(
        b"\x1b[37m> \x1b[97m" + line.encode() + b"\r\n" for line in BOOTSTRAP.splitlines()
    )
    assert m.feed(banner + echo) == []
    genuine = b"\x1b[97m*\x1b[3GCompacting conversation\xe2\x80\xa6\r\n"
    assert names(m.feed(genuine)) == ["compacting"]


def test_a_wrapped_echo_is_not_a_hit() -> None:
    text = ("word " * 40) + "then Compacting conversation appears " + ("tail " * 40)
    m = LineMatcher(PACK)
    m.expect_echo(text)
    pieces = [text[i : i + 116] for i in range(0, len(text), 116)]
    screen = "".join(f"│ {p:<116} │\r\n" for p in pieces)
    assert m.feed(screen.encode()) == []
    assert names(m.feed(b"Compacting conversation\r\n")) == ["compacting"]


def test_echo_redrawn_after_it_was_consumed_is_still_echo() -> None:
    m = LineMatcher(PACK)
    m.expect_echo("Summarise, then run Compacting conversation checks.")
    line = b"\x1b[30m\xe2\x9d\xaf \x1b[97mSummarise, then run Compacting conversation checks.\r\n"
    assert m.feed(line) == []
    assert m.feed(b"\xc2\xb7 Pondering\xe2\x80\xa6\r\n" + line) == []  # TUI redraws the prompt


def test_echo_only_shields_echo_checked_rules_and_echo_lines() -> None:
    raw = Rule("raw", re.compile("Compacting"), echo_check=False)
    m = LineMatcher([COMPACTING, raw])
    m.expect_echo("please do not start Compacting conversation yet")
    assert names(m.feed(b"> please do not start Compacting conversation yet\n")) == ["raw"]
    m.expect_echo("one more line")
    # not echo (not in the injected text): matched although echo is expected
    assert names(m.feed(b"! Compacting conversation forced\n")) == ["compacting", "raw"]


def test_echo_partial_line_is_not_reported_by_check_partial() -> None:
    m = LineMatcher([Rule("limit", LIMIT.pattern, partial=True)])
    m.expect_echo("explain Context limit reached errors")
    m.feed(b"> explain Context limit reached")
    assert m.check_partial() == []
    assert m.feed(b" errors\r\n") == []


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_tui_argv_echo_and_its_redraws_are_not_hits(name: str) -> None:
    """The captures show the argv prompt, then redraw it while the agent works."""
    echo_rule = Rule("echo", re.compile("cache layer"))
    m = LineMatcher([*PACK, echo_rule])
    m.expect_echo("Refactor the cache layer. Next action: replace the redis calls.")
    data = (FIXTURES / name).read_bytes()
    hits: list[Hit] = []
    for i in range(0, len(data), 4096):  # as the session reads: check_partial after each
        hits += m.feed(data[i : i + 4096])
        hits += m.check_partial()
    hits += m.flush()
    assert sorted(names(hits)) == sorted(EXPECTED[name])
    # without the echo expectation the prompt line would hit
    assert "echo" in names(run([data], [echo_rule]))


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        ("Compacting conversation", "Compacting conversation"),
        (r"^\s*Compacting", "Compacting"),
        (r"Context low \([0-9]+% remaining\)", "Context low ("),
        (r"(?:limit reached|hit your limit)\b.*?\b(?:reset at|resets)\s+(?P<u>\d+)", "reset"),
        (r"usage limit reached\|(?P<until>\d{10,13})", "usage limit reached|"),
        (r"foo\bbar", "foobar"),  # zero-width: the literals are adjacent in a match
        (r"(?P<n>hello) world", "hello world"),  # a plain group is part of the run
        (r"x(?:abc|abd)y", "xab"),  # the parser moves a common prefix out of a branch
        (r"ab?cde", "cde"),  # an optional character ends a run
        (r"a(bcd)+e", "bcd"),  # a repeat's body is in every match, but not adjacent
        (r"(?i:abc)defg", "defg"),  # case-insensitive parts never count
        (r"(?i)Compacting", None),
        (r"ab|cd", None),  # a top-level branch
        (r"abc{0,2}", None),  # "ab" is too short
        (r"a.b", None),
        (r"(?=abc)", None),  # lookarounds match no characters
    ],
)
def test_required_literal(pattern: str, literal: str | None) -> None:
    assert required_literal(re.compile(pattern)) == literal


def test_literal_prefilter_keeps_hits_split_by_escapes() -> None:
    # The literal is looked for after the rewrite, so escapes inside it do not hide it.
    hits = run([b"\x1b[1mCompact\x1b[0ming conver", b"sation\r\n"])
    assert names(hits) == ["compacting"]
