"""The ``agentctl`` console script: the state writes agents run after every step
first, without click (``statefast``); everything else through the click group
(``agentctl``)."""

from __future__ import annotations

import sys


def main() -> None:
    from agentd.cli.statefast import run

    code = run(sys.argv[1:])
    if code is not None:
        sys.stdout.flush()
        raise SystemExit(code)
    from agentd.cli.agentctl import main as click_main

    click_main()
