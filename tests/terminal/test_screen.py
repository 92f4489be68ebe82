"""The screen model, control by control: what the rows show and where the cursor is."""

from __future__ import annotations

import re

import pytest

from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Rule

COLS, ROWS = 10, 4


def screen(raw: str, cols: int = COLS, rows: int = ROWS) -> tuple[list[str], tuple[int, int]]:
    """The rows (trailing empty ones dropped) and the cursor after ``raw``."""
    m = LineMatcher(cols=cols, rows=rows)
    m.feed(raw.encode())
    shown = m.display()
    while shown and not shown[-1]:
        shown.pop()
    return shown, m.cursor


@pytest.mark.parametrize(
    ("raw", "rows", "cursor"),
    [
        # text, wrap at the last column, scroll at the bottom
        ("abc", ["abc"], (0, 3)),
        ("abcdefghij", ["abcdefghij"], (0, 10)),  # the last column written: wrap pending
        ("abcdefghijk", ["abcdefghij", "k"], (1, 1)),
        ("a\r\nb\r\nc\r\nd\r\ne", ["b", "c", "d", "e"], (3, 1)),
        # CR, LF (down, same column), VT and FF as LF, CR LF, BS, TAB
        ("abc\rX", ["Xbc"], (0, 1)),
        ("ab\ncd", ["ab", "  cd"], (1, 4)),
        ("ab\x0bc\x0cd", ["ab", "  c", "   d"], (2, 4)),
        ("ab\r\ncd", ["ab", "cd"], (1, 2)),
        ("abc\x08\x08X", ["aXc"], (0, 2)),
        ("\x08\x08a", ["a"], (0, 1)),
        ("a\tb", ["a       b"], (0, 9)),
        ("a\tb\tc", ["a       bc"], (0, 10)),  # past the last stop: the last column
        # cursor moves: CUU CUD CUF CUB CNL CPL CHA HPA HPR VPA VPR CUP HVP
        ("\r\n\r\nab\x1b[2Ac", ["  c", "", "ab"], (0, 3)),
        ("ab\x1b[Bc\x1b[9Bd", ["ab", "  c", "", "   d"], (3, 4)),
        ("a\x1b[3Cb\x1b[20Cc", ["a   b    c"], (0, 10)),
        ("abcdef\x1b[3Dx\x1b[Dy", ["abcyef"], (0, 4)),
        ("ab\x1b[2Ec\x1b[Fd", ["ab", "d", "c"], (1, 1)),
        ("ab\x1b[5Gc\x1b[`d\x1b[2ae", ["db ec"], (0, 4)),
        ("a\x1b[3db\x1b[ec", ["a", "", " b", "  c"], (3, 3)),
        ("\x1b[2;3Ha\x1b[Hb\x1b[4;99fc", ["b", "  a", "", "         c"], (3, 10)),
        ("\x1b[99;99Hx", ["", "", "", "         x"], (3, 10)),
        # erasing: EL 0/1/2, ED 0/1/2/3, ECH
        ("abcdef\x1b[3D\x1b[K", ["abc"], (0, 3)),
        ("abcdef\x1b[3D\x1b[1K", ["    ef"], (0, 3)),
        ("abcdef\x1b[2K", [], (0, 6)),
        ("ab\r\ncd\r\nef\x1b[A\x1b[D\x1b[J", ["ab", "c"], (1, 1)),
        ("ab\r\ncd\r\nef\x1b[A\x1b[D\x1b[1J", ["", "", "ef"], (1, 1)),
        ("ab\r\ncd\x1b[2J", [], (1, 2)),
        ("ab\r\ncd\x1b[3J", [], (1, 2)),
        ("ab\r\ncd\x1b[5J\x1b[7K", ["ab", "cd"], (1, 2)),  # no such erase: nothing
        ("abcdef\x1b[4D\x1b[2X", ["ab  ef"], (0, 2)),
        # editing: DCH, ICH (cells pushed past the edge go)
        ("abcdef\x1b[4D\x1b[2P", ["abef"], (0, 2)),
        ("abcdefghij\x1b[8D\x1b[3@", ["a   bcdefg"], (0, 1)),
        # lines: IL, DL (the cursor goes to column 0), SU, SD, IND, NEL, RI
        ("a\r\nb\r\nc\x1b[A\x1b[L", ["a", "", "b", "c"], (1, 0)),
        ("a\r\nb\r\nc\x1b[2A\x1b[2M", ["c"], (0, 0)),
        ("a\r\nb\r\nc\x1b[S", ["b", "c"], (2, 1)),
        ("a\r\nb\r\nc\x1b[2T", ["", "", "a", "b"], (2, 1)),
        ("a\x1bDb\x1bEc", ["a", " b", "c"], (2, 1)),
        ("a\x1bMb", [" b", "a"], (0, 2)),
        # scrolling margins (DECSTBM): a LF at the bottom margin scrolls the region only
        ("top\x1b[4;1Hbot\x1b[2;3r\x1b[3;1Hx\r\ny\r\nz", ["top", "y", "z", "bot"], (2, 1)),
        ("\x1b[2;3r\x1b[2;1Hx\x1bMw", ["", " w", "x"], (1, 2)),
        # cursor save and restore: ESC 7/8 and CSI s/u (one position, as xterm); no save: home
        ("ab\x1b7\r\ncd\x1b8e\x1b8f", ["abf", "cd"], (0, 3)),
        ("ab\x1b[s\x1b[3;3Hcd\x1b[ue", ["abe", "", "  cd"], (0, 3)),
        ("ab\x1b8c", ["cb"], (0, 1)),
        # alternate screen: both start blank here; 1049 saves and restores the cursor
        ("main\x1b[?1049hx\x1b[?1049ly", ["    y"], (0, 5)),
        ("main\x1b[?47h", [], (0, 4)),
        # RIS: everything back to power-on
        ("ab\r\ncd\x1b[2;3r\x1bcx", ["x"], (0, 1)),
        # wide characters take 2 cells, combining marks none
        ("中文x", ["中文x"], (0, 5)),
        ("abcdefghi中", ["abcdefghi中"], (0, 10)),  # no room for both halves: one cell
        ("中\x1b[Gx", ["x"], (0, 1)),  # the left half written over: the right half goes
        ("e\u0301x", ["éx"], (0, 2)),
        ("e\u200dx\ufe0f", ["ex"], (0, 2)),  # joiners, selectors: no cell
        # what draws nothing: SGR, modes, OSC/DCS strings, charsets, other controls
        ("\x1b[1;31ma\x1b[0m\x1b[?25l\x1b]0;title\x07b\x1bPq\x1b\\c\x1b(Bd", ["abcd"], (0, 4)),
        ("a\x00\x07\x7f\x9bb", ["ab"], (0, 2)),
        ("a\x1b[>0qb\x1b[2 qc\x1b[4hd", ["abcd"], (0, 4)),
    ],
)
def test_controls(raw: str, rows: list[str], cursor: tuple[int, int]) -> None:
    assert screen(raw) == (rows, cursor)
    # the same, cut anywhere
    data = raw.encode()
    m = LineMatcher(cols=COLS, rows=ROWS)
    for i in range(len(data)):
        m.feed(data[i : i + 1])
    shown = m.display()
    while shown and not shown[-1]:
        shown.pop()
    assert (shown, m.cursor) == (rows, cursor)


def test_a_line_longer_than_the_screen_is_one_logical_line() -> None:
    every = Rule("every", re.compile(r"^a.*z$"))
    line = "a" + "x" * 95 + "z"  # ten rows of 10, scrolling through a 4-row screen
    m = LineMatcher([every], cols=COLS, rows=ROWS)
    hits = m.feed(line.encode() + b"\r\n")
    assert [h.line for h in hits] == [line]
    # bounded by max_line_chars: the newest characters
    m = LineMatcher([Rule("tail", re.compile(r"^x{5}z$"))], cols=COLS, rows=ROWS, max_line_chars=6)
    assert [h.line for h in m.feed(line.encode() + b"\r\n")] == ["xxxxxz"]


def test_an_erase_at_the_end_of_a_wrapped_row_ends_its_logical_line() -> None:
    every = Rule("every", re.compile(".+"))
    m = LineMatcher([every], cols=COLS, rows=ROWS)
    m.feed(b"abcdefghijklm\x1b[A\x1b[9G\x1b[K\x1b[B\r\n")
    assert m.display()[:2] == ["abcdefgh", "klm"]
