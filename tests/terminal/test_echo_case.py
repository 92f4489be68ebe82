"""The echo of injected text is the text as typed: a line the agent prints in other
case is its own, even where the bootstrap holds its words (a one-word sentinel
`GO` after a bootstrap saying the last session ended by `sentinel:go`)."""

from __future__ import annotations

from agentd.terminal.echo import EchoFilter


def test_a_line_in_other_case_is_not_the_echo_of_the_bootstrap() -> None:
    echo = EchoFilter()
    echo.expect(
        "# agentd bootstrap: matches, session 2\n"
        "The previous session ended: `sentinel:go` (its output matched the sentinel 'go').\n"
    )
    assert echo.consume("GO") == (False, None)
    assert not echo.peek("GO")
    # the echo itself still is echo
    assert echo.consume("# agentd bootstrap: matches, session 2")[0]
    assert echo.consume("The previous session ended: `sentinel:go`")[0]
