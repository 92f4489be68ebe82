"""An input box that shows the injected text as it arrives: one row drawn again
and again, longer each time.

A TUI may redraw its input row, in a synchronized update, each time more of a
paste arrives (Ink, which Claude Code and Gemini CLI draw with, redraws whole
rows). The row was echo at
every step: where its text was found in the injected text is kept with the row
(``Mark.echo_at``) and looked at first when the row is offered again, since the
echo cursor has moved past it by then. And once the row has grown, its shorter
form is not remembered as a redraw: the agent's own line with that text is not
echo.
"""

from __future__ import annotations

import re

import pytest

from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Hit, Rule

COMPACTING = Rule("compacting", re.compile("Compacting conversation"))
REAL = "\u273b Compacting conversation\u2026\r\n".encode()  # as Claude Code draws it


def frame(row: str) -> bytes:
    """The input row erased and written again, in one synchronized update."""
    return f"\x1b[?2026h\r\x1b[2K{row}\x1b[?2026l".encode()


def fed(m: LineMatcher, reads: list[bytes]) -> list[Hit]:
    """As a session reads: check_partial after each read, flush at the end."""
    hits: list[Hit] = []
    for data in reads:
        hits += m.feed(data) + m.check_partial()
    return hits + m.flush()


@pytest.mark.parametrize(
    "reads",
    [
        # the paste arriving in three pieces, the row redrawn after each
        [
            frame("> please watch for Compacting"),
            frame("> please watch for Compacting conversation"),
            frame("> please watch for Compacting conversation today"),
            b"\r\n",
        ],
        # a row left (LF), then drawn again from its start with more of the text,
        # the read ending inside it
        [
            b"> please watch for Compacting\r\n",
            b"\x1b[1A\r> please watch for Compacting conversation",
            b" today\r\n",
        ],
        # the same, all of the longer row in one read
        [
            b"> please watch for Compacting\r\n",
            b"\x1b[1A\r> please watch for Compacting conversation today\r\n",
        ],
    ],
    ids=["frames", "left-then-drawn", "left-then-written"],
)
def test_an_echo_row_drawn_again_longer_is_still_echo(reads: list[bytes]) -> None:
    m = LineMatcher([COMPACTING], cols=80, rows=12)
    m.expect_echo("please watch for Compacting conversation today and go on")
    assert fed(m, reads) == []
    assert [h.line for h in fed(m, [REAL])] == [REAL.decode().strip()]


def test_a_grown_echo_rows_shorter_form_is_not_a_redraw_the_agents_line_with_it_fires() -> None:
    """The input row showed "Compacting conversation" (a piece of the paste that
    begins with those words), then the whole paste. Later the agent prints
    "Compacting conversation…": the shorter form of the row is not remembered as
    echo, so that line is the agent's, and fires."""
    m = LineMatcher([COMPACTING], cols=80, rows=12)
    m.expect_echo("Compacting conversation is what you may see; then save your state first.")
    pasted = [
        frame("> Compacting conversation"),
        frame("> Compacting conversation is what you may see; then save your state first."),
        b"\r\n",
    ]
    assert fed(m, pasted) == []
    assert [h.line for h in fed(m, [REAL])] == [REAL.decode().strip()]
