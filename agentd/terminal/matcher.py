"""The line matcher: raw pty bytes in, sentinel hits out (docs/units.md, ``sentinels``).

Pure: no I/O, no clock. A session feeds every pty read to ``LineMatcher.feed``
and acts on the returned hits.

Pipeline of one ``feed``::

    bytes -> controls.clean (what draws nothing goes) -> UTF-8 decode
          -> controls.split: plain text | cursor moves and edits
          -> the screen model (agentd.terminal.screen: rows x cols, as the
             agent's terminal shows them; runs of plain lines in bulk)
          -> logical lines (rows joined where a line wrapped)
          -> echo filter -> ``rule.pattern.search(line)`` per rule

Sentinels fire on the first draw. A logical line is matched

* when it is final for now: before anything changes it other than text
  appended at its end (an overwrite, an erase, a scroll, a clear), when the
  cursor leaves it, and at ``flush``: every rule;
* at the end of every ``feed``, as drawn so far: rules without named groups.
  So a sentinel fires in the chunk that completes its text on screen, even
  on a spinner row that is redrawn in place, cell by cell, and never ended.
  Rules with named groups wait for the line to be final: a half-drawn
  ``reset at 3`` must not be read as the time of ``reset at 3pm``;
* by ``check_partial``: prompt rules (``Rule.partial``), named groups or not;
* inside a synchronized update (``ESC[?2026h`` ... ``ESC[?2026l``, a frame):
  none of the above; a line the frame changed is matched as final when it
  ends, as the terminal then shows it, so a row redrawn in parts is never
  read half-drawn (``agentd.terminal.screen``, Frames). A frame left open is
  ended by ``end_frame`` (the session calls it after a timeout).

Per line and rule a hit is an edge: the rule fires when it matches and did
not match the line's text before (a rule with named groups: or matched it with
other values in its groups, as a footer's ``100% context left`` redrawn in
place as ``8% context left``). A spinner repainting ``(1s``, ``(2s`` fires
once; the line showing something else and later the sentinel again fires
again. An erased line keeps what it matched (TUIs erase and redraw the same
text). Empty lines are never matched. A hit's ``line`` is the logical line
as the terminal showed it then, with any cells left from before.

A resize (``resize``, the terminal's SIGWINCH) makes the line under the
cursor final and goes on on a blank screen of the new size; what the lines
on the old screen fired does not fire again as a TUI draws them again
(``agentd.terminal.redraw``).

How the stream is cut into chunks changes no hit of a rule with named groups
(what is final is a point of the stream), and no rule without them fires in
a later chunk than the one that draws its match, or inside a frame the one
that ends it (it may fire earlier, on the line drawn so far): a sequence or
a UTF-8 character cut at a chunk end is carried over (a few bytes), an OSC
or DCS string is skipped by a flag rather than buffered, characters written
one after the other are one stroke wherever the cut falls, and a logical
line keeps its newest ``max_line_chars`` characters.

Speed: C does the work (passes over whole chunks, slices of rows, runs of
plain lines matched as one block: ``agentd.terminal.bulk``); Python code runs
per control sequence and per line a TUI redraws, never per character. A feed
has a fixed cost: feed reads together where they come together.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentd.terminal.ansi import ChunkCut
from agentd.terminal.bulk import can_scroll, scroll_lines
from agentd.terminal.cells import width
from agentd.terminal.controls import apply, clean, draw, split
from agentd.terminal.echo import EchoFilter
from agentd.terminal.redraw import Redraw
from agentd.terminal.rows import NO_MARK, Mark
from agentd.terminal.rules import Hit, Rule, RuleSet
from agentd.terminal.screen import Screen, Settle
from agentd.tokens import count_cjk

PARTIAL_MAX = 4096  # longest line under the cursor check_partial looks at
WINDOW_MIN, WINDOW_MAX = 512, 1 << 20  # characters of plain lines tried in bulk at once


class LineMatcher:
    """Feeds pty output, returns sentinel hits; see the module docstring."""

    def __init__(
        self,
        rules: Sequence[Rule] = (),
        *,
        max_line_chars: int = 65536,
        cols: int = 120,
        rows: int = 40,
    ) -> None:
        if max_line_chars < 1:
            raise ValueError("max_line_chars must be positive")
        self._rules = RuleSet(max_line_chars)
        self._rules_new = False  # rules added since check_partial
        for rule in rules:
            self.add_rule(rule)
        self._echo = EchoFilter()
        self._window = WINDOW_MAX
        self._hits: list[Hit] = []
        self._cjk = 0
        self._written = 0  # characters written to screens before this one
        self.bytes_in = 0
        self._cut = ChunkCut()
        self._resize_redraw: Redraw | None = None  # after a resize, while the TUI draws again
        self._screen = Screen(self, cols=cols, rows=rows, max_line_chars=max_line_chars)

    # -- rules and echo --
    @property
    def rules(self) -> list[Rule]:
        return self._rules.rules

    def add_rule(self, rule: Rule) -> None:
        """Add ``rule``, replacing a rule of the same name."""
        self._rules.add(rule)
        self._rules_new = True

    def remove_rule(self, name: str) -> None:
        self._rules.remove(name)

    def expect_echo(self, text: str) -> None:
        """Lines echoing ``text`` (just injected) won't hit echo-checked rules."""
        self._echo.expect(text)

    def display(self) -> list[str]:
        """The screen's rows as the terminal shows them now, right-trimmed."""
        return self._screen.display()

    @property
    def cursor(self) -> tuple[int, int]:
        """The cursor's row and column (the column is ``cols`` after the last
        column was written: the next character wraps)."""
        return self._screen.y, self._screen.x

    @property
    def tokens(self) -> int:
        """Estimated tokens of all text fed so far (see agentd.tokens)."""
        other = self._written + self._screen.written - self._cjk
        return self._cjk + (other + 3) // 4

    # -- feeding --
    def feed(self, data: bytes) -> list[Hit]:
        self.bytes_in += len(data)
        self._ingest(data, final=False)
        if not self._screen.frame:  # inside a frame nothing is shown yet
            self._screen.settle(Settle.DRAW)
        return self._take()

    @property
    def in_frame(self) -> bool:
        """Inside a synchronized update (``ESC[?2026h``) that has not ended yet."""
        return self._screen.frame

    @property
    def frames(self) -> int:
        """How many synchronized updates began on this screen."""
        return self._screen.frames

    def end_frame(self) -> list[Hit]:
        """End a synchronized update the program left open (a terminal shows it
        after a timeout, and so does the session): its lines are final."""
        self._screen.end_frame()
        self._screen.settle(Settle.DRAW)
        return self._take()

    def flush(self) -> list[Hit]:
        """End of stream: the line under the cursor is final; then start afresh."""
        self._ingest(b"", final=True)
        self._screen.end_frame()
        self._screen.settle(Settle.FINAL)
        self._resize_redraw = None
        self._new_screen(self._screen.cols, self._screen.rows)
        self._cut = ChunkCut()
        return self._take()

    def resize(self, cols: int, rows: int) -> list[Hit]:
        """The terminal is ``cols`` x ``rows`` now (SIGWINCH): the line under the
        cursor is final, and matching goes on on a blank screen of that size,
        where the hits of the lines on the old one do not fire again as a TUI
        draws them again (``agentd.terminal.redraw``). Returns the hits of the
        line under the cursor; a stream cut mid-sequence goes on as it was."""
        self._screen.end_frame()
        self._screen.settle(Settle.FINAL)
        self._resize_redraw = Redraw.of(self._screen, self._resize_redraw, cols=cols, rows=rows)
        self._new_screen(cols, rows)
        return self._take()

    def _new_screen(self, cols: int, rows: int) -> None:
        old = self._screen
        self._written += old.written
        self._screen = Screen(self, cols=cols, rows=rows, max_line_chars=old.max_line_chars)

    def check_partial(self) -> list[Hit]:
        """Match the line under the cursor now with the prompt rules (a prompt
        waiting for input), named groups or not.

        A rule reported here is not reported again for this line. Cheap to
        call after every feed: it only looks again when the line or the rules
        changed, and a line longer than ``PARTIAL_MAX`` characters is no prompt.
        """
        if not self._rules.any_partial or self._screen.frame:
            return []
        self._screen.settle(Settle.PARTIAL, force=self._rules_new)
        self._rules_new = False
        return self._take()

    def _take(self) -> list[Hit]:
        hits, self._hits = self._hits, []
        return hits

    def _ingest(self, data: bytes, *, final: bool) -> None:
        data, others = clean(self._cut.whole(data, final=final))
        text = data.decode("utf-8", "replace")
        if not text:
            return
        # Characters are looked up once per chunk: most chunks have no wide or
        # zero-width one, and then no piece needs its cells worked out.
        narrow = True
        if others:
            distinct = set(others.decode("utf-8", "replace"))
            narrow = all(width(c) == 1 for c in distinct)
            if count_cjk("".join(distinct)):
                self._cjk += count_cjk(text)  # all of it is written: sequences hold no CJK
        self._screen.narrow = narrow
        screen = self._screen
        pieces = split(text)
        for i, piece in enumerate(pieces):
            if i % 2:
                apply(screen, piece)
            elif piece:
                self._plain(piece, last=i == len(pieces) - 1)

    def _plain(self, text: str, *, last: bool) -> None:
        """Draw plain text; runs of plain lines in bulk (``agentd.terminal.bulk``),
        with the unfinished line after them if the text ends the chunk (``last``)."""
        screen = self._screen
        if "\n" not in text:  # part of a line (a TUI's redraw): nothing for the bulk
            draw(screen, text)
            return
        pos, size = 0, len(text)
        while pos < size:
            if not (self._echo.active or screen.frame) and can_scroll(screen):
                # A window that doubles while the lines are plain, so that
                # lines the bulk cannot do are never scanned over and over.
                stop = min(size, pos + self._window)
                done, complete = scroll_lines(
                    screen, text, pos, stop, self._block, unfinished=last and stop == size
                )
                self._window = min(2 * self._window, WINDOW_MAX) if complete else WINDOW_MIN
                pos += done
                if done and pos < size:
                    continue
            if pos >= size:
                break
            nl = text.find("\n", pos)
            if nl < 0:
                draw(screen, text[pos:])
                break
            draw(screen, text[pos:nl])
            screen.x = 0  # LF here is CR LF
            screen.linefeed()
            pos = nl + 1

    # -- matching --
    def line(self, text: str, mark: Mark, how: Settle) -> Mark:
        """Match a logical line (the screen's Settler); returns its new mark."""
        if how is Settle.PARTIAL and len(text) > PARTIAL_MAX:
            return mark
        final = mark.final  # the text first: a changed line costs one comparison
        if how is Settle.FINAL and final and final[0] == text and self._unchanged(final[1], mark):
            return mark._replace(dirty=False)  # as matched before (rows.Mark.final)
        since, shown = mark.echo_at, mark.echo
        if how is not Settle.FINAL:
            echo = self._echo.peek(text, since)
        elif self._echo.active or since is not None:
            echo, since = self._echo.consume(text, since, shown)
            shown = text if echo else shown
        else:
            echo = False
        hits = self._rules.line_hits(
            text, partial_only=how is Settle.PARTIAL, final=how is not Settle.DRAW, echo=echo
        )
        if hits and not echo:
            hits = [h for h in hits if not (self._redrawn(h) or _left_over(h, shown))]
        self._fire([h for h in hits if h.fired_as not in mark.fired])
        names = frozenset(h.fired_as for h in hits)
        if how is not Settle.FINAL:
            return Mark(mark.fired | names, since, shown)
        # the epoch after the match: an echo looked for in it counts
        return Mark(names, since, shown, final=(text, (self._rules.version, self._echo.version)))

    def _unchanged(self, epoch: tuple[int, int], mark: Mark) -> bool:
        """Was the line, with the text it has, matched as final in ``epoch``, the rules
        and the echo as they are now (no echo awaited, the line no echo), and no resize
        redraw going on?"""
        return (
            epoch == (self._rules.version, self._echo.version)
            and mark.echo_at is None
            and not self._echo.active
            and self._resize_redraw is None
        )

    def _block(self, text: str, fired: frozenset[str], unfinished: int) -> dict[int, Mark]:
        """Match lines at once (each ending in LF but the ``unfinished`` one,
        matched as drawn so far); returns the marks of those hit. The first
        line's rules in ``fired`` matched it before: no hit."""
        marks: dict[int, Mark] = {}
        end = len(text) if unfinished >= 0 else len(text) - 1
        for index, hit in self._rules.block_hits(text, 0, end):
            if (index == unfinished and hit.rule.has_groups) or self._redrawn(hit):
                continue
            if index or hit.fired_as not in fired:
                self._fire([hit])
            marks[index] = Mark(marks.get(index, NO_MARK).fired | {hit.fired_as})
        return marks

    def _fire(self, hits: list[Hit]) -> None:
        if hits and self._resize_redraw is not None:
            hits = self._resize_redraw.new(hits, self._screen.written)
        self._hits += hits

    def _redrawn(self, hit: Hit) -> bool:
        return hit.rule.echo_check and self._echo.is_redraw(hit.line)


def _left_over(hit: Hit, echo: str) -> bool:
    """Is what ``hit`` matched left from echo the line showed (drawn over in
    part: the same text in the same place)? A TUI redraws a row from the left."""
    start, end = hit.span
    return hit.rule.echo_check and bool(echo) and echo[start:end] == hit.line[start:end]
