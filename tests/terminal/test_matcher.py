"""The line matcher: real TUI captures, first-draw matching, bounds, echo."""

from __future__ import annotations

import itertools
import random
import re
import tracemalloc
from pathlib import Path

import pytest

from agentd.config.presets import load_cli_preset
from agentd.terminal.ansi import strip_ansi
from agentd.terminal.matcher import PARTIAL_MAX, LineMatcher
from agentd.terminal.regexlit import required_literal, required_literals
from agentd.terminal.rules import Hit, Rule, RuleSet
from tests.support import FIXTURES, LOCAL_FIXTURES

CAPTURED = LOCAL_FIXTURES / "captured"

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
    """What a person reads of a transcript (agentctl): lines, escapes gone."""
    assert strip_ansi(raw) == lines


CAPTURES = {
    FIXTURES / "claude-code-2.1.197-autocompact.raw": ["compacting", "compacted"],
    FIXTURES / "claude-code-2.1.332-autocompact.raw": ["compacting", "compacted"],
    FIXTURES / "claude-code-2.1.197-context-limit.raw": ["limit"],
    CAPTURED / "claude-code-2.1.197-precompact-hook-redraw.raw": ["compacting", "compacted"],
}
PRESET_EXPECTED = {"compacting": "compacting", "compacted": "compacted", "limit": "context-limit"}


def preset_rules(name: str = "claude-code") -> list[Rule]:
    sentinels = load_cli_preset(name)["sentinels"]
    return [Rule(s["name"], re.compile(s["match"]), s["action"]) for s in sentinels]


@pytest.mark.parametrize("path", sorted(CAPTURES), ids=lambda p: p.name)
@pytest.mark.parametrize("chunk", [1, 7, 100, 4096, 1 << 20])
def test_real_tui_captures(path: Path, chunk: int) -> None:
    data = path.read_bytes()
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    assert names(run(chunks)) == CAPTURES[path]
    # the claude-code preset's own sentinels, as a session runs them
    assert names(run(chunks, preset_rules())) == [PRESET_EXPECTED[n] for n in CAPTURES[path]]


def test_fixture_lines_read_as_on_screen() -> None:
    """A hit's line is its row as the terminal showed it when it fired: what
    the TUI drew there, and cells left from before that it erases next."""
    data = (FIXTURES / "claude-code-2.1.197-autocompact.raw").read_bytes()
    hits = run([data])
    assert hits[0].line == "* Compacting conversation… (0s · ↑ 2 tokens)"
    assert hits[1].line.startswith("✻ Conversation compacted (ctrl+o for history)")
    data = (CAPTURED / "claude-code-2.1.197-precompact-hook-redraw.raw").read_bytes()
    # drawn over "Running PreCompact hooks…", only the cells that differ
    assert run([data])[0].line == "* Compacting conversation… (11s · · ↑ 23 tokens)"


def completed_at(data: bytes, text: str) -> int:
    """How many bytes of ``data`` it takes for ``text`` to show on a row, as
    pyte, the reference emulator, draws it."""
    import pyte

    screen = pyte.Screen(120, 40)
    stream = pyte.ByteStream(screen)
    for i in range(len(data)):
        screen.dirty.clear()
        stream.feed(data[i : i + 1])
        for y in screen.dirty:
            if text in "".join(screen.buffer[y][x].data for x in range(screen.columns)):
                return i + 1
    raise AssertionError(f"{text!r} never shows")


@pytest.mark.parametrize("path", sorted(CAPTURES), ids=lambda p: p.name)
def test_sentinels_fire_on_the_first_draw(path: Path) -> None:
    """Cut anywhere, a sentinel fires with the chunk that completes its text
    on screen: no byte later (a spinner row is redrawn in place, never ended)."""
    data = path.read_bytes()
    rule, text = {
        "limit": (LIMIT, "Context limit reached"),
        "compacting": (COMPACTING, "Compacting conversation"),
    }[CAPTURES[path][0]]
    done = completed_at(data, text)
    rng = random.Random(path.name)
    for _ in range(40):
        cuts = sorted(rng.sample(range(1, len(data)), rng.randint(1, 60)))
        m = LineMatcher([rule])
        for a, b in itertools.pairwise([0, *cuts, len(data)]):
            if m.feed(data[a:b]):
                assert a < done <= b, f"fired with bytes {a}..{b}, text complete at {done}"
                break
        else:
            raise AssertionError("never fired")


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
    data = b"Conversation compacted\r\nx\r\nCompacting conversation; Conversation compacted\r\n"
    assert names(run([data])) == ["compacted", "compacting", "compacted"]


def test_rules_that_must_be_matched_line_by_line() -> None:
    start = Rule("start", re.compile(r"\AError"))
    not_after_space = Rule("bare", re.compile(r"(?<!\s)Error"))
    hits = run([b"Error one\r\n  Error two\r\nError three\r\n"], [start, not_after_space])
    assert [(h.rule.name, h.line) for h in hits] == [
        ("start", "Error one"),
        ("bare", "Error one"),
        ("start", "Error three"),
        ("bare", "Error three"),
    ]


def test_anchors_mean_line_ends() -> None:
    rule = Rule("prompt", re.compile(r"^\s*Continue\?$"))
    assert [h.line for h in run([b"x Continue?\r\nContinue?\r\n  Continue?\r\n"], [rule])] == [
        "Continue?",
        "  Continue?",
    ]


def test_rules_change_between_feeds() -> None:
    m = LineMatcher([COMPACTING])
    assert names(m.feed(b"Compacting conversation\r\n")) == ["compacting"]
    m.add_rule(Rule("ready", re.compile(r"^> $"), action="inject"))
    m.remove_rule("compacting")
    assert names(m.feed(b"Compacting conversation\r\n> \r\n")) == ["ready"]
    m.add_rule(Rule("ready", re.compile("Compacting")))  # same name replaces
    assert [r.name for r in m.rules] == ["ready"]
    assert names(m.feed(b"Compacting\r\n> \r\n")) == ["ready"]
    m.remove_rule("nonexistent")


def test_a_sentinel_fires_as_soon_as_its_text_is_on_screen() -> None:
    m = LineMatcher(PACK)
    assert names(m.feed(b"\x1b[97m*\x1b[3GCompacting conver")) == []
    assert names(m.feed(b"sation\xe2\x80\xa6 (0s)")) == ["compacting"]  # no line end needed
    assert m.feed(b"\r\n") == []  # reported once for the line


def test_a_spinner_redrawn_in_place_fires_once_and_again_for_a_new_occurrence() -> None:
    m = LineMatcher(PACK)
    assert names(m.feed(b"* Compacting conversation\xe2\x80\xa6 (0s)")) == ["compacting"]
    assert m.feed(b"\r* Compacting conversation\xe2\x80\xa6 (1s)") == []  # repainted
    assert m.feed(b"\x1b[29G2") == []  # only the cell that changed
    assert m.feed(b"\r\x1b[2K* Compacting conversation\xe2\x80\xa6 (3s)") == []  # erased, redrawn
    # the row shows something else, then the sentinel again: a new occurrence
    assert m.feed(b"\r\x1b[2K* Thinking\xe2\x80\xa6\r\n") == []
    assert names(m.feed(b"\x1b[A\r* Compacting conversation\xe2\x80\xa6")) == ["compacting"]


def test_a_rule_with_groups_fires_again_when_a_redraw_changes_what_they_hold() -> None:
    """Codex 0.171.0's footer is always drawn, `100% context left` at first; as usage
    grows it writes only the cells that change (`  8`): the hit with the new figure
    is what a handoff waits for. The same figure redrawn is no new hit."""
    left = Rule("handoff", re.compile(r"(?P<left>\d{1,3})% context left"), action="handoff")
    m = LineMatcher([left])
    footer = b"  ? for shortcuts\x1b[40;102H100%\x1b[40;107Hcontext\x1b[40;115Hleft\x1b[1;1H"
    assert [h.groups for h in m.feed(b"\x1b[40;1H" + footer)] == [{"left": "100"}]
    assert [h.groups for h in m.feed(b"\x1b[40;102H  8\x1b[1;1H")] == [{"left": "8"}]
    assert m.feed(b"\x1b[40;102H  8\x1b[1;1H") == []


def test_a_row_redrawn_over_other_text_cell_by_cell() -> None:
    """Ink redraws only the cells that differ: here over "Running PreCompact
    hooks…", as in tests/fixtures/captured (no space is written, letters that
    are already in place are skipped)."""
    m = LineMatcher(PACK)
    assert m.feed(b"* Running PreCompact hooks\xe2\x80\xa6 (10s)\r\n\x1b[A") == []
    redraw = b"\x1b[2CCompacting c\x1b[16Gnversati\x1b[25Gn\xe2\x80\xa6 (11s)"
    hits = m.feed(redraw)
    assert names(hits) == ["compacting"]
    assert hits[0].line == "* Compacting conversation\u2026 (11s))"  # and a cell left over


def test_prompt_rules_fire_when_drawn_and_check_partial_also_reads_groups() -> None:
    prompt = Rule(
        "prompt", re.compile(r"Continue\? $"), action="inject", echo_check=False, partial=True
    )
    answered = Rule("answered", re.compile(r"Continue\? y"))
    m = LineMatcher([prompt, answered])
    assert names(m.feed(b"\x1b[1mContinue?\x1b[0m ")) == ["prompt"]  # on screen: fires
    assert m.check_partial() == []  # reported once per line
    m.add_rule(Rule("other", re.compile("zzz")))
    assert m.check_partial() == []
    assert names(m.feed(b"y\r\n")) == ["answered"]
    assert names(m.feed(b"Continue? \r\n")) == ["prompt"]  # a new line hits again
    # named groups wait for the line to be final; check_partial reads them now
    asked = Rule("asked", re.compile(r"(?P<what>\w+)\? $"), echo_check=False, partial=True)
    m = LineMatcher([asked])
    assert m.feed(b"Continue? ") == []
    assert [(h.rule.name, h.groups) for h in m.check_partial()] == [("asked", {"what": "Continue"})]
    assert m.feed(b"\r\n") == []


def test_check_partial_looks_again_only_when_the_line_or_the_rules_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Called after every read: a prompt that waits on screen is searched once, not at
    every call, until a rule is added (which may match it)."""
    searches: list[str] = []
    line_hits = RuleSet.line_hits

    def counted(self: RuleSet, text: str, **kw: bool) -> list[Hit]:
        if kw.get("partial_only"):
            searches.append(text)
        return line_hits(self, text, **kw)

    monkeypatch.setattr(RuleSet, "line_hits", counted)
    asked = Rule("asked", re.compile(r"(?P<what>\w+)\? $"), echo_check=False, partial=True)
    m = LineMatcher([asked])
    assert m.feed(b"Continue? ") == []
    assert names(m.check_partial()) == ["asked"]
    for _ in range(5):
        assert m.check_partial() == []
    assert searches == ["Continue? "]
    m.add_rule(Rule("sure", re.compile(r"Continue\? $"), echo_check=False, partial=True))
    assert names(m.check_partial()) == ["sure"]
    assert m.check_partial() == []
    assert searches == ["Continue? ", "Continue? "]


def test_check_partial_reads_a_prompt_of_exactly_the_longest_length() -> None:
    prompt = b"x" * (PARTIAL_MAX - len("Continue? ")) + b"Continue? "
    m = LineMatcher([Rule("asked", re.compile(r"(?P<what>\w+)\? $"), partial=True)])
    assert m.feed(prompt) == []  # named groups: it waits for the line to be final
    assert names(m.check_partial()) == ["asked"]  # PARTIAL_MAX characters: still a prompt


def test_check_partial_reports_no_rule_but_the_prompt_rules() -> None:
    usage = Rule("usage", re.compile(r"usage limit reached, reset at (?P<at>\S+)"))
    m = LineMatcher([usage, Rule("asked", re.compile(r"\? $"), partial=True)])
    assert m.feed(b"usage limit reached, reset at 3pm") == []
    assert m.check_partial() == []  # not a prompt rule: waits for its line to end
    assert [h.groups["at"] for h in m.feed(b"\r\n")] == ["3pm"]


def test_the_token_estimate_does_not_depend_on_how_the_reads_were_cut() -> None:
    text = "中文的输出 and some words\r\n再来一行\r\n".encode()
    whole = LineMatcher()
    whole.feed(text)
    for cut in (3, 9, 20, len(text) - 4):
        parts = LineMatcher()
        parts.feed(text[:cut])
        parts.feed(text[cut:])
        assert parts.tokens == whole.tokens, cut
    assert whole.tokens >= 8  # each CJK character about a token


def test_check_partial_ignores_a_long_line() -> None:
    rule = Rule("compacting", re.compile("(?P<what>Compacting) conversation"), partial=True)
    m = LineMatcher([rule])
    assert m.feed(b"Compacting conversation" + b"." * PARTIAL_MAX) == []
    assert m.check_partial() == []  # no prompt is that long
    assert names(m.feed(b"\r\n")) == ["compacting"]  # final when the cursor leaves it


@pytest.mark.parametrize("cut", [b"reset at 3", b"reset at", b"reset at 3p", b"reset at 3pm"])
def test_a_rule_with_named_groups_waits_for_its_line_to_be_final(cut: bytes) -> None:
    """`reset at 3` is never taken for `reset at 3pm`, however the line is cut."""
    usage = Rule("usage", re.compile(r"reset at (?P<until>[^.]+)"))
    m = LineMatcher([usage])
    line = b"usage limit reached, reset at 3pm (Europe/Berlin)."
    assert m.feed(b"usage limit reached, " + cut) == []
    assert m.check_partial() == []  # not a prompt rule
    assert m.feed(line[len(b"usage limit reached, " + cut) :]) == []  # still the cursor's line
    hits = m.feed(b"\r\n")
    assert [h.groups["until"] for h in hits] == ["3pm (Europe/Berlin)"]


def test_flush_ends_the_line_under_the_cursor() -> None:
    m = LineMatcher(PACK)
    assert names(m.feed(b"Context limit reached \xc2")) == ["limit"]  # drawn: fired
    assert m.flush() == []
    usage = Rule("usage", re.compile(r"reset at (?P<until>\S+)"))
    m = LineMatcher([usage])
    assert m.feed(b"usage limit reached, reset at 3pm") == []
    assert [h.groups for h in m.flush()] == [{"until": "3pm"}]
    assert m.flush() == []


def test_tokens_and_bytes_in() -> None:
    m = LineMatcher()
    m.feed("中文".encode() + b"\x1b[31mabcd\x1b[0m\r\n")
    m.feed(b"efgh")
    assert m.bytes_in == len("中文".encode()) + 15 + 4
    assert m.tokens == 2 + 2  # 2 CJK chars + 8 other chars / 4


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_huge_line_is_fed_and_checked_block_by_block() -> None:
    # 20 MB in one line, looked at after every block as a session does: ~0.1 s. Its
    # time is not asserted here (scripts/bench.py's business); quadratic re-joining
    # of the line would take minutes, and the suite's timeout would end the test.
    m = LineMatcher(PACK)
    block = b"x" * 65536
    for _ in range(20 * 16):
        assert m.feed(block) == []
        assert m.check_partial() == []
    assert names(m.feed(b"Context limit reached\n")) == ["limit"]
    assert m.bytes_in == 20 * 16 * 65536 + len(b"Context limit reached\n")


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


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("claude-code-*.raw")), ids=lambda p: p.name)
@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_real_tui_argv_echo_and_its_redraws_are_not_hits(path: Path, chunk: int) -> None:
    """The captures show the argv prompt, then redraw it while the agent works.
    Drawn a few characters a chunk, its row is matched again and again as it
    grows: the injected text it shows is consumed once."""
    echo_rule = Rule("echo", re.compile("cache layer"))
    m = LineMatcher([*PACK, echo_rule])
    m.expect_echo("Refactor the cache layer. Next action: replace the redis calls.")
    data = path.read_bytes()
    hits: list[Hit] = []
    for i in range(0, len(data), chunk):  # as the session reads: check_partial after each
        hits += m.feed(data[i : i + chunk])
        hits += m.check_partial()
    hits += m.flush()
    assert sorted(names(hits)) == sorted(CAPTURES[path])
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


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        ("Compacting conversation", ("Compacting conversation",)),
        # the claude-code preset's handoff rule: one literal a branch
        (
            r"(?P<left>\d{1,3})% until auto-compac|Context left until auto-compact: "
            r"(?P<left_old>\d{1,3})%|Context low \((?P<left_low>\d{1,3})% remaining\)",
            ("% until auto-compac", "Context left until auto-compact: ", "Context low ("),
        ),
        (r"(?:abc|xyz)", ("abc", "xyz")),
        (r"(abc|xyz)", ("abc", "xyz")),
        (r"abc|x", None),  # a branch without a literal: no pre-filter
        (r"ab|cd", None),
        (r"(?i:abc|def)", None),
        (r"(?:abc|def)x", ("abcx", "defx")),  # one alternation inside: each branch in place
        (
            r"Context compacted|Compact task completed",
            ("Context compacted", "Compact task completed"),
        ),
        (r"(?:ab|cd)x(?:ef|gh)", None),  # two alternations: not taken apart
    ],
)
def test_required_literals(pattern: str, literals: tuple[str, ...] | None) -> None:
    assert required_literals(re.compile(pattern)) == literals


def test_literal_prefilter_keeps_hits_split_by_escapes() -> None:
    # The literal is looked for after the rewrite, so escapes inside it do not hide it.
    hits = run([b"\x1b[1mCompact\x1b[0ming conver", b"sation\r\n"])
    assert names(hits) == ["compacting"]
