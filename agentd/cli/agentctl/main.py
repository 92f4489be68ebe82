"""The ``agentctl`` console script: what agents and people run most, without click
first (the state writes, ``statefast``; a plain ``status``, ``ctl_status``);
everything else through the click group (``agentctl``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from agentd.cli.oneline import without_click


def main() -> None:
    argv = sys.argv[1:]
    code = without_click("agentctl", lambda: _without_click(argv))
    if code is not None:
        raise SystemExit(code)
    from agentd.cli.agentctl.group import main as click_main

    click_main()


def _without_click(argv: Sequence[str]) -> int | None:
    """The exit code of ``argv`` done here, or None for the click group to do it."""
    if list(argv) in (["status"], ["status", "--json"]):
        from agentd.cli.agentctl.status import show

        return show([], as_json=len(argv) == 2)
    from agentd.cli.agentctl.statefast import run

    return run(argv)
