"""The screen model against pyte, the reference terminal emulator, and the
bulk path for plain lines against drawing them one by one."""

from __future__ import annotations

import itertools
import re

import pyte
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentd.terminal import matcher
from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Rule

COLS, ROWS = 12, 5

# The subset both emulators support and agree on. Left out, each for a pyte
# difference: scrolling margins, SU/SD, HPA, NEL and the alternate screen
# (pyte lacks them or does otherwise), cursor save/restore (pyte keeps a
# stack, xterm one position), combining marks after a full row,
# charsets, modes that change drawing (IRM, LNM, DECAWM, DECOM, DECCOLM),
# C0/C1 controls pyte draws, DCS strings, invalid UTF-8.
CHARS = st.sampled_from([*"abc xyz.:", "é", "…", "─", "\u00a0", "中", "文", "🎉"])
MARKS = st.sampled_from(["\u0301", "\t", "\x1b[K", "\x1b[2K\r"])  # for the bulk only
TEXT = st.text(alphabet=CHARS, min_size=1, max_size=14)
COUNT = st.integers(min_value=0, max_value=14).map(lambda n: str(n) if n else "")
CONTROLS = st.one_of(
    st.sampled_from(["\r", "\n", "\r\n", "\r\n", "\x0b", "\x0c", "\x08", "\t", "\r\r\n"]),
    st.builds(lambda n, f: f"\x1b[{n}{f}", COUNT, st.sampled_from("ABCDEFGadePX@LM")),
    st.builds(lambda a, b: f"\x1b[{a};{b}H", COUNT, COUNT),
    st.builds(lambda a, b: f"\x1b[{a};{b}f", COUNT, COUNT),
    st.sampled_from(["\x1b[J", "\x1b[1J", "\x1b[2J", "\x1b[3J", "\x1b[K", "\x1b[1K", "\x1b[2K"]),
    st.sampled_from(["\x1bD", "\x1bM", "\x1bc"]),
    st.sampled_from(["\x1b[1;31m", "\x1b[0m", "\x1b[?25l", "\x1b[?2004h", "\x1b]0;title\x07"]),
)
# Plain lines too: at the bottom of the screen they go through the bulk path.
LINES = st.lists(st.text(alphabet=CHARS, max_size=20), min_size=1, max_size=12).map(
    lambda lines: "".join(line + "\r\n" for line in lines)
)
STREAM = st.lists(st.one_of(TEXT, CONTROLS, LINES), max_size=30).map("".join)


class DenseScreen(pyte.Screen):
    """pyte's screen, but insert and delete lines move every row: pyte keeps
    rows in a dict and skips the ones never drawn on (a row deleted below an
    untouched one stays)."""

    def insert_lines(self, count: int | None = None) -> None:
        for y in range(self.lines):
            self.buffer[y]
        super().insert_lines(count)

    def delete_lines(self, count: int | None = None) -> None:
        for y in range(self.lines):
            self.buffer[y]
        super().delete_lines(count)

    def set_mode(self, *modes: int, **kwargs: bool) -> None:
        if not self._alternate(modes, kwargs, on=True):
            super().set_mode(*modes, **kwargs)

    def reset_mode(self, *modes: int, **kwargs: bool) -> None:
        if not self._alternate(modes, kwargs, on=False):
            super().reset_mode(*modes, **kwargs)

    def _alternate(self, modes: tuple[int, ...], kwargs: dict[str, bool], *, on: bool) -> bool:
        """pyte 0.8 ignores the alternate screen (?1049, ?1047, ?47); a terminal switches
        to a blank one (and ?1049 saves the cursor, restored when it leaves)."""
        if not kwargs.get("private") or not set(modes) & {1049, 1047, 47}:
            return False
        if on and 1049 in modes:
            self.save_cursor()
        self.erase_in_display(2)
        if not on and 1049 in modes:
            self.restore_cursor()
        return True


def pyte_rows(data: bytes, cols: int = COLS, rows: int = ROWS) -> tuple[list[str], tuple]:
    screen = DenseScreen(cols, rows)
    pyte.ByteStream(screen).feed(data)
    return shown(screen), (screen.cursor.y, screen.cursor.x)


def shown(screen: pyte.Screen) -> list[str]:
    """The rows, right-trimmed, from the cells themselves: pyte's ``display``
    hides the cell after a wide character even when it was written over."""
    cols = range(screen.columns)
    return ["".join(screen.buffer[y][x].data for x in cols).rstrip() for y in range(screen.lines)]


def model_rows(chunks: list[bytes], cols: int = COLS, rows: int = ROWS) -> tuple[list[str], tuple]:
    m = LineMatcher(cols=cols, rows=rows)
    for chunk in chunks:
        m.feed(chunk)
    return m.display(), m.cursor


def cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(stream=STREAM, cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=6))
def test_rows_equal_pyte(stream: str, cuts: list[int]) -> None:
    data = stream.encode()
    assert model_rows(cut(data, cuts)) == pyte_rows(data)


@pytest.mark.parametrize("name", ["tui", "captured"])
def test_real_captures_equal_pyte_byte_by_byte(name: str) -> None:
    from tests.support import FIXTURES

    for path in sorted((FIXTURES.parent / name).glob("*.raw")):
        data = path.read_bytes()
        m = LineMatcher()
        screen = DenseScreen(120, 40)
        stream = pyte.ByteStream(screen)
        for i in range(0, len(data), 97):
            m.feed(data[i : i + 97])
            stream.feed(data[i : i + 97])
            expected = (shown(screen), (screen.cursor.y, screen.cursor.x))
            assert (m.display(), m.cursor) == expected, (path, i)


RULES = (
    Rule("compacting", re.compile("Compacting conversation")),
    Rule("ab", re.compile("ab")),
    Rule("line", re.compile(r"^(?P<all>\w+)$")),  # named group: only final lines
)


def hits(chunks: list[bytes]) -> tuple[list[tuple], list[str], int]:
    m = LineMatcher(RULES, cols=COLS, rows=ROWS)
    found = []
    for chunk in chunks:
        found += [(h.rule.name, h.line, h.groups) for h in m.feed(chunk)]
    display = m.display()
    found += [(h.rule.name, h.line, h.groups) for h in m.flush()]
    return found, display, m.tokens


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(
        st.one_of(STREAM, MARKS, st.just("Compacting conversation"), st.just("ab\r\n")),
        max_size=8,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=6),
)
def test_bulk_draws_and_matches_as_drawing_line_by_line(pieces: list[str], cuts: list[int]):
    chunks = cut("".join(pieces).encode(), cuts)
    with_bulk = hits(chunks)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matcher, "can_scroll", lambda screen: False)
        assert hits(chunks) == with_bulk
