"""``agentctl status``, without click: the console script (``ctlmain``) runs a
plain ``agentctl status`` or ``agentctl status --json`` here (importing click
costs more than the rest of it), and the click command calls ``show`` too."""

from __future__ import annotations

import time

from agentd.cli.agentctl.client import call_units, every_status, print_json
from agentd.cli.agentctl.output import status_rows
from agentd.paths import Paths


def show(units: list[str], as_json: bool) -> int:
    """Print the status of ``units`` (every unit when empty); the exit code: 3 when
    a named unit is not running (LSB), else 0. Failures exit with their own code."""
    result = call_units("status", units) if units else every_status()
    if as_json:
        print_json(result)
    elif result:
        print(status_rows(result, time.time()))
    else:
        print(f"no units loaded (put unit files in {Paths.resolve().units})")
    return 3 if units and any(s["state"] != "running" for s in result) else 0
