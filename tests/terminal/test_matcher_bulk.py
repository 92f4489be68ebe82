"""Plain lines scrolling up a full screen (the bulk path, ``agentd.terminal.bulk``)
hit as lines drawn one by one do: each sentinel once, in order, a rule with
named groups only on a finished line, echo and redraws never."""

from __future__ import annotations

import re

import pytest

from agentd.terminal.matcher import WINDOW_MIN, LineMatcher
from agentd.terminal.rules import Hit, Rule

DONE = Rule("done", re.compile(r"DONE \w+"))
RESET = Rule("reset", re.compile(r"reset at (?P<t>\d+(am|pm)?)"))


def full(rules: list[Rule], rows: int = 3) -> LineMatcher:
    """A matcher whose small screen is full: what comes next scrolls."""
    m = LineMatcher(rules, rows=rows, cols=80)
    m.feed(b"".join(b"fill %d\r\n" % i for i in range(rows)))
    return m


def seen(hits: list[Hit]) -> list[tuple[str, str]]:
    return [(h.rule.name, h.line) for h in hits]


def test_sentinels_in_scrolled_lines_fire_once_each_in_order() -> None:
    m = full([DONE])
    chunk = b"x1\r\nDONE one\r\nx2\r\nDONE two\r\nDONE one\r\n"
    assert seen(m.feed(chunk)) == [
        ("done", "DONE one"),
        ("done", "DONE two"),
        ("done", "DONE one"),  # another line: fires again
    ]
    assert m.feed(b"more\r\n") == [] and m.flush() == []


def test_the_first_scrolled_line_does_not_fire_again_for_what_it_fired_drawn_so_far() -> None:
    m = full([DONE])
    assert seen(m.feed(b"DONE early")) == [("done", "DONE early")]  # fires as drawn
    assert m.feed(b"\r\nx\r\ny\r\nz\r\n") == []  # ended and scrolled away: not again
    assert seen(m.feed(b"DONE late\r\nq\r\n")) == [("done", "DONE late")]


def test_an_unfinished_last_line_fires_without_groups_and_waits_with_them() -> None:
    m = full([DONE, RESET])
    hits = m.feed(b"a\r\nb\r\nDONE now\r\nreset at 3")
    assert seen(hits) == [("done", "DONE now")]  # `reset at 3` is not final yet
    hits = m.feed(b"pm\r\nnext\r\n")
    assert [(h.rule.name, h.groups) for h in hits] == [("reset", {"t": "3pm"})]


def test_an_unfinished_last_line_fires_in_the_chunk_that_draws_it() -> None:
    m = full([DONE])
    assert seen(m.feed(b"a\r\nb\r\nDONE here")) == [("done", "DONE here")]
    assert m.feed(b"\r\n") == []


def test_a_group_rule_on_a_finished_scrolled_line() -> None:
    m = full([RESET])
    hits = m.feed(b"a\r\nreset at 7am\r\nb\r\nreset at 9\r\n")
    assert [h.groups["t"] for h in hits] == ["7am", "9"]


def test_echo_scrolled_past_does_not_fire_but_the_agents_own_line_does() -> None:
    m = full([DONE])
    m.expect_echo("When finished print DONE work and stop.\n")
    assert m.feed(b"When finished print DONE work and stop.\r\n") == []
    assert m.feed(b"a\r\nb\r\nc\r\n") == []
    # a TUI redrawing the prompt it showed: still echo
    assert m.feed(b"When finished print DONE work and stop.\r\n") == []
    assert seen(m.feed(b"DONE work\r\n")) == [("done", "DONE work")]


@pytest.mark.parametrize("rows", [2, 3, 10])
def test_scrolled_lines_hit_as_lines_fed_one_at_a_time(rows: int) -> None:
    lines = [f"line {i} DONE x{i % 4}" if i % 3 == 0 else f"line {i}" for i in range(60)]
    lines += ["reset at 5pm", "tail"]
    data = "".join(f"{ln}\r\n" for ln in lines).encode()
    whole = full([DONE, RESET], rows)
    one_by_one = full([DONE, RESET], rows)
    got = seen(whole.feed(data))
    want = [h for ln in lines for h in seen(one_by_one.feed(f"{ln}\r\n".encode()))]
    assert got == want and len(got) == 21
    assert whole.tokens == one_by_one.tokens


# -- the screen's size, and what carries over to a new one -----------------------------


def test_the_default_screen_is_120_by_40() -> None:
    m = LineMatcher()
    m.feed(b"x" * 120)
    assert m.cursor == (0, 120) and len(m.display()) == 40
    m.feed(b"y")
    assert m.cursor == (1, 1)


def test_max_line_chars_must_be_positive() -> None:
    assert LineMatcher(max_line_chars=1).feed(b"ok\r\n") == []
    with pytest.raises(ValueError, match=r"^max_line_chars must be positive$"):
        LineMatcher(max_line_chars=0)


def test_a_resize_goes_on_at_the_new_size_with_the_same_line_limit_and_counts() -> None:
    m = LineMatcher([DONE], max_line_chars=12, cols=80, rows=10)
    m.feed(b"some text here\r\n")
    before = m.tokens
    assert before > 0
    m.resize(30, 5)
    assert len(m.display()) == 5
    m.feed(b"z" * 30)
    assert m.cursor == (0, 30)
    m.feed(b"\r\n")
    hits = m.feed(b"a long line that says DONE now\r\n")
    assert [h.line for h in hits] == ["ays DONE now"]  # its newest 12 characters
    assert m.tokens > before + 10  # what the old screen had, and the new one's
    m.flush()
    assert m.tokens > before + 10


# -- more than one hit in a block --------------------------------------------------------

ALSO = Rule("also", re.compile(r"ALSO"))
ANY = Rule("any", re.compile(r"\w*"))  # matches the empty string too


def test_empty_lines_never_hit_even_a_rule_that_matches_nothing() -> None:
    m = full([ANY])
    assert seen(m.feed(b"a\r\n\r\nb\r\n")) == [("any", "a"), ("any", "b")]


def test_a_group_rule_waiting_on_the_unfinished_line_holds_back_no_other_hit() -> None:
    m = full([RESET, DONE])
    assert seen(m.feed(b"a\r\nb\r\nreset at 3 DONE now")) == [("done", "reset at 3 DONE now")]


def test_a_redrawn_echo_line_holds_back_no_sentinel_after_it_in_the_chunk() -> None:
    m = full([DONE])
    m.expect_echo("When finished print DONE work and stop.\n")
    assert m.feed(b"When finished print DONE work and stop.\r\na\r\n") == []
    chunk = b"When finished print DONE work and stop.\r\nDONE work\r\n"
    assert seen(m.feed(chunk)) == [("done", "DONE work")]


def test_a_line_with_two_hits_fires_each_once() -> None:
    m = full([DONE, ALSO])
    hits = m.feed(b"a\r\nb\r\nDONE now and ALSO")
    assert sorted(seen(hits)) == [("also", "DONE now and ALSO"), ("done", "DONE now and ALSO")]
    assert m.feed(b"\r\nc\r\n") == [] and m.flush() == []


# -- frames --------------------------------------------------------------------------------

PROMPT = Rule("prompt", re.compile(r"^> Continue\?"), partial=True)


def test_a_prompt_inside_an_open_frame_is_not_read_until_the_frame_ends() -> None:
    m = LineMatcher([PROMPT])
    assert m.feed(b"\x1b[?2026h> Continue?") == [] and m.in_frame
    assert m.check_partial() == []  # half-drawn, maybe
    assert seen(m.feed(b"\x1b[?2026l")) == [("prompt", "> Continue?")]  # as the frame ends


def test_a_frame_left_open_is_ended_by_end_frame() -> None:
    m = LineMatcher([DONE])
    assert m.feed(b"\x1b[?2026hDONE here\r\n") == [] and m.in_frame
    assert seen(m.end_frame()) == [("done", "DONE here")]
    assert not m.in_frame


# -- across screens: resizes and the end of the stream -----------------------------------


def test_the_token_count_spans_every_screen() -> None:
    parts = [b"first screen's text\r\n", b"the second one's\r\n", b"and a third\r\n"]
    resized = LineMatcher(cols=80, rows=10)
    for i, data in enumerate(parts):
        resized.feed(data)
        if i < 2:
            resized.resize(60 + i, 8)
    whole = LineMatcher(cols=80, rows=10)
    whole.feed(b"".join(parts))
    assert resized.tokens == whole.tokens > 0
    resized.flush()
    assert resized.tokens == whole.tokens


def test_a_character_cut_at_the_end_of_the_stream_shows_as_the_terminal_would() -> None:
    m = LineMatcher([Rule("bad", re.compile("caf\ufffd"))])
    assert m.feed(b"caf\xc3") == []  # maybe the rest of it comes next
    assert seen(m.flush()) == [("bad", "caf\ufffd")]  # it does not: a broken character


def test_after_a_resize_and_the_end_of_a_stream_the_next_one_hits_afresh() -> None:
    m = LineMatcher([DONE], cols=80, rows=10)
    assert seen(m.feed(b"DONE one\r\n")) == [("done", "DONE one")]
    m.resize(60, 8)
    m.flush()
    assert seen(m.feed(b"DONE one\r\n")) == [("done", "DONE one")]


def test_a_prompt_rule_added_later_is_looked_for_on_the_line_as_it_is() -> None:
    m = LineMatcher([PROMPT])
    assert seen(m.feed(b"> Continue? [y/n]")) == [("prompt", "> Continue? [y/n]")]
    assert m.check_partial() == []
    m.add_rule(Rule("yes-no", re.compile(r"\[y/n\]$"), partial=True))
    assert seen(m.check_partial()) == [("yes-no", "> Continue? [y/n]")]
    assert m.check_partial() == []


# -- a read the bulk can do only in part ----------------------------------------------------


def test_lines_after_one_the_bulk_cannot_do_are_drawn_and_hit_in_the_same_read() -> None:
    """A progress bar redrawn with a bare CR in the middle of a read of tool output:
    the lines before it go in bulk, it is drawn one character at a time, and what
    comes after it in the read is drawn and matched as well."""
    m = full([DONE], rows=6)
    chunk = b"a\r\nb\r\nprogress 10%\rprogress 100%\r\nc\r\nDONE late\r\nd\r\n"
    assert seen(m.feed(chunk)) == [("done", "DONE late")]
    assert m.display() == ["b", "progress 100%", "c", "DONE late", "d", ""]


@pytest.mark.parametrize(
    "chunk",
    [
        # a file name as a hyperlink (OSC 8), as the agents' TUIs print paths
        b"a\r\nDONE task-7 \x1b]8;;file:///p/notes.md\x1b\\notes.md\x1b]8;;\x1b\\\r\nb\r\n",
        # a cursor step over a blank cell (CSI C) instead of a space
        b"a\r\nDONE task-7\x1b[1Cnotes.md\r\nb\r\n",
        # and the read ends inside the line
        b"a\r\nDONE task-7 \x1b]8;;file:///p/notes.md\x1b\\notes.md",
    ],
)
def test_a_line_that_goes_on_after_a_control_sequence_in_the_same_read_is_judged_whole(
    chunk: bytes,
) -> None:
    """Text, a control sequence, more text of the same line, all in one read: the
    hit (what events and logs show) is of the line as all of it draws it, not of
    the part before the sequence."""
    m = full([DONE])
    assert seen(m.feed(chunk)) == [("done", "DONE task-7 notes.md")]
    assert m.flush() == []


def test_a_line_across_the_end_of_the_bulks_window_hits_as_all_of_it() -> None:
    """After a line it cannot do, the bulk takes the rest of the read a window of
    ``WINDOW_MIN`` characters at a time: a line that the window's end cuts is
    drawn whole, not hit as the part that fell in the window."""
    head = b"a\r\nprogress 10%\rprogress 100%\r\n"
    # the window's characters are those drawn: a CR LF is one (a line feed)
    filler = b"".join(b"tool output line %03d\r\n" % i for i in range(23)) + b"y" * 19 + b"\r\n"
    assert len(filler) - filler.count(b"\r\n") == WINDOW_MIN - len("DONE task")
    line = b"DONE task-7 notes"  # its first bytes in the window, the rest after it
    m = full([DONE], rows=6)
    assert seen(m.feed(head + filler + line + b"\r\nb\r\n")) == [("done", "DONE task-7 notes")]
    assert m.display()[-3:] == [line.decode(), "b", ""]
