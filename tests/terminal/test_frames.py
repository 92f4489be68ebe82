"""Frames: a row is judged when the synchronized update that drew it has ended.

Codex 0.171.0 draws every redraw inside ``ESC[?2026h`` ... ``ESC[?2026l`` and
writes only the cells that changed. When its right-aligned footer shifts one
column (the warning count grows), it writes ``10`` at column 75, skips a cell
that stays, and writes the rest from column 78: between the two writes the row
reads ``1000% context left``. The real capture of that
(``tests/fixtures/tui/codex-0.171.0-footer-shift.raw``) must ask for no handoff
but the one at ``8% context left``, however the stream is cut.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentd.config.unit import Unit
from agentd.supervisor.triggers import HANDOFF_RULE, rules
from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Hit, Rule

CAPTURE = Path(__file__).resolve().parent.parent / "fixtures" / "tui"
FOOTER_SHIFT = (CAPTURE / "codex-0.171.0-footer-shift.raw").read_bytes()
CODEX = Unit.model_validate({"name": "u", "preset": "codex", "workdir": "/"})
CODEX_RULES = rules(CODEX)
SYNC_ON, SYNC_OFF = b"\x1b[?2026h", b"\x1b[?2026l"

# Where the capture redraws the footer row (row 40): the frame that gives it its
# right part, the one that shifts it, the one that writes `  8`. Every cut in them.
FOOTER_FRAMES = [
    range(FOOTER_SHIFT.rfind(SYNC_ON, 0, 5717), 5730),
    range(6030, 6210),
    range(6670, 6725),
]


def handoffs(chunks: list[bytes], rule_set: list[Rule] = CODEX_RULES) -> list[Hit]:
    matcher = LineMatcher(rule_set)
    hits: list[Hit] = []
    for chunk in chunks:
        hits += matcher.feed(chunk)
    hits += matcher.flush()
    return [h for h in hits if h.rule.name == HANDOFF_RULE]


def figures(hits: list[Hit]) -> list[int | None]:
    return [CODEX.handoff.percent_left(h.groups) for h in hits]


def wanted(hits: list[Hit]) -> list[int | None]:
    return [CODEX.handoff.percent_left(h.groups) for h in hits if CODEX.handoff.wanted(h.groups)]


def test_the_capture_reads_100_then_8_and_asks_once_at_8() -> None:
    hits = handoffs([FOOTER_SHIFT])
    assert figures(hits) == [100, 8], [h.line for h in hits]
    assert wanted(hits) == [8]
    assert "8% context left · ⚠ 2 warnings" in hits[-1].line


@pytest.mark.slow
def test_the_capture_in_every_chunk_size_and_at_every_cut_in_its_footer_frames() -> None:
    """Byte by byte, in chunks of every size up to 96, and cut in two at every byte
    of the frames that redraw the footer: always 100 then 8, one handoff at 8."""
    seen = set()
    for size in range(1, 97):
        chunks = [FOOTER_SHIFT[i : i + size] for i in range(0, len(FOOTER_SHIFT), size)]
        seen.add((tuple(figures(hits := handoffs(chunks))), tuple(wanted(hits))))
    for cut in itertools.chain(*FOOTER_FRAMES):
        hits = handoffs([FOOTER_SHIFT[:cut], FOOTER_SHIFT[cut:]])
        seen.add((tuple(figures(hits)), tuple(wanted(hits))))
    assert seen == {((100, 8), (8,))}


@settings(max_examples=150, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(FOOTER_SHIFT)), max_size=40))
def test_the_capture_in_any_chunking(cuts: list[int]) -> None:
    points = sorted({0, len(FOOTER_SHIFT), *cuts})
    chunks = [FOOTER_SHIFT[a:b] for a, b in itertools.pairwise(points)]
    hits = handoffs(chunks)
    assert figures(hits) == [100, 8]
    assert wanted(hits) == [8]


def shifted_at_8(row: str) -> bytes:
    """A frame of our own that shifts the footer as Codex's frame 29 did, at 8%:
    the warning count grows to 10 (one character longer), so `8% context left`
    moves one column left; written in runs with cursor jumps between them, as
    Codex writes the cells that change: the new `8` one column left (the row
    then reads `88% context left`), the words after the figure, then the `%`."""
    at = row.index("8% context left")  # 0-based column of the figure now
    new = row[: at - 1] + row[at:].replace("2 warnings", "10 warnings")
    return (
        SYNC_ON
        + b"\x1b[?25l"
        + f"\x1b[40;{at}H8".encode()  # 1-based columns: the 8 at at - 1
        + f"\x1b[40;{at + 2}H{new[at + 1 :]}".encode()
        + f"\x1b[40;{at + 1}H%".encode()
        + b"\x1b[38;3H\x1b[?25h"
        + SYNC_OFF
    )


def own_shift() -> bytes:
    matcher = LineMatcher([])
    matcher.feed(FOOTER_SHIFT)
    return shifted_at_8(matcher.display()[39])


def test_a_shift_of_our_own_at_8_percent_asks_once_there() -> None:
    """After the capture (`8% context left · ⚠ 2 warnings`, asked for at 8), our
    frame shifts the footer: at its end the row reads `8% context left · ⚠ 10
    warnings`; nothing is read off it mid-frame (`88%`), so there is one handoff
    at 8 and no second one, at any cut of the new frame."""
    frame = own_shift()
    stream = FOOTER_SHIFT + frame
    matcher = LineMatcher([])
    matcher.feed(stream)
    assert "  8% context left · ⚠ 10 warnings · f2 to view" in matcher.display()[39]
    for cut in range(len(FOOTER_SHIFT), len(stream) + 1):
        hits = handoffs([stream[:cut], stream[cut:]])
        assert (figures(hits), wanted(hits)) == ([100, 8], [8]), (cut, [h.line for h in hits])


def test_the_same_shift_outside_a_frame_is_read_mid_draw() -> None:
    """The frame is what makes the difference: the same writes without its
    markers are judged at each overwrite, `88%` is read, and the `8%` after it
    asks a second time."""
    frame = own_shift().replace(SYNC_ON, b"").replace(SYNC_OFF, b"")
    hits = handoffs([FOOTER_SHIFT + frame])
    assert (figures(hits), wanted(hits)) == ([100, 8, 88, 8], [8, 8])


LIMIT = Rule("limit", re.compile(r"resets (?P<until>\d{1,2}(?::\d\d)?[ap]m)"), "pause")
SEEN = Rule("seen", re.compile("Conversation compacted"))


def hits_of(stream: bytes, cuts: list[int] = ()) -> list[tuple[str, dict[str, str]]]:  # type: ignore[assignment]
    matcher = LineMatcher([LIMIT, SEEN], cols=60, rows=6)
    points = sorted({0, len(stream), *cuts})
    found: list[Hit] = []
    for a, b in itertools.pairwise(points):
        found += matcher.feed(stream[a:b])
    found += matcher.flush()
    return [(h.rule.name, h.groups) for h in found]


def test_a_row_overwritten_inside_a_frame_is_judged_once_with_its_end_text() -> None:
    stream = (
        SYNC_ON
        + b"\x1b[3;1Hlimit \xc2\xb7 resets 3:50pm"  # first draw
        + b"\x1b[3;16H4"  # the hour redrawn: 4:50pm
        + b"\x1b[6;1H"  # the cursor leaves
        + SYNC_OFF
    )
    assert hits_of(stream) == [("limit", {"until": "4:50pm"})]


def test_a_line_still_being_written_at_a_frame_end_waits_for_its_end() -> None:
    """Appended to at the cursor and never overwritten: not final at the frame
    end (the next frame may append `pm`), as outside frames."""
    stream = SYNC_ON + b"\x1b[2;1Hresets 3" + SYNC_OFF + SYNC_ON + b"pm" + SYNC_OFF + b"\r\n"
    assert hits_of(stream) == [("limit", {"until": "3pm"})]
    assert all(hits_of(stream, [c]) == [("limit", {"until": "3pm"})] for c in range(len(stream)))


def test_a_sentinel_drawn_inside_a_frame_fires_when_the_frame_ends() -> None:
    matcher = LineMatcher([SEEN], cols=60, rows=6)
    assert matcher.feed(SYNC_ON + b"\x1b[2;1HConversation compacted") == []
    assert matcher.in_frame
    assert [h.rule.name for h in matcher.feed(SYNC_OFF)] == ["seen"]


def test_a_row_drawn_and_erased_inside_one_frame_was_never_shown() -> None:
    stream = SYNC_ON + b"\x1b[2;1HConversation compacted\x1b[2;1H\x1b[2K\x1b[5;1H" + SYNC_OFF
    assert hits_of(stream) == []


def test_lines_scrolling_off_inside_a_frame_are_judged_as_they_go() -> None:
    """History lines a TUI pushes up and off the screen inside a frame are output
    (they went to the scrollback): matched, once."""
    lines = b"".join(f"line {n}\r\n".encode() for n in range(8))
    stream = SYNC_ON + b"\x1b[1;1HConversation compacted\r\n" + lines + SYNC_OFF
    assert hits_of(stream) == [("seen", {})]


def test_a_frame_left_open_is_ended_by_end_frame() -> None:
    """What the session calls when a frame stays open past FRAME_TIMEOUT."""
    matcher = LineMatcher([LIMIT], cols=60, rows=6)
    matcher.feed(SYNC_ON + b"\x1b[2;1Hresets 3pm\x1b[2;8H4\x1b[4;1H")
    assert matcher.in_frame
    assert [(h.rule.name, h.groups) for h in matcher.end_frame()] == [("limit", {"until": "4pm"})]
    assert not matcher.in_frame


def test_nothing_is_read_off_a_half_drawn_frame_at_a_feed_end() -> None:
    """The session's reads end anywhere; inside a frame nothing is matched at a
    read's end (the frame is not on screen yet)."""
    matcher = LineMatcher([SEEN], cols=60, rows=6)
    assert matcher.feed(SYNC_ON + b"\x1b[2;1HConversation compacted") == []
    assert matcher.feed(b"\x1b[2;1H\x1b[2KWorking") == []
    assert matcher.feed(SYNC_OFF) == []


# -- any chunking of any stream with frames: the same hits -------------------------------
PIECES = st.one_of(
    st.text(alphabet=st.sampled_from([*"ab 3:50pm", "中", "…"]), max_size=8).map(str.encode),
    st.sampled_from(
        [
            b"resets 3pm",
            b"resets 3:50pm",
            b"Conversation compacted",
            SYNC_ON,
            SYNC_OFF,
            b"\x1b[2;1H",
            b"\x1b[3;9H",
            b"\x1b[6;1H",
            b"\x1b[2K",
            b"\x1b[J",
            b"\x1b[1L",
            b"\x1b[1M",
            b"\x1b[?1049h",
            b"\x1bM",
            b"\r\n",
            b"\r",
            b"\n",
        ]
    ),
)


@settings(max_examples=int(os.environ.get("FRAME_EXAMPLES", "150")), deadline=None)
@given(
    pieces=st.lists(PIECES, max_size=40),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=10),
)
def test_any_chunking_of_frames_gives_the_same_hits(pieces: list[bytes], cuts: list[int]) -> None:
    """Rules with named groups: the same hits, line for line; rules without: the
    same number of hits (they may come in an earlier chunk, never a later one
    than the one that ends the frame or, outside frames, draws them)."""
    stream = b"".join(pieces)
    whole = hits_of(stream)
    cut = hits_of(stream, [c % (len(stream) + 1) for c in cuts])
    assert [h for h in cut if h[1]] == [h for h in whole if h[1]]
    assert sorted(h[0] for h in cut if not h[1]) == sorted(h[0] for h in whole if not h[1])
