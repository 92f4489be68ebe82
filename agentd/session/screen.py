"""A session's current screen: its newest output kept cheaply, drawn only when asked.

On the hot path a ``ScreenRing`` only appends each read to a bounded
bytearray (trimmed once per ``keep`` bytes of output, at a line start). When
someone asks (``agentctl screen``, ``attach``, ``top``), a ``ScreenCapture``
taken on the loop is drawn through a real terminal emulator (pyte) on a
worker thread. The emulator is kept between captures and fed only the bytes
written since the last one, so asking often costs little; it starts over
from the ring when more than the ring holds was written in between (a
screen drawn long before that and never repainted may then be incomplete).
A resize of the pty is kept with the point in the output where it came, and
made there in the emulator: output is drawn at the size it was written for.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyte

Size = tuple[int, int, int]  # (offset in the output, cols, rows)

# The ring keeps at least this much of the newest output (and at most twice it):
# many screens of line output, and the repaints of a TUI's last minutes.
RING_KEEP = 64 * 1024
LINE_START_SEARCH = 4096  # how far past the cut a trim looks for a line start


@dataclass(frozen=True)
class Drawn:
    """A screen as drawn: its rows as text (trailing blanks cut, like ``tmux
    capture-pane -p``), the cursor (row, col from 0), and when asked the bytes
    that repaint it on another terminal."""

    session: int
    cols: int
    rows: list[str]
    cursor: tuple[int, int]
    redraw: bytes = b""
    # what the supervisor says of it: running, ran, reason and ended_at of an ended one
    about: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        return {
            "rows": self.rows,
            "cursor": list(self.cursor),
            "cols": self.cols,
            "session": self.session,
            **self.about,
        }


class ScreenRing:
    """The newest raw output of one session (``session``, a ``cols`` x ``rows`` pty)."""

    __slots__ = ("_buf", "_keep", "_painter", "_sizes", "_start", "cols", "rows", "session")

    def __init__(self, cols: int, rows: int, session: int = 0, keep: int = RING_KEEP) -> None:
        self.cols = cols
        self.rows = rows
        self.session = session
        self._keep = keep
        self._buf = bytearray()
        self._start = 0  # the offset of _buf[0] in everything the session wrote
        # (offset, cols, rows): the pty's size from that offset in the output on
        # (the first one: at or before the ring's start)
        self._sizes: list[Size] = [(0, cols, rows)]
        self._painter = _Painter()

    def feed(self, data: bytes) -> None:
        """Keep ``data`` (called for every read: an append, and rarely a trim)."""
        buf = self._buf
        buf += data
        if len(buf) > 2 * self._keep:
            cut = len(buf) - self._keep
            # Start at a line when one is near, not inside an escape sequence.
            line = buf.find(b"\n", cut, cut + LINE_START_SEARCH)
            cut = line + 1 if line >= 0 else cut
            del buf[:cut]
            self._start += cut
            while len(self._sizes) > 1 and self._sizes[1][0] <= self._start:
                del self._sizes[0]

    def resize(self, cols: int, rows: int) -> None:
        """The pty is ``cols`` x ``rows`` from the output fed next on."""
        if (cols, rows) == (self.cols, self.rows):
            return
        at = self._start + len(self._buf)
        if self._sizes[-1][0] == at:  # nothing was written at the size before
            self._sizes.pop()
        self._sizes.append((at, cols, rows))
        self.cols, self.rows = cols, rows

    def capture(self, about: dict[str, Any] | None = None) -> ScreenCapture:
        """What to draw the screen from, now (cheap: a copy of the ring); ``about`` goes
        with the drawn screen."""
        return ScreenCapture(
            self.session,
            self._painter,
            self._start,
            bytes(self._buf),
            tuple(self._sizes),
            dict(about or {}),
        )


@dataclass(frozen=True)
class ScreenCapture:
    session: int
    _painter: _Painter
    start: int
    data: bytes
    sizes: tuple[Size, ...]
    about: dict[str, Any] = field(default_factory=dict)

    def draw(self, *, redraw: bool = False) -> Drawn:
        """Run the emulator over what it has not seen yet (slow: on a worker thread)."""
        return self._painter.draw(self, redraw=redraw)


class _Painter:
    """One pyte screen per session, fed up to ``_fed`` (an offset in the session's output)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # two clients may ask at once, each on a thread
        self._screen: pyte.Screen | None = None
        self._stream: pyte.ByteStream | None = None
        self._fed = 0

    def draw(self, capture: ScreenCapture, *, redraw: bool) -> Drawn:
        import pyte  # only when a screen is asked for: the daemon never loads it otherwise

        start, data = capture.start, capture.data
        with self._lock:
            end = start + len(data)
            if self._screen is None or self._stream is None or not start <= self._fed <= end:
                _, cols, rows = capture.sizes[0]  # the size at the ring's start
                self._screen = pyte.Screen(cols, rows)
                self._stream = pyte.ByteStream(self._screen)
                self._fed = start
            screen, stream = self._screen, self._stream
            # Each resize where it came in the output: what was written before it
            # was drawn at the size before (one already made is made again: no-op).
            for at, cols, rows in capture.sizes:
                if self._fed <= at <= end:
                    stream.feed(data[self._fed - start : at - start])
                    self._fed = at
                    _resize(screen, cols, rows)
            stream.feed(data[self._fed - start :])
            self._fed = end
            shown = [row.rstrip() for row in screen.display]
            cursor = (screen.cursor.y, screen.cursor.x)
            return Drawn(
                capture.session,
                screen.columns,
                shown,
                cursor,
                repaint(screen) if redraw else b"",
                capture.about,
            )


def _resize(screen: pyte.Screen, cols: int, rows: int) -> None:
    """pyte's resize (rows go at the top, columns at the right), the cursor kept
    on the screen (pyte leaves it where it was)."""
    screen.resize(rows, cols)
    screen.ensure_hbounds()
    screen.ensure_vbounds(use_margins=False)


# --- repainting on another terminal -----------------------------------------------------------


def repaint(screen: pyte.Screen) -> bytes:
    """Bytes that clear a terminal and draw ``screen`` on it: text, colours and
    attributes, then the cursor where it is (and hidden if it is)."""
    out = ["\x1b[0m\x1b[H\x1b[2J"]
    for y in range(screen.lines):
        line = screen.buffer[y]
        last = max((x for x, ch in line.items() if ch != screen.default_char), default=-1)
        if last < 0:
            continue
        out.append(f"\x1b[{y + 1};1H")
        pen = ""
        for x in range(last + 1):
            ch = line[x]
            if ch.data == "":  # the right half of a wide character
                continue
            sgr = _sgr(ch)
            if sgr != pen:
                out.append(f"\x1b[0;{sgr}m" if sgr else "\x1b[0m")
                pen = sgr
            out.append(ch.data)
        out.append("\x1b[0m")
    out.append(f"\x1b[{screen.cursor.y + 1};{screen.cursor.x + 1}H")
    out.append("\x1b[?25l" if screen.cursor.hidden else "\x1b[?25h")
    return "".join(out).encode("utf-8", "replace")


def _sgr(ch: pyte.screens.Char) -> str:
    """The SGR parameters that give ``ch``'s looks ("" for the default)."""
    parts = [
        code
        for flag, code in (
            (ch.bold, "1"),
            (ch.italics, "3"),
            (ch.underscore, "4"),
            (ch.blink, "5"),
            (ch.reverse, "7"),
            (ch.strikethrough, "9"),
        )
        if flag
    ]
    for colour, base in ((ch.fg, 38), (ch.bg, 48)):
        code = _colour(colour, base) if colour != "default" else ""
        if code:
            parts.append(code)
    return ";".join(parts)


@functools.cache
def _colour(name: str, base: int) -> str:
    from pyte import graphics

    named = (
        graphics.FG_ANSI | graphics.FG_AIXTERM
        if base == 38
        else graphics.BG_ANSI | graphics.BG_AIXTERM
    )
    for code, known in named.items():
        if known == name:
            return str(code)
    try:  # 256 colours and true colour are kept as "rrggbb"
        r, g, b = (int(name[i : i + 2], 16) for i in (0, 2, 4))
    except ValueError:
        return ""
    return f"{base};2;{r};{g};{b}"
