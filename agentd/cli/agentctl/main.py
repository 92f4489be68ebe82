"""The ``agentctl`` console script: what agents and people run most, without click
first (the state writes, ``statefast``; a plain ``status``, ``ctl_status``);
everything else through the click group (``agentctl``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def main() -> None:
    argv = sys.argv[1:]
    try:
        code = _without_click(argv)
        if code is not None:
            sys.stdout.flush()  # here, where a closed pipe (`| head`) can still be caught
    except BrokenPipeError:
        code = _closed_pipe()
    except Exception as exc:  # as OneLineErrors does for the click commands
        if os.environ.get("AGENTD_DEBUG"):
            raise
        from agentd.errors import describe

        print(f"agentctl: {describe(exc)}", file=sys.stderr)
        code = 1
    if code is not None:
        raise SystemExit(code)
    from agentd.cli.agentctl.group import main as click_main

    click_main()


def _closed_pipe() -> int:
    """As ``agentd.cli.common.closed_pipe`` (not imported: it loads click)."""
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), sys.stdout.fileno())
    return 128 + 13


def _without_click(argv: Sequence[str]) -> int | None:
    """The exit code of ``argv`` done here, or None for the click group to do it."""
    if list(argv) in (["status"], ["status", "--json"]):
        from agentd.cli.agentctl.status import show

        return show([], as_json=len(argv) == 2)
    from agentd.cli.agentctl.statefast import run

    return run(argv)
