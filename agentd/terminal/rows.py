"""The rows of the screen model and the logical lines they hold.

Each row is a str with one character per cell (``agentd.terminal.cells``),
right-trimmed of erased cells; a flag says it wraps into the next row (a line
too long for one row, which is one logical line, matched whole); the logical
line starting in a row has a ``Mark``, which the matcher keeps for it. A
logical line whose start scrolled off the top keeps that start in
``prefix``, up to ``max_line_chars``. Moving rows moves all three together.
No cursor here: ``agentd.terminal.screen`` builds on this.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from agentd.terminal.cells import PAD


class Mark(NamedTuple):
    """What the matcher keeps for a logical line between matches."""

    fired: frozenset[str] = frozenset()  # the rules its text matched last (Hit.fired_as)
    echo_at: int | None = None  # where its text was found in the injected text
    echo: str = ""  # its text when it was echo last: what is left of that is echo too
    # Changed inside a synchronized update and not matched since: matched as final
    # when the update ends (``agentd.terminal.screen``, frames).
    dirty: bool = False
    # What ``fired`` was found in when the line was last matched as final: its text and
    # the matcher's ``epoch`` (rules and echo) then. Matched as final again with the
    # same text in the same epoch (a TUI writing a row again as it was), it gives the
    # same hits, all fired already: the matcher does not search it again.
    final: tuple[str, tuple[int, int]] | None = None


NO_MARK = Mark()


class Rows:
    def __init__(self, cols: int, rows: int, max_line_chars: int) -> None:
        self.cols, self.rows, self.max_line_chars = cols, rows, max_line_chars
        self.text = [""] * rows
        self.wrap = [False] * rows
        self.marks: list[Mark] = [NO_MARK] * rows
        self._prefix: list[str] = []  # pieces, joined when read
        self.prefix = ""
        self._deferred: Callable[[], None] | None = None

    def blank(self) -> None:
        """Every row empty, no line wraps (marks stay: see Screen.reset)."""
        self.fill_rows()
        self.text = [""] * self.rows
        self.wrap = [False] * self.rows
        self.prefix = ""

    def display(self) -> list[str]:
        """The rows as the terminal shows them, right-trimmed."""
        self.fill_rows()
        return [row.replace(PAD, "").rstrip() for row in self.text]

    def defer(self, fill: Callable[[], None]) -> None:
        """``fill`` puts text in rows that nothing reads until ``fill_rows``
        (lines drawn in bulk above the cursor, most soon scrolled away)."""
        self._deferred = fill

    def fill_rows(self) -> None:
        if self._deferred is not None:
            fill, self._deferred = self._deferred, None
            fill()

    # -- logical lines ---------------------------------------------------------------------
    def head(self, y: int) -> int:
        """The row where the logical line holding row ``y`` starts."""
        while y > 0 and self.wrap[y - 1]:
            y -= 1
        return y

    def line_text(self, head: int) -> str:
        """The logical line starting in row ``head``: its newest ``max_line_chars``."""
        end = head
        while self.wrap[end] and end + 1 < self.rows:
            end += 1
        if end == head:
            text = self.text[head]
        else:
            text = "".join([r.ljust(self.cols) for r in self.text[head:end]] + [self.text[end]])
        if PAD in text:
            text = text.replace(PAD, "")
        if head == 0 and self._prefix:
            text = self.prefix + text
        return text[-self.max_line_chars :]

    def split(self, y: int) -> None:
        """Row ``y`` no longer wraps: the next row starts a line with the same mark."""
        self.marks[y + 1] = self.marks[self.head(y)]
        self.wrap[y] = False

    @property
    def prefix(self) -> str:
        """The scrolled-out start of the logical line that goes on in row 0."""
        if len(self._prefix) > 1:
            self._prefix = ["".join(self._prefix)[-self.max_line_chars :]]
        return self._prefix[0] if self._prefix else ""

    @prefix.setter
    def prefix(self, text: str) -> None:
        self._prefix = [text[-self.max_line_chars :]] if text else []
        self._prefix_len = len(self._prefix[0]) if text else 0

    # -- moving rows -----------------------------------------------------------------------
    def scroll_out(self, top: int, bottom: int, n: int) -> None:
        """Rows ``top..bottom`` move up ``n`` rows, blank rows at the bottom; the
        rows leaving at the top go into ``prefix`` if their line goes on."""
        if top == 0 and self.wrap[n - 1]:
            head = self.head(n - 1)
            text = "".join([r.ljust(self.cols) for r in self.text[head:n]]).replace(PAD, "")
            if head:
                self.prefix = text
            else:  # appended in pieces, trimmed rarely: amortised O(1) a row
                self._prefix.append(text)
                self._prefix_len += len(text)
                if self._prefix_len > 2 * self.max_line_chars:
                    self.prefix = self.prefix
            self.marks[n] = self.marks[head]
        elif top == 0:
            self.prefix = ""
        elif self.wrap[top + n - 1]:
            self.marks[top + n] = self.marks[self.head(top + n - 1)]
        if top > 0 and self.wrap[top - 1]:
            self.split(top - 1)
        self.move(top, top + n, bottom + 1 - n)

    def cut_lines(self, first: int, last: int) -> None:
        """Rows ``first..last`` are about to move or go: every line wrapping
        across them is cut into rows, each part keeping the line's mark."""
        if first > 0 and self.wrap[first - 1]:
            self.split(first - 1)
        for y in range(first, min(last + 1, self.rows - 1)):
            if self.wrap[y]:
                self.split(y)
        if first == 0:
            self.prefix = ""

    def move(self, start: int, stop: int, blank_at: int) -> None:
        """Delete rows ``start:stop``, then insert as many blank rows at ``blank_at``."""
        n = stop - start
        for rows, blank in ((self.text, ""), (self.wrap, False), (self.marks, NO_MARK)):
            del rows[start:stop]
            rows[blank_at:blank_at] = [blank] * n  # type: ignore[list-item]
