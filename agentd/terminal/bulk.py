"""Plain output lines in bulk: tool output scrolling up the screen, at C speed.

An agent's tool output is lines of characters ending in CR LF, written at the
bottom row, each LF scrolling the screen. Drawn one by one that costs Python
work per line; ``scroll_lines`` gives the same screen and the same matches
from a few passes over the whole run of lines: they are matched together as
final (the cursor leaves each of them), the unfinished line after them as
drawn so far, and only the last screenful is turned into rows. What it
cannot do (a CR or a control inside a line, a LF alone, a TAB at the end of a
line or in a line wider than the screen) is left to ``controls.draw``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial

from agentd.terminal.cells import PAD, to_cells
from agentd.terminal.rows import NO_MARK, Mark
from agentd.terminal.screen import Screen

# What a fresh row ignores at its start: CR (the cursor is in column 0) and
# line erases (nothing to erase).
_LEADING = re.compile(r"\n(?:\r|\x1b\[[012]?K)+")  # starts with LF: sre skips to it fast
_ERASE_CR = "\n\x1b[2K\r"  # the usual start of a redrawn progress line

# (lines, each ending in LF but an unfinished last one; the rules the first
# matched before; the index of the unfinished line or -1) -> marks of those hit
MatchBlock = Callable[[str, frozenset[str], int], dict[int, Mark]]


def can_scroll(screen: Screen) -> bool:
    """Is the cursor at the end of the region's bottom row, a line of its own?"""
    y = screen.y
    return (
        y == screen.bottom
        and screen.x == len(screen.text[y])
        and not screen.wrap[y]
        and not (y > 0 and screen.wrap[y - 1])
        and screen.marks[y].echo_at is None  # no echo seen in it
        and not screen.marks[y].echo
    )


def scroll_lines(
    screen: Screen, text: str, start: int, stop: int, match: MatchBlock, *, unfinished: bool
) -> tuple[int, bool]:
    """Write plain ``text[start:stop]`` as ``controls.draw`` would, the first
    line after what the cursor's row holds (``can_scroll``): its whole lines,
    and the unfinished line after them if ``unfinished`` (nothing comes after
    it in the chunk, so it is matched as drawn so far). Returns how many
    characters it wrote, and whether it wrote every whole line."""
    y, row = screen.y, screen.text[screen.y]
    if row and (text[start : start + 1] in ("\r", "\x1b") or not screen.narrow):
        return 0, False  # the first line does more than append to the row
    end = text.rfind("\n", start, stop) + 1 or start
    plain, good = _plain_lines(text[start:end])
    complete = good is None
    if good is None:
        good = plain.count("\n")
    narrow = screen.narrow or (plain.isascii() and text.isascii())
    rest = text[end:stop] if complete and unfinished else ""
    if rest and not narrow:
        rest = to_cells(rest)
    if len(rest) >= screen.cols or not _plain_rest(rest):
        rest = ""
    body = plain if narrow else to_cells(plain)
    if "\t" in body:
        # Tab stops every 8 columns, as expandtabs, but a TAB past the last stop
        # stops at the last column: lines that long are drawn one by one.
        lines = [line.expandtabs(8) for line in (row + body).split("\n")[:good]]
        fit = next((i for i, line in enumerate(lines) if len(line) > screen.cols), good)
        if fit < good:
            good, rest, complete = fit, "", False
            plain = plain[: _after_lines(plain, good)]
        row, body = "", "".join(line + "\n" for line in lines[:good])
    if not (good or rest):
        return 0, False
    # characters as written (tokens): not LF, not TAB (a move), whatever their cells
    written = len(plain) - good - (plain.count("\t") if "\t" in plain else 0)
    screen.written += written + (stop - end if rest else 0)
    cells = "".join((row, body, rest))  # the lines with their cells, then the unfinished one
    drawn = cells.replace(PAD, "") if (not narrow or PAD in row) and PAD in cells else cells
    marks = match(drawn, screen.marks[y].fired, good if rest else -1)
    mark = screen.marks[y]
    if good:
        if good >= screen.bottom - screen.top:  # every row above the cursor changes
            screen.defer(partial(_place, screen, cells, good, marks))
        else:
            screen.fill_rows()
            _place(screen, cells, good, marks)
        mark = NO_MARK
    screen.text[y], screen.wrap[y], screen.x = rest, False, len(rest)
    screen.marks[y] = Mark(mark.fired | marks.get(good, NO_MARK).fired) if rest else NO_MARK
    screen.bulk_drawn(unfinished=bool(rest))
    done = end - start if complete else _after_lines(text, good, start) - start
    return done + (stop - end if rest else 0), complete


def _plain_rest(rest: str) -> bool:
    """Can the unfinished last line be drawn in bulk? (A TAB at its end
    would stop short of a column: draw does that.)"""
    return not ("\r" in rest or "\x1b" in rest or "\x0b" in rest or "\t" in rest)


def _plain_lines(block: str) -> tuple[str, int | None]:
    """The lines of ``block`` (each ending in LF) the bulk can do, as text
    without what a fresh row ignores, and how many come before the first it
    cannot do (None: it can do all)."""
    plain = block.replace(_ERASE_CR, "\n")  # one pass when there is none (no copy)
    bad = -1
    if "\r" in plain or "\x1b" in plain:  # fine at the start of a line
        plain = _LEADING.sub("\n", "\n" + plain)[1:]
        bad = _first(plain.find("\r"), plain.find("\x1b"))
    if "\x0b" in plain:  # a LF alone (not CR LF)
        bad = _first(bad, plain.find("\x0b"))
    if "\t" in plain:  # a TAB at the end of a line
        bad = _first(bad, plain.find("\t\n"))
    if bad < 0:
        return plain, None
    return plain[: plain.rfind("\n", 0, bad) + 1], plain.count("\n", 0, bad)


def _first(*at: int) -> int:
    """The first of the positions ``at`` found (not -1), or -1."""
    return min((i for i in at if i >= 0), default=-1)


def _after_lines(text: str, n: int, start: int = 0) -> int:
    """Where the line after the first ``n`` lines from ``start`` starts."""
    end = start
    for _ in range(n):
        end = text.find("\n", end) + 1
    return end


def _place(screen: Screen, lines: str, count: int, marks: dict[int, Mark]) -> None:
    """Put the last of ``count`` ``lines`` (each ending in LF, then perhaps an
    unfinished one, not placed) in the rows above the cursor, scrolling the
    rest away."""
    top, bottom, keep = screen.top, screen.bottom, screen.bottom - screen.top
    tail = lines.rsplit("\n", keep + 1)[-keep - 1 : -1]
    first_line = count - len(tail)
    if max(map(len, tail)) <= screen.cols:  # one row each
        rows, wraps, cut = tail, [False] * len(tail), ""
        mark_rows = [NO_MARK] * len(tail)
        for line, mark in marks.items():
            if first_line <= line < count:
                mark_rows[line - first_line] = mark
    else:
        rows, wraps, heads, cut = _wrapped(screen, tail, keep)
        mark_rows = [NO_MARK if h is None else marks.get(first_line + h, NO_MARK) for h in heads]
    n = len(rows)
    if n < keep or (top > 0 and screen.wrap[top - 1]):
        screen.scroll_up(min(n, keep), leave=False)  # keeps the rows left, ends the lines cut
    elif top == 0:
        screen.prefix = cut  # every row goes: no need to move them
    screen.text[bottom - n : bottom] = rows
    screen.wrap[bottom - n : bottom] = wraps
    screen.marks[bottom - n : bottom] = mark_rows


def _wrapped(
    screen: Screen, lines: list[str], keep: int
) -> tuple[list[str], list[bool], list[int | None], str]:
    """The last ``keep`` rows the lines fill, some wrapping: rows, wrap flags,
    the line each row starts (None: a continuation) and the cut-off start."""
    rows: list[str] = []
    wraps: list[bool] = []
    heads: list[int | None] = []
    for i in range(len(lines) - 1, -1, -1):
        pieces = _rows_of(lines[i], screen.cols)
        rows[:0] = pieces
        wraps[:0] = [True] * (len(pieces) - 1) + [False]
        heads[:0] = [i] + [None] * (len(pieces) - 1)
        if len(rows) >= keep:
            break
    cut = ""
    if len(rows) > keep:
        drop = len(rows) - keep
        cut = "".join(rows[:drop]).replace(PAD, "")
        heads[drop] = next(h for h in reversed(heads[: drop + 1]) if h is not None)
        del rows[:drop], wraps[:drop], heads[:drop]
    return rows, wraps, heads, cut


def _rows_of(line: str, cols: int) -> list[str]:
    """``line`` (cells) in rows of ``cols``, as drawing it wraps it."""
    rows = [line[:cols]]
    line = line[cols:]
    while line:
        if line[0] == PAD:  # a wide character in the last column keeps one cell
            line = line[1:]
            if not line:
                break
        rows.append(line[:cols])
        line = line[cols:]
    return rows
