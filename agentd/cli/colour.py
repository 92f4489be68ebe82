"""Colour on a terminal, by what a word means: a unit's state, a session's outcome,
an event's level (``--color auto|always|never``).

``auto`` (the default) colours only a terminal, and never when ``NO_COLOR`` is
set to anything (no-color.org) or ``TERM`` is ``dumb``; ``always`` colours a
pipe too (``| less -R``); ``never`` never. The same colours as ``agentctl top``
and the dashboard: green runs, blue is done, yellow waits, red needs a person.
No click here: the plain ``agentctl status`` (``agentd.cli.agentctl.main``)
runs without it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TextIO

CHOICES = ("auto", "always", "never")

GREEN, BLUE, CYAN, YELLOW, RED, DIM, BOLD = "32", "34", "36", "33", "31", "2", "1"
STATES: Mapping[str, str] = {
    "running": GREEN,
    "starting": CYAN,
    "stopping": CYAN,
    "backoff": YELLOW,
    "paused": YELLOW,
    "paused-by-signal": YELLOW,
    "done": BLUE,
    "failed": f"{BOLD};{RED}",
    "stalled": f"{BOLD};{RED}",
    "invalid": f"{BOLD};{RED}",
    "conflict": f"{BOLD};{RED}",
    "stopped": DIM,
}
OUTCOMES: Mapping[str, str] = {
    "running": GREEN,
    "done": BLUE,
    "handoff": CYAN,
    "context": CYAN,
    "manual": CYAN,
    "usage-limited": YELLOW,
    "timeout": YELLOW,
    "idle": YELLOW,
    "crashed": RED,
    "verify-failed": YELLOW,  # it claimed completion too early: refused, a new session
    "stalled": RED,
    "stopped": DIM,
}
LEVELS: Mapping[str, str] = {"error": RED, "warning": YELLOW, "ok": GREEN}


def wanted(choice: str | None, stream: TextIO, env: Mapping[str, str] | None = None) -> bool:
    """Colour what goes to ``stream``? ``choice``: auto (None too), always or never."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    env = os.environ if env is None else env
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a real stream
        return False


class Painter:
    """Paints words by their meaning, or leaves them alone (``on`` false)."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def paint(self, text: str, code: str | None) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.on and code and text else text

    def state(self, text: str, state: str | None = None) -> str:
        return self.paint(text, STATES.get(state or text.strip()))

    def outcome(self, text: str, outcome: str | None = None) -> str:
        return self.paint(text, OUTCOMES.get(outcome or text.strip()))

    def level(self, text: str, level: str | None = None) -> str:
        return self.paint(text, LEVELS.get(level or text.strip()))

    def bold(self, text: str) -> str:
        return self.paint(text, BOLD)

    def dim(self, text: str) -> str:
        return self.paint(text, DIM)
