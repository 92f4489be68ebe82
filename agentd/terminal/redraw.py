"""After a resize: what the lines on the screen fired, not to be fired again.

A TUI answers SIGWINCH by drawing its screen again at the new size, wherever
its layout puts things then: Claude Code 2.1.197 erases every row and draws
the last screenful of its output from the top row, so a line moves up or down
by as many rows as the screen lost or gained, or stays where it was when all
of the output fits (``tests/fixtures/captured/resize/``).
The line matcher goes on on a blank screen of the new size (a line's mark
cannot follow it to where the TUI draws it next), so ``Redraw`` keeps what
the lines on the old screen had fired (``Hit.fired_as``: the rule, and for a
rule with named groups what they held), once for each line that showed it,
and takes a hit on the new screen that fires the same as the redraw of such a
line, once. It does so while the new screen's first screenful is drawn
(``cols x rows`` characters, the cells a redraw fills at most), then
forgets.

What that costs: a line drawn on the new screen within its first screenful
that fires as a line on the old screen did, when the TUI did not draw that
line again (an agent that writes plain lines and redraws nothing; a line the
smaller screen has no room for), is taken for its redraw and does not fire.
A TUI that draws more than a screenful again (its whole history) fires again
for what it draws after the first screenful.
"""

from __future__ import annotations

from collections import Counter

from agentd.terminal.rules import Hit
from agentd.terminal.screen import Screen


class Redraw:
    """The hits the lines of a screen before a resize fired, to be drawn again."""

    __slots__ = ("_budget", "_shown")

    def __init__(self, shown: Counter[str], budget: int) -> None:
        self._shown = shown  # Hit.fired_as -> how many lines showed it
        self._budget = budget  # characters into the new screen until the redraw is over

    @classmethod
    def of(cls, screen: Screen, before: Redraw | None, *, cols: int, rows: int) -> Redraw:
        """The redraw a resize of ``screen`` to ``cols`` x ``rows`` is to bring:
        what its lines fired, and what a redraw ``before`` it still expected (a
        terminal resized again before its TUI was done drawing)."""
        shown = Counter[str]()
        screen.fill_rows()
        for y in range(screen.rows):
            head = y == 0 or not screen.wrap[y - 1]  # the mark of a line is in its first row
            if head and screen.marks[y].fired and screen.line_text(y):
                shown.update(screen.marks[y].fired)
        if before is not None and screen.written <= before._budget:
            shown.update(before._shown)
        return cls(+shown, cols * rows)

    def new(self, hits: list[Hit], written: int) -> list[Hit]:
        """``hits`` on the new screen (``written`` characters into it) less those
        that are a redraw of a line on the old one."""
        if written > self._budget:
            self._shown.clear()
        if not self._shown:
            return hits
        kept = []
        for hit in hits:
            if self._shown[hit.fired_as] > 0:
                self._shown[hit.fired_as] -= 1
            else:
                kept.append(hit)
        return kept
