"""The echo filter looks only a little ahead of what was already echoed.

The bootstrap agentd types often mentions the CLI's own sentinel ("if you see
Compacting conversation, save first"). Its echo must not fire the sentinel,
but the agent's real "Compacting conversation" must, even while the part of
the bootstrap that mentions it was never echoed (the TUI folded the paste
away, or has not drawn that far): only text close after the echo cursor can be
taken for echo.
"""

from __future__ import annotations

import re

from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Hit, Rule

COMPACTING = Rule("compacting", re.compile("Compacting conversation"))
FILLER = "".join(
    f"- step {i}: port the invoice helper number {i} to the ledger API.\n" for i in range(40)
)
BOOTSTRAP = (
    "# agentd bootstrap: unit shop, session 2\n"
    "Read the state files first.\n"
    f"{FILLER}"
    "If you see Compacting conversation, stop and save your state.\n"
)


def names(hits: list[Hit]) -> list[str]:
    return [h.rule.name for h in hits]


def test_a_real_sentinel_fires_although_the_unechoed_bootstrap_mentions_it_further_on() -> None:
    m = LineMatcher([COMPACTING])
    m.expect_echo(BOOTSTRAP)
    # the TUI shows the first line of the paste, then folds the rest away
    assert m.feed(b"> # agentd bootstrap: unit shop, session 2\r\n") == []
    assert m.feed(b"  [Pasted text #1 +43 lines]\r\n") == []
    assert names(m.feed(b"\xe2\x9c\xbb Compacting conversation\xe2\x80\xa6\r\n")) == ["compacting"]


def test_the_same_sentinel_a_little_ahead_of_the_echo_is_taken_for_echo() -> None:
    """The other side of the trade-off: the mention close after the cursor is echo."""
    m = LineMatcher([COMPACTING])
    m.expect_echo("Read the state files first.\nIf you see Compacting conversation, save.\n")
    assert m.feed(b"> Read the state files first.\r\n") == []
    assert m.feed(b"  If you see Compacting conversation, save.\r\n") == []


def test_a_sentinel_fires_at_once_when_nothing_of_the_bootstrap_was_echoed() -> None:
    m = LineMatcher([COMPACTING])
    m.expect_echo(BOOTSTRAP)
    assert names(m.feed(b"Compacting conversation\r\n")) == ["compacting"]
