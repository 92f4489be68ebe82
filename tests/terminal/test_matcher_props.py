"""Chunking invariance of the line matcher: any split gives the same hits."""

from __future__ import annotations

import itertools
import re
from collections import Counter

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from agentd.terminal import rules
from agentd.terminal.ansi import rewrite, strip_ansi
from agentd.terminal.matcher import LineMatcher
from agentd.terminal.regexlit import required_literal, required_literals
from agentd.terminal.rules import Rule

# Rules with named groups are matched when a line is final (its text about to
# change, or left by the cursor): at points of the stream, not of its cutting,
# so their hits are the same in any chunking, to the line.
FINAL_RULES = (
    Rule("limit", re.compile(r"usage limit reached.*reset at (?P<until>\S+)")),
    Rule("prompt", re.compile(r"^\s*(?P<q>Continue)\? $")),  # anchored: searched per block
    Rule("bare", re.compile(r"(?<!\w)(?P<w>Compacting)")),  # negative lookbehind: per line
    Rule("cjk-final", re.compile("(?P<c>上下文)")),
    Rule("short", re.compile(r"^(?P<s>.{1,6})$")),  # sees where a long line is cut
)
# Rules without: matched as soon as drawn, so a hit may come in an earlier
# chunk, on the line as drawn so far; which ones fire does not change.
DRAWN_RULES = (
    Rule("compacting", re.compile("Compacting conversation")),
    Rule("cjk", re.compile("上下文")),
)
RULES = FINAL_RULES + DRAWN_RULES

SENTINELS = [
    "Compacting conversation",
    "Compacting conversation…",
    "usage limit reached. It will reset at 3pm",
    "Continue? ",
    "上下文已满",
]
ESCAPES = [
    "\x1b[0m",
    "\x1b[1;31m",
    "\x1b[38;2;255;0;0m",
    "\x1b[K",
    "\x1b[2K",
    "\x1b[J",
    "\x1b[3A",
    "\x1b[1B",
    "\x1b[12;40H",
    "\x1b[5C",
    "\x1b[9G",
    "\x1b[2D",
    "\x1b[?2004h",
    "\x1b[?25l",
    "\x1b[>0q",
    "\x1b]0;✳ Claude Code\x07",
    "\x1b]0;title\x1b\\",
    "\x1b]8;;http://x.test/\x1b\\",
    "\x1bPq#0;2\x1b\\",
    "\x1b7",
    "\x1b8",
    "\x1b(B",
    "\x1bM",
    "\x1b",  # a lone ESC
    "\x1b[",  # a broken CSI
    "\r",
    "\n",
    "\r\n",
    "\t",
    "\x08",
    "\x07",
]
COMBINING = "\u0301".encode()
TEXT = st.text(
    alphabet=st.sampled_from([*"abc xyz.:?-_", "中", "文", "…", "─", "🎉", "é", "\u0301", "\xa0"]),
    max_size=12,
)
BAD_UTF8 = st.sampled_from([b"\xff", b"\xe2\x82", b"\xc2", b"\xed\xa0\x80", b"\xf0\x9f"])

PIECE = st.one_of(
    TEXT.map(str.encode),
    st.sampled_from(SENTINELS).map(str.encode),
    st.sampled_from(ESCAPES).map(str.encode),
    st.builds(
        lambda p, f: f"\x1b[{p}{f}".encode(),
        st.text(alphabet="0123456789;?>", max_size=4),
        st.sampled_from("mABCDGHJKfhlqr@~`"),
    ),
    BAD_UTF8,
)


def hits_of(chunks: list[bytes], max_line_chars: int) -> tuple[list[tuple], Counter, int]:
    m = LineMatcher(RULES, max_line_chars=max_line_chars, cols=30, rows=6)
    hits = []
    for chunk in chunks:
        hits += m.feed(chunk)
    hits += m.flush()
    final = [(h.rule.name, h.line, h.groups) for h in hits if h.rule.has_groups]
    drawn = Counter(h.rule.name for h in hits if not h.rule.has_groups)
    return final, drawn, m.tokens


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(PIECE, max_size=40),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
    max_line_chars=st.sampled_from([65536, 30, 6]),
)
# Two combining marks after a character, in the next read: the one that composes
# is kept, as when all come in one read (a hypothesis find).
@example(pieces=[b"a", "\u0301\u0301".encode()], cuts=[1], max_line_chars=65536)
def test_any_chunking_gives_the_same_hits(
    pieces: list[bytes], cuts: list[int], max_line_chars: int
) -> None:
    stream = b"".join(pieces)
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    chunks = [stream[a:b] for a, b in itertools.pairwise(points)]
    final, drawn, tokens = hits_of(chunks, max_line_chars)
    assert (final, tokens) == hits_of([stream], max_line_chars)[::2]
    if drawn_holds(stream, max_line_chars):
        assert drawn == hits_of([stream], max_line_chars)[1]


def drawn_holds(stream: bytes, max_line_chars: int) -> bool:
    """Drawn so far, a line can lose what matched: a combining mark composes
    with its last character, or, past ``max_line_chars``, its start goes."""
    return max_line_chars == 65536 and COMBINING not in stream


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(PIECE, max_size=40))
# A row drawn with a sentinel wraps into a row below whose line fired it: the
# row's own draw must fire whether or not a feed ended before the wrap (CI).
@example(
    pieces=[
        b"\x1b[2f",
        b":",
        b"::::",
        ":::::::中中中".encode(),
        b"Compacting conversation",
        b"Compacting conversation",
        b"\x1b[3A",
        b"Compacting conversation",
        ":中:".encode(),
    ]
)
# A CSI cut short by an ESC whose own sequence is held back for the next read:
# gone, as when both come in one read (a hypothesis find).
@example(pieces=[b"\x1b[", b":", b"\x1b[0m"])
def test_byte_by_byte_equals_whole(pieces: list[bytes]) -> None:
    stream = b"".join(pieces)
    singles = [stream[i : i + 1] for i in range(len(stream))]
    final, drawn, tokens = hits_of(singles, 65536)
    assert (final, tokens) == hits_of([stream], 65536)[::2]
    if drawn_holds(stream, 65536):
        assert drawn == hits_of([stream], 65536)[1]


# --- plain lines: the matcher against a reference (re.search per line) --------------
PLAIN_LINE = st.one_of(
    st.text(alphabet=st.sampled_from([*"abc xyz.:?-_", "中", "文", "…", "─", "é"]), max_size=30),
    st.sampled_from(SENTINELS),
    st.builds("{} {}".format, st.sampled_from(["", "x", "中"]), st.sampled_from(SENTINELS)),
)


def reference_hits(lines: list[str]) -> tuple[Counter, Counter]:
    """What a matcher must report for plain lines (no escapes, none wider than
    the screen): each non-empty line searched once per rule, a hit per match."""
    final, drawn = Counter(), Counter()
    for line in lines:
        for rule in RULES:
            if line and (m := rule.pattern.search(line)):
                if rule.has_groups:
                    final[rule.name, line, tuple(sorted(m.groupdict().items()))] += 1
                else:
                    drawn[rule.name] += 1
    return final, drawn


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(lines=st.lists(PLAIN_LINE, max_size=30), cut=st.integers(min_value=0, max_value=2000))
def test_plain_lines_hit_as_a_per_line_search_says(lines: list[str], cut: int) -> None:
    # CR LF, as a pty (ONLCR) hands lines over: a bare LF keeps the column
    stream = "".join(line + "\r\n" for line in lines).encode()
    cut %= len(stream) + 1
    m = LineMatcher(RULES, cols=80, rows=6)  # lines scroll; none wraps
    hits = m.feed(stream[:cut]) + m.feed(stream[cut:]) + m.flush()
    final = Counter(
        (h.rule.name, h.line, tuple(sorted(h.groups.items()))) for h in hits if h.rule.has_groups
    )
    drawn = Counter(h.rule.name for h in hits if not h.rule.has_groups)
    assert (final, drawn) == reference_hits(lines)


# --- the rewrite equals a plain one-pass reading of the escape grammar -------
BREAK_FINALS, SPACE_FINALS = set("ABEFHJKLMSTdef"), set("CDGIZ`a")


def _run(text: str, i: int, lo: str, hi: str, most: int) -> int:
    """Index after at most ``most`` chars of ``text[i:]`` in ``lo..hi``."""
    j = i
    while j < len(text) and j - i < most and lo <= text[j] <= hi:
        j += 1
    return j


def _escape(text: str, i: int) -> tuple[str, int]:
    """What the sequence at ``text[i] == ESC`` shows, and where it ends."""
    n, j = len(text), i + 1
    if j < n and text[j] == "[":  # CSI: params, intermediates, final
        k = _run(text, _run(text, j + 1, "0", "?", 64), " ", "/", 16)
        if k < n and "@" <= text[k] <= "~":
            final = text[k]
            return ("\n" if final in BREAK_FINALS else " " if final in SPACE_FINALS else ""), k + 1
    if j < n and text[j] in "]PX^_":  # OSC, DCS, SOS, PM, APC: up to BEL/CAN/SUB/ESC
        k = j + 1
        while k < n and text[k] not in "\x07\x18\x1a\x1b":
            k += 1
        return "", k + (k < n and text[k] == "\x07")
    k = _run(text, j, " ", "/", 8)  # ESC, intermediates, final
    if k < n and "0" <= text[k] <= "~":
        return ("\n" if text[j : k + 1] in ("D", "E", "M") else ""), k + 1
    return "", j  # a lone ESC


def reference(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\x1b":
            shown, i = _escape(text, i)
            out.append(shown)
            continue
        if c in "\r\n\x0b\x0c":
            out.append("\n")
        elif c == "\t":
            out.append(" ")
        elif not (c < "\x09" or "\x0e" <= c <= "\x1f" or "\x7f" <= c <= "\x9f"):
            out.append(c)
        i += 1
    return "".join(out)


GRAMMAR = list("\x1b\x1b\x1b[[]]P\\_X^0123;?> !/(#ABCDGHJKMmfdqr@~`abz\x07\x18\r\n\t\x08\x85中é")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(GRAMMAR), max_size=40))
def test_rewrite_follows_the_grammar(text: str) -> None:
    assert rewrite(text) == reference(text)
    assert strip_ansi(text) == [line for line in reference(text).split("\n") if line]


def test_rewrite_bounds() -> None:
    for text in [
        "\x1b[" + "1" * 64 + "m",
        "\x1b[" + "1" * 65 + "m",
        "\x1b[1" + " " * 16 + "m",
        "\x1b[" + " " * 17 + "m",
        "\x1b" + "(" * 8 + "B",
        "\x1b" + "(" * 9 + "B",
    ]:
        assert rewrite(text) == reference(text)


# --- the literal pre-filter -------------------------------------------------------------
# Patterns built from pieces that may or may not force characters into a match.
PATTERN_PIECE = st.sampled_from(
    [
        "ab",
        "abc",
        "bca",
        "c",
        " ",
        "a?",
        "b*",
        "(?:ab|ac)",
        "(?:abc|b)",
        "(abc)",
        "(?:ba)+",
        "(?P<g>cab)",
        "[ab]",
        ".",
        ".*?",
        r"\b",
        "^",
        "$",
        "(?i:abc)",
        "a{2}",
        "(?:bc){0,2}",
        "(?=ab)",
        "(?!c)",
        r"\s*",
        "[^a]",
    ]
)
SUBJECT = st.text(alphabet="abcABC \n", max_size=40)


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(pieces=st.lists(PATTERN_PIECE, min_size=1, max_size=6), subject=SUBJECT)
def test_every_match_contains_the_required_literal(pieces: list[str], subject: str) -> None:
    try:
        pattern = re.compile("".join(pieces), re.MULTILINE)
    except re.error:  # e.g. a group name used twice
        assume(False)
    literal = required_literal(pattern)
    if literal is None:
        return
    for m in pattern.finditer(subject):
        assert literal in m.group(0), (pattern.pattern, subject)


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(
    branches=st.lists(st.lists(PATTERN_PIECE, min_size=1, max_size=4), min_size=1, max_size=4),
    group=st.sampled_from(["{}", "(?:{})", "({})"]),
    subject=SUBJECT,
)
def test_every_match_of_an_alternation_contains_one_of_its_literals(
    branches: list[list[str]], group: str, subject: str
) -> None:
    try:
        pattern = re.compile(group.format("|".join("".join(b) for b in branches)), re.MULTILINE)
    except re.error:
        assume(False)
    literals = required_literals(pattern)
    if literals is None:
        return
    for m in pattern.finditer(subject):
        assert any(lit in m.group(0) for lit in literals), (pattern.pattern, subject)


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(PIECE, max_size=40), cut=st.integers(min_value=0, max_value=2000))
def test_the_literal_prefilter_changes_no_hit(pieces: list[bytes], cut: int) -> None:
    stream = b"".join(pieces)
    cut %= len(stream) + 1
    chunks = [stream[:cut], stream[cut:]]
    with_filter = hits_of(chunks, 65536)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rules, "required_literals", lambda _pattern: None)
        assert hits_of(chunks, 65536) == with_filter
