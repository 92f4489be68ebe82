"""The ``agentd`` console script: ``agentd --version`` and a plain ``agentd check``
(``agentd.cli.agentd.checkfast``) answered without click, as ``agentctl``'s script
answers its state verbs; every other command through the click group
(``agentd.cli.agentd.main``).
"""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv == ["--version"]:
        from agentd import __version__

        print(f"agentd, version {__version__}")
        raise SystemExit(0)
    if argv[:1] == ["check"]:
        from agentd.cli.agentd import checkfast
        from agentd.cli.oneline import without_click

        code = without_click("agentd", lambda: checkfast.run(argv))
        if code is not None:
            raise SystemExit(code)
    from agentd.cli.agentd.main import main as click_main

    click_main()
