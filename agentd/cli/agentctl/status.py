"""``agentctl status``, without click: the console script (``ctlmain``) runs a
plain ``agentctl status`` or ``agentctl status --json`` here (importing click
costs more than the rest of it), and the click command calls ``show`` too.

With unit names it is a detail view per unit, as ``systemctl status`` shows
one (``describe``: the unit file, the effective command, places, main pid
and the size of its process tree, the session and why it started, restarts,
today's budget use, the failure's reason, the transcript's last lines);
without, or with ``table``, the table of every unit.
"""

from __future__ import annotations

import sys
import time

from agentd.cli.agentctl.client import call_units, every_status, print_json
from agentd.cli.agentctl.output import details, status_rows
from agentd.cli.colour import Painter, wanted
from agentd.paths import Paths

DETAIL_LINES = 10  # of the transcript, in the detail view


def show(
    units: list[str],
    as_json: bool,
    *,
    table: bool = False,
    lines: int = DETAIL_LINES,
    color: str = "auto",
) -> int:
    """Print the status of ``units`` (every unit when empty); the exit code: 3 when
    a named unit is not running (LSB), else 0. Failures exit with their own code."""
    painter = Painter(wanted(color, sys.stdout))
    if units and not table:
        found = call_units("describe", units, lines=lines)
        if as_json:
            print_json(found)
        else:
            print("\n\n".join(details(d, time.time(), painter) for d in found))
        return _code(units, found)
    result = call_units("status", units) if units else every_status()
    if as_json:
        print_json(result)
    elif result:
        print(status_rows(result, time.time(), painter))
    else:
        print(f"no units loaded (put unit files in {Paths.resolve().units})")
    return _code(units, result)


def _code(units: list[str], found: list[dict[str, object]]) -> int:
    return 3 if units and any(s["state"] != "running" for s in found) else 0
