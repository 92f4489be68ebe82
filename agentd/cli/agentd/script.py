"""The ``agentd`` console script: ``agentd --version`` answered without click (as
``agentctl``'s script answers its state verbs), every other command through the
click group (``agentd.cli.agentd.main``)."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from agentd import __version__

        print(f"agentd, version {__version__}")
        raise SystemExit(0)
    from agentd.cli.agentd.main import main as click_main

    click_main()
