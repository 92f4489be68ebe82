"""What of an agent's output reaches an attached person's terminal (issue 27): `attach`
relayed clipboard writes (OSC 52) and terminal queries, whose answers are typed into
the session as if by the person."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentd.terminal.relay import TerminalFilter
from tests.cli.test_watch import serve_units
from tests.support import Served, ctl_pty, detach

DROPPED = [
    b"\x1b]52;c;aGVsbG8=\x07",  # clipboard write
    b"\x1b]52;c;aGVsbG8=\x1b\\",
    b"\x1b]52;p;?\x07",  # clipboard read
    b"\x1b]11;?\x07",  # background colour query
    b"\x1b]4;1;?\x1b\\",  # palette query
    b"\x1b]10;#ffffff\x07",  # colour set
    b"\x1b]1337;File=inline=1:AAAA\x07",
    b"\x1b[6n",  # cursor position report
    b"\x1b[5n",
    b"\x1b[?6n",
    b"\x1b[c",  # device attributes
    b"\x1b[0c",
    b"\x1b[>c",
    b"\x1b[=c",
    b"\x1b[>q",  # XTVERSION
    b"\x1b[21t",  # title report
    b"\x1b[14t",  # window size in pixels
    b"\x1b[3;0;0t",  # move the window
    b"\x1b[?2026$p",  # DECRQM
    b"\x1b[?u",  # kitty keyboard query
    b"\x1bP$qm\x1b\\",  # DECRQSS
    b"\x1bP+q544e\x1b\\",  # XTGETTCAP
    b"\x1bPtmux;\x1b\x1b]52;c;eA==\x07\x1b\\",  # a multiplexer's pass-through
    b"\x1b_Gf=100;AAAA\x1b\\",  # kitty graphics (APC)
    b"\x1bZ",  # DECID
    b"\x05",  # ENQ: answerback
    b"\xc2\x9b6n",  # an 8-bit CSI
]
KEPT = [
    b"plain text \xe2\x94\x80\xc3\xa9 \xf0\x9f\x98\x80\r\n",
    b"\x1b[31mred\x1b[0m",
    b"\x1b[2J\x1b[H\x1b[10;5H",
    b"\x1b[?25l\x1b[?1049h\x1b[?2004h",
    b"\x1b]0;my title\x07",
    b"\x1b]2;t\x1b\\",
    b"\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\",
    b"\x1b[22;0t\x1b[23;0t",
    b"\x1b[2 q",  # cursor shape
    b"\x1b(B\x1b7\x1b8\x1bM",
    b"\x1b[>4;1m",  # modifyOtherKeys
]


@pytest.mark.parametrize("sequence", DROPPED)
def test_queries_and_clipboard_writes_are_dropped(sequence: bytes) -> None:
    assert TerminalFilter().feed(b"a" + sequence + b"b") == b"ab"


@pytest.mark.parametrize("sequence", KEPT)
def test_what_draws_is_kept(sequence: bytes) -> None:
    assert TerminalFilter().feed(sequence) == sequence


STREAM = b"".join(part for pair in zip(KEPT, DROPPED, strict=False) for part in pair) + b"".join(
    KEPT[len(DROPPED) :]
)
EXPECTED = b"".join(KEPT)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_cut_of_the_stream_filters_alike(cuts: list[int]) -> None:
    f = TerminalFilter()
    points = sorted(set(cuts))
    pieces = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    assert b"".join(f.feed(p) for p in pieces) == EXPECTED


def test_a_long_clipboard_write_is_skipped_without_being_held() -> None:
    f = TerminalFilter()
    out = f.feed(b"x\x1b]52;c;" + b"A" * 100_000)
    assert out == b"x" and f._carry == b""  # skipped as it comes
    assert f.feed(b"A" * 100_000 + b"\x07y") == b"y"


@pytest.mark.slow
def test_attach_relays_no_clipboard_write_and_no_query(dhome: Path, serve: list[Served]) -> None:
    hostile = r"\x1b]52;c;aGk=\x07\x1b[6n\x1b[21t\x1b]11;?\x07\x1bP+q544e\x1b\\AFTER"
    d = serve_units(dhome, serve, {"t": "ready> "}, t=["prompt:ready> ", f"out:{hostile}", "wait"])
    child = ctl_pty(dhome, "attach", "t")
    try:
        child.expect("attached to t")
        child.expect("ready>", timeout=5)
        child.send("go\r")
        child.expect("AFTER")
        seen = child.before
        assert b"GOT:go" in seen
        for bad in (b"\x1b]52", b"\x1b[6n", b"\x1b[21t", b"\x1b]11;?", b"\x1bP+q"):
            assert bad not in seen, bad
        detach(child, "t")
    finally:
        child.close(force=True)
    assert d.status("t")["state"] == "running"
