"""The size of the terminal an attached person watches from (``agentd run -i``,
``agentctl attach``): what the agent's pty is given while they watch."""

from __future__ import annotations

import os
import sys

from agentd.config.ptysize import bounded


def terminal_size() -> tuple[int, int] | None:
    """(cols, rows) of the terminal on stdin and stdout, within the bounds of a
    unit's pty; None when either is not a terminal."""
    if not (os.isatty(sys.stdin.fileno()) and os.isatty(sys.stdout.fileno())):
        return None
    size = os.get_terminal_size(sys.stdout.fileno())
    return bounded(size.columns), bounded(size.lines)
