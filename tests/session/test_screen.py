"""The screen ring's emulator across resizes of the pty: output is drawn at the
size it was written for, however often (or seldom) the screen is asked for."""

from __future__ import annotations

import pyte
import pytest

from agentd.session.screen import ScreenRing
from tests.support import resize_phases


def reference(steps: list[tuple[int, int, bytes]]) -> pyte.Screen:
    """pyte fed the output, resized where the pty was."""
    (cols, rows, _), *_ = steps
    screen = pyte.Screen(cols, rows)
    stream = pyte.ByteStream(screen)
    for cols, rows, data in steps:
        screen.resize(rows, cols)
        stream.feed(data)
    return screen


@pytest.mark.parametrize("scenario", ["fits", "scrolled"])
@pytest.mark.parametrize("asked", ["once", "after every write", "around every resize"])
def test_claude_codes_redraws_are_drawn_at_their_size(scenario: str, asked: str) -> None:
    steps = resize_phases(scenario)
    ring = ScreenRing(120, 40, session=1)
    for n, (cols, rows, data) in enumerate(steps):
        if n:
            if asked == "around every resize":
                ring.capture().draw()
            ring.resize(cols, rows)
            if asked == "around every resize":
                assert len(ring.capture().draw().rows) == rows
        for i in range(0, len(data), 512):
            ring.feed(data[i : i + 512])
            if asked == "after every write":
                ring.capture().draw()
    drawn = ring.capture().draw()
    want = reference(steps)
    assert drawn.rows == [row.rstrip() for row in want.display]
    assert (drawn.cols, len(drawn.rows)) == (140, 50) == (ring.cols, ring.rows)
    assert drawn.cursor == (want.cursor.y, want.cursor.x)
    assert sum("TASK COMPLETE MARKER" in row for row in drawn.rows) == 1


def test_the_last_of_resizes_with_nothing_written_between_counts() -> None:
    ring = ScreenRing(20, 5)
    ring.feed(b"0123456789abcdefghij")
    ring.resize(10, 5)
    assert ring.capture().draw().rows[0] == "0123456789"
    ring.resize(15, 6)  # before anything was written at 10 columns
    ring.feed(b"\r\nxyz")
    drawn = ring.capture().draw()
    assert drawn.cols == 15 and drawn.rows == ["0123456789", "xyz", "", "", "", ""]


def test_a_smaller_screen_keeps_the_cursor_on_it() -> None:
    # pyte's resize: the rows that go are at the top, the cursor stays in its row
    # (or the last one)
    ring = ScreenRing(20, 10)
    ring.feed(b"".join(b"line %d\r\n" % n for n in range(9)) + b"end")
    ring.resize(10, 4)
    drawn = ring.capture().draw()
    assert drawn.rows == ["line 6", "line 7", "line 8", "end"]
    assert drawn.cursor == (3, 3)


def test_a_ring_trimmed_past_a_resize_starts_at_the_size_then() -> None:
    ring = ScreenRing(20, 3, keep=64)
    ring.feed(b"before\r\n")
    ring.resize(12, 4)
    for n in range(100):
        ring.feed(b"line %d\r\n" % n)
    capture = ring.capture()
    assert capture.start > 0 and capture.sizes == ((8, 12, 4),)
    drawn = capture.draw()
    assert drawn.cols == 12 and drawn.rows == ["line 97", "line 98", "line 99", ""]
