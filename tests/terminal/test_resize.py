"""The line matcher when the terminal is resized: a blank screen of the new size,
the line under the cursor final, and a TUI's redraw of what was on screen no new hit."""

from __future__ import annotations

import re

import pytest

from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Hit, Rule
from tests.support import resize_phases

DONE = Rule("done", re.compile("TASK COMPLETE"), "notify")
LEFT = Rule("left", re.compile(r"(?P<pct>\d+)% left"), "notify")


def names(hits: list[Hit]) -> list[str]:
    return [h.fired_as.replace("\0", " ") for h in hits]


@pytest.mark.parametrize("scenario", ["fits", "scrolled"])
@pytest.mark.parametrize("chunk", [1, 13, 512, 1 << 20])
def test_a_sentinel_on_claude_codes_screen_fires_once_through_its_redraws(
    scenario: str, chunk: int
) -> None:
    # Claude Code draws its last screenful again after each SIGWINCH: from the
    # top when its output fits (the line stays in its row), else moved up or down
    # by the rows the screen lost or gained.
    (cols, rows, first), *resized = resize_phases(scenario)
    m = LineMatcher([DONE], cols=cols, rows=rows)
    hits: list[Hit] = []
    for data in [first, *(data for _, _, data in resized)]:
        if data is not first:
            cols, rows, _ = resized.pop(0)
            hits += m.resize(cols, rows)
        for i in range(0, len(data), chunk):
            hits += m.feed(data[i : i + chunk])
        assert sum("TASK COMPLETE MARKER" in row for row in m.display()) == 1
        assert len(m.display()) == rows
    hits += m.flush()
    assert names(hits) == ["done"]


def test_a_redraw_in_another_row_is_no_new_hit_but_a_new_line_after_it_is() -> None:
    m = LineMatcher([DONE], cols=40, rows=10)
    assert names(m.feed(b"work\r\nTASK COMPLETE\r\n> ")) == ["done"]
    assert m.resize(30, 6) == []
    # the TUI erases and draws again, the line two rows lower
    assert m.feed(b"\x1b[H\x1b[2J\r\n\r\nwork\r\nTASK COMPLETE\r\n> ") == []
    assert names(m.feed(b"\r\nTASK COMPLETE again\r\n")) == ["done"]  # none lost
    assert m.display() == ["", "work", "TASK COMPLETE", ">", "TASK COMPLETE again", ""]


def test_each_line_that_showed_it_is_drawn_again_once() -> None:
    m = LineMatcher([DONE], cols=40, rows=10)
    assert names(m.feed(b"TASK COMPLETE 1\r\nTASK COMPLETE 2\r\n")) == ["done", "done"]
    m.resize(50, 10)
    assert m.feed(b"\x1b[2J\x1b[HTASK COMPLETE 1\r\nTASK COMPLETE 2\r\n") == []
    assert names(m.feed(b"TASK COMPLETE 3\r\n")) == ["done"]


def test_the_line_under_the_cursor_is_final_at_a_resize() -> None:
    # A rule with named groups waits for its line to be final: the resize makes it so.
    m = LineMatcher([LEFT], cols=40, rows=10)
    assert m.feed(b"footer: 8% left") == []
    assert names(m.resize(40, 12)) == ["left pct=8"]
    assert m.feed(b"\x1b[Hfooter: 8% left") == []  # drawn again
    assert names(m.feed(b"\rfooter: 7% left\r\n")) == ["left pct=7"]
    assert m.flush() == []


def test_after_the_first_screenful_a_like_line_is_a_new_one() -> None:
    # An agent that draws nothing again: what it writes after a screenful is its own.
    m = LineMatcher([DONE], cols=20, rows=5)
    assert names(m.feed(b"TASK COMPLETE\r\n")) == ["done"]
    m.resize(20, 4)
    assert m.feed(b"x" * 19 + b"\r\n" + b"y" * 60 + b"\r\n") == []
    assert names(m.feed(b"TASK COMPLETE\r\n")) == ["done"]


def test_resized_again_before_the_redraw_came() -> None:
    m = LineMatcher([DONE], cols=40, rows=10)
    assert names(m.feed(b"TASK COMPLETE\r\n")) == ["done"]
    m.resize(60, 10)
    m.feed(b"\x1b[2J\x1b[Hdrawing...")  # the first redraw, cut short by the next SIGWINCH
    m.resize(80, 20)
    assert m.feed(b"\x1b[2J\x1b[HTASK COMPLETE\r\n") == []


def test_a_sequence_cut_by_the_chunk_end_goes_on_after_a_resize() -> None:
    m = LineMatcher([DONE], cols=40, rows=10)
    assert m.feed(b"\x1b[3") == []
    m.resize(30, 8)
    assert names(m.feed(b"1mTASK COMPLETE\x1b[0m\r\n")) == ["done"]
    assert m.display()[0] == "TASK COMPLETE" and len(m.display()) == 8


def test_the_new_screen_has_the_new_width() -> None:
    m = LineMatcher([DONE], cols=20, rows=4)
    m.resize(10, 4)
    m.feed(b"0123456789abc")
    assert m.display() == ["0123456789", "abc", "", ""]
    assert m.cursor == (1, 3)
    assert m.tokens == (13 + 3) // 4  # what the old screens held still counts
