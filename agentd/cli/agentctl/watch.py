"""``agentctl screen|top``: what the agents show now.

``screen`` prints a unit's current screen, drawn by agentd from the newest
output of its session as a terminal would show it. ``top`` is a full-screen
live view of every unit (``agentd.cli.agentctl.top``; its TUI library is loaded only
when it runs).
"""

from __future__ import annotations

from typing import Any

import click

from agentd.cli.agentctl.client import call, print_json
from agentd.cli.agentctl.params import complete_units, json_option, unit_name
from agentd.times import local


@click.command()
@click.argument("unit", callback=unit_name, shell_complete=complete_units)
@json_option
def screen(unit: str, as_json: bool) -> None:
    """Print UNIT's current screen as text (like `tmux capture-pane -p`).

    The screen of the unit's running session, else of its last one (kept
    across daemon restarts: why a unit failed), one line per row, trailing
    blanks cut; stderr says when the session has ended, and when the unit
    never ran. --json: {"rows": [...], "cursor": [row, col], "cols": N,
    "session": N, "running": bool, "ran": bool, "reason", "ended_at"}.
    """
    result = call("screen", unit=unit)
    if as_json:
        print_json(result)
        return
    rows = list(result["rows"])
    while rows and not rows[-1].strip():
        rows.pop()  # the blank rows under the last line drawn
    note = _note(unit, result)
    if note:
        blank = " (blank)" if not rows and result.get("ran", True) else ""
        click.echo(f"agentctl: {note.removesuffix(':') + blank if blank else note}", err=True)
    if rows:
        click.echo("\n".join(rows))


def _note(unit: str, shown: dict[str, Any]) -> str:
    """What to say of a screen that is not a running session's (empty: nothing)."""
    if shown.get("running", True):
        return ""
    if not shown.get("ran", True):
        return f"{unit} never ran: no screen yet (agentctl start {unit})"
    number = shown.get("session")
    if shown.get("kept") is False:
        return f"{unit} is not running; no screen of its session {number} was kept"
    how = str(shown.get("reason") or "")
    if shown.get("detail"):
        how += f": {shown['detail']}"
    when = f" at {local(shown['ended_at'])}" if shown.get("ended_at") else ""
    if not how:
        return f"{unit} is not running; its session {number} ended{when}"
    return f"{unit} is not running; its session {number} ended ({how}){when}; its last screen:"


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
