"""``agentctl screen|top``: what the agents show now.

``screen`` prints a unit's current screen, drawn by agentd from the newest
output of its session as a terminal would show it. ``top`` is a full-screen
live view of every unit (``agentd.cli.agentctl.top``; its TUI library is loaded only
when it runs).
"""

from __future__ import annotations

import click

from agentd.cli.agentctl.client import call, print_json
from agentd.cli.agentctl.params import json_option, unit_name


@click.command()
@click.argument("unit", callback=unit_name)
@json_option
def screen(unit: str, as_json: bool) -> None:
    """Print UNIT's current screen as text (like `tmux capture-pane -p`).

    The screen of the unit's last session, running or not, one line per row,
    trailing blanks cut. --json: {"rows": [...], "cursor": [row, col],
    "cols": N, "session": N}.
    """
    result = call("screen", unit=unit)
    if as_json:
        print_json(result)
    else:
        click.echo("\n".join(result["rows"]))


@click.command()
def top() -> None:
    """A full-screen live view of all units; keys start, stop, restart and attach.

    The table follows the units' events as they happen; output rates and each
    unit's screen line are refreshed every few seconds.
    """
    import sys

    from agentd.cli.agentctl.client import fail

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail(
            "top needs a terminal: "
            f"{'stdout' if sys.stdin.isatty() else 'stdin'} is not one. From a script "
            "use `agentctl status` (or `agentctl status --json`), and `agentctl events -f` "
            "to follow what happens"
        )
    from agentd.cli.agentctl.top import run_top

    run_top()
