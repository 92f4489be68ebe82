"""The screen model: the cursor, drawing, and when a logical line is final.

``rows`` x ``cols`` cells (``agentd.terminal.rows``) and a cursor, as xterm
or pyte keep them, with only what sentinel matching needs: no attributes, no
charsets, no scrollback, tab stops every 8 columns. Characters are written at
the cursor and wrap at the last column; ``agentd.terminal.controls`` maps each
control sequence to a method here.

Only the logical line under the cursor can have changed since it was last
matched: every other line was matched when the cursor left it. The screen
asks its ``Settler`` (the matcher) to match that line as final
(``Settle.FINAL``) before anything changes it other than characters appended
after its end (an overwrite, an erase, a scroll, a clear) and when the cursor
leaves it; the matcher asks for ``Settle.DRAW`` at the end of each feed and
for ``Settle.PARTIAL`` in check_partial. Characters written one after the
other are one stroke, matched before its first overwrite only: a run the
stream cut in two is matched as the whole run. Where these points fall
depends on the stream, never on how it was cut into chunks.

Frames. Inside a synchronized update (``ESC[?2026h`` ... ``ESC[?2026l``, as
Codex and other ratatui or crossterm TUIs send every redraw) the terminal
shows nothing until the update ends: a row drawn in parts, with cursor jumps
between them, is never seen half-drawn. So inside one a line changed in the
update is not matched when it is overwritten or left: it is marked
(``Mark.dirty``) and matched as final when the update ends, with the text the
terminal then shows (Codex redraws a shifted footer as ``10`` at column 75,
then ``% context left`` at 78: judged between the two, the row reads
``1000% context left``). A line that changed before the update began is
matched as before, on its first change inside it (that text was shown), and
a marked line that scrolls off is matched as it goes. No end of feed matches
a line inside an update (``Settle.DRAW``, ``Settle.PARTIAL``): its end does.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Protocol

from agentd.terminal.cells import PAD, compose, split_marks, to_cells
from agentd.terminal.rows import Mark, Rows


class Settle(IntEnum):
    """Why a line is matched; a bit each, so that the changes since the last
    match of each kind are one int."""

    FINAL = 1  # about to change or left: every rule
    DRAW = 2  # end of a feed: what is on screen now (rules that cannot be cut short)
    PARTIAL = 4  # check_partial: prompt rules


_ALL = Settle.FINAL | Settle.DRAW | Settle.PARTIAL


class Settler(Protocol):
    def line(self, text: str, mark: Mark, how: Settle) -> Mark: ...


class Screen(Rows):
    def __init__(
        self, settler: Settler, *, cols: int = 120, rows: int = 40, max_line_chars: int = 65536
    ) -> None:
        if cols < 2 or rows < 2:
            raise ValueError("a screen has at least 2 columns and 2 rows")
        super().__init__(cols, rows, max_line_chars)
        self._settler = settler
        self.narrow = False  # the text drawn now has no wide or zero-width character
        self.written = 0  # characters written, counted as they come
        self.y = self.x = 0
        self._changed = 0  # Settle bits: the cursor's line changed since that match
        # A stroke: characters written one after the other, however the stream
        # is cut. It is matched before it first changes a cell, not again.
        self._stroke: tuple[int, int] | None = None  # where the last one ended
        self._stroke_settled = False
        self.frame = False  # inside a synchronized update (see Frames above)
        self.frames = 0  # how many began
        self._frame_touched = False  # the cursor's line changed in it since the cursor came
        self._frame_dirty = False  # some line is marked dirty
        self.reset()

    def reset(self) -> None:
        """Blank rows, cursor home, no margins: power-on (RIS). Marks stay: a
        line the TUI draws again after a clear is no new occurrence."""
        self.destroy()
        self.blank()
        self.y = self.x = 0  # x == cols: the last column was written, wrap at the next char
        self.top, self.bottom = 0, self.rows - 1  # the scrolling region
        self._saved: tuple[int, int] | None = None

    # -- matching --------------------------------------------------------------------------
    def settle(self, how: Settle, *, force: bool = False) -> None:
        """Offer the cursor's logical line to the settler if it changed since the
        last offer of this kind (FINAL counts as every kind)."""
        if not (force or self._changed & how):
            return
        self._changed &= ~_ALL if how is Settle.FINAL else ~how
        self._settle_at(self.head(self.y), how)

    def _settle_at(self, head: int, how: Settle) -> None:
        """Offer the logical line starting in row ``head``; a final offer ends its
        wait for the end of a frame (``Mark.dirty``)."""
        mark = self.marks[head]
        text = self.line_text(head)
        if text:  # an empty line matches nothing and keeps its mark
            new = self._settler.line(text, mark, how)
            self.marks[head] = (
                new._replace(dirty=True) if mark.dirty and how is not Settle.FINAL else new
            )
        elif mark.dirty and how is Settle.FINAL:
            self.marks[head] = mark._replace(dirty=False)

    # -- frames (synchronized updates) -----------------------------------------------------
    def begin_frame(self) -> None:
        """``ESC[?2026h``: the terminal shows nothing until ``end_frame``."""
        if not self.frame:
            # What the cursor's line shows now was on screen: the rules that need
            # no final line see it before the frame changes it.
            self.settle(Settle.DRAW)
            self.frame = True
            self.frames += 1
            self._frame_touched = False

    def end_frame(self) -> None:
        """``ESC[?2026l``: every line marked in the frame is final now, as shown."""
        if not self.frame:
            return
        self.frame = self._frame_touched = False
        if not self._frame_dirty:
            return
        self._frame_dirty = False
        self.fill_rows()
        cursor = self.head(self.y)
        for y in range(self.rows):
            if self.marks[y].dirty and not (y and self.wrap[y - 1]):
                if y == cursor:
                    self._changed = 0  # matched now, as every kind
                self._settle_at(y, Settle.FINAL)

    def _defer(self) -> None:
        """The cursor's line, changed in this frame, is about to change again or
        be left: match it when the frame ends."""
        head = self.head(self.y)
        if not self.marks[head].dirty:
            self.marks[head] = self.marks[head]._replace(dirty=True)
        self._frame_dirty = True

    def bulk_drawn(self, *, unfinished: bool) -> None:
        """Lines were drawn and matched in bulk (``agentd.terminal.bulk``): the
        cursor's line is new and matched as drawn so far, if ``unfinished``."""
        self._changed = Settle.FINAL | Settle.PARTIAL if unfinished else 0
        self._stroke, self._stroke_settled = ((self.y, self.x) if unfinished else None), False

    def destroy(self) -> None:
        """The cursor's line is about to change other than by appending."""
        if self._changed & Settle.FINAL:
            if self._frame_touched:  # changed in this frame: judged at its end
                self._defer()
            else:
                self.settle(Settle.FINAL)

    def _leave(self) -> None:
        """The cursor's line stops being the cursor's (the cursor left, or the
        line moved away from under it)."""
        self.destroy()
        self._changed = 0
        self._frame_touched = False

    def _touch(self) -> None:
        self._changed = _ALL
        self._frame_touched = self.frame

    # -- text ------------------------------------------------------------------------------
    def write(self, text: str) -> None:
        """Printable ``text`` (no controls) at the cursor, wrapping at the last column."""
        self.written += len(text)
        stroke_goes_on = self._stroke == (self.y, self.x)
        if not stroke_goes_on:
            self._stroke_settled = False
        if not (self.narrow or text.isascii()):
            marks, text = split_marks(text)
            if marks:
                self._compose_left(marks, own_cell=stroke_goes_on)
            text = to_cells(text)
        while text:
            if self.x >= self.cols:
                self._wrap_line()
            room = self.cols - self.x
            piece, text = text[:room], text[room:]
            if text[:1] == PAD:  # a wide character in the last column keeps one cell
                text = text[1:]
            self._put(piece)
        self._stroke = (self.y, self.x)

    def _put(self, piece: str) -> None:
        row, x = self.text[self.y], self.x
        end = x + len(piece)
        if x < len(row):
            if row[x:end] != piece[: len(row) - x]:  # changes cells already drawn
                if not self._stroke_settled:
                    self.destroy()
                    self._stroke_settled = True
            elif end <= len(row):  # repainted as it was: nothing changes
                self.x = end
                return
            row = row[:x] + piece + row[end:]
        else:
            row = row + " " * (x - len(row)) + piece
        self.text[self.y], self.x = row, end
        self._touch()

    def _compose_left(self, marks: str, *, own_cell: bool) -> None:
        """Zero-width ``marks`` written after the cell left of the cursor (the
        stroke's ``own_cell`` when the stream was cut between them)."""
        x, row = min(self.x, self.cols) - 1, self.text[self.y]
        cell = compose(row[x], marks) if 0 <= x < len(row) else None
        if cell is not None:
            if not own_cell:
                self.destroy()
            self.text[self.y] = row[:x] + cell + row[x + 1 :]
            self._touch()

    def _wrap_line(self) -> None:
        if self.y == self.bottom:
            self.wrap[self.y] = True
            self.scroll_up(1, leave=False)
        elif self.y < self.rows - 1:
            # The next row joins the cursor's line, with what its text matched.
            self.fill_rows()
            head, joined = self.head(self.y), self.marks[self.y + 1]
            if joined.fired:
                # What the cursor's line drew itself is matched first, as drawn
                # so far: else a sentinel it drew in this feed would be taken
                # for the joined row's, and fire or not by where a feed ended.
                self.settle(Settle.DRAW)
                self.marks[head] = self.marks[head]._replace(
                    fired=self.marks[head].fired | joined.fired
                )
            self.wrap[self.y] = True
            self.y += 1
        self.x = 0

    # -- the cursor ------------------------------------------------------------------------
    def move_to(self, y: int, x: int | None = None) -> None:
        """Put the cursor at row ``y`` (and column ``x``), clamped to the screen."""
        y = min(max(y, 0), self.rows - 1)
        if y != self.y:
            self.fill_rows()
            if self.head(y) != self.head(self.y):
                self._leave()
            self.y = y
        if x is not None:
            self.x = min(max(x, 0), self.cols - 1)

    def up(self, n: int) -> None:
        self.move_to(max(self.y - n, self.top if self.y >= self.top else 0))

    def down(self, n: int) -> None:
        self.move_to(min(self.y + n, self.bottom if self.y <= self.bottom else self.rows - 1))

    def left(self, n: int) -> None:
        self.x = max(min(self.x, self.cols - 1) - n, 0)

    def right(self, n: int) -> None:
        self.x = min(self.x + n, self.cols - 1)

    def tab(self) -> None:
        self.x = min(self.x // 8 * 8 + 8, self.cols - 1)

    def linefeed(self) -> None:
        if self.y == self.bottom:
            self.scroll_up(1)
        elif self.y < self.rows - 1:
            self.move_to(self.y + 1)

    def reverse_linefeed(self) -> None:
        if self.y == self.top:
            self.scroll_down(1)
        elif self.y > 0:
            self.move_to(self.y - 1)

    def save_cursor(self) -> None:
        self._saved = (self.y, self.x)

    def restore_cursor(self) -> None:
        y, x = self._saved or (0, 0)
        self.move_to(y, x)

    def set_margins(self, top: int, bottom: int) -> None:
        """DECSTBM, 1-based; 0 means the screen's edge. The cursor goes home."""
        top, bottom = max(top, 1) - 1, min(bottom or self.rows, self.rows) - 1
        if bottom > top:
            self.fill_rows()
            self.top, self.bottom = top, bottom
            self.move_to(0, 0)

    # -- rows ----------------------------------------------------------------------------
    def set_row(self, y: int, row: str, *, end_erased: bool = False) -> None:
        """Replace row ``y`` after an edit (erased cells are blanks, dropped at
        the end); the caller called ``destroy`` first."""
        self.fill_rows()
        self._stroke = None
        row = row.rstrip(" ")
        if row == self.text[y] and not (end_erased and self.wrap[y]):
            return
        self.text[y] = row
        if end_erased and self.wrap[y]:  # the logical line ends here now
            self.split(y)
        if y == 0 and not row:
            self.prefix = ""
        if self.head(y) == self.head(self.y):
            self._touch()

    def scroll_up(self, n: int, *, leave: bool = True) -> None:
        """SU, LF at the bottom: the region moves up ``n`` rows, blank rows at its
        bottom; the rows leaving at the top go into ``prefix`` if their logical
        line goes on (``leave=False``: the cursor's line goes on, wrapping)."""
        self.fill_rows()
        top, n = self.top, min(n, self.bottom - self.top + 1)
        if leave and top <= self.y <= self.bottom:
            self._leave()
            self._stroke = None  # other cells under the cursor now
        if self._frame_dirty:  # lines of this frame scrolling off: final as they go
            for y in range(top, top + n):
                if self.marks[y].dirty and not (y and self.wrap[y - 1]):
                    self._settle_at(y, Settle.FINAL)
        self.scroll_out(top, self.bottom, n)

    def scroll_down(self, n: int) -> None:
        """SD/RI: the region moves down ``n`` rows, blank rows at its top."""
        top, bottom = self.top, self.bottom
        n = min(n, bottom - top + 1)
        self._structural(top, bottom)
        self.move(bottom + 1 - n, bottom + 1, top)

    def insert_lines(self, n: int) -> None:
        """IL: ``n`` blank rows at the cursor's; the rows below move down."""
        if self.top <= self.y <= self.bottom:
            n = min(n, self.bottom - self.y + 1)
            self._structural(self.y, self.bottom)
            self.move(self.bottom + 1 - n, self.bottom + 1, self.y)
            self.x = 0

    def delete_lines(self, n: int) -> None:
        """DL: ``n`` rows from the cursor's go; the rows below move up."""
        if self.top <= self.y <= self.bottom:
            n = min(n, self.bottom - self.y + 1)
            self._structural(self.y, self.bottom)
            self.move(self.y, self.y + n, self.bottom + 1 - n)
            self.x = 0

    def _structural(self, first: int, last: int) -> None:
        """Rows ``first..last`` move or go: the lines crossing them end."""
        self.fill_rows()
        self._stroke = None
        if first <= self.y <= last or (first > 0 and self.head(first - 1) == self.head(self.y)):
            self._leave()
        self.cut_lines(first, last)
