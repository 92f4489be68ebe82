"""What ``agentd`` and ``agentctl`` share: one-line errors, the attached terminal's
size, and transcript text for people.

- ``OneLineErrors``: every failure of a command is one line on stderr and exit
  1, never a traceback. Commands turn the errors they expect into messages
  themselves; this group class is the net under them: an ``AgentdError`` says
  its message, an ``OSError`` says what failed on which path, anything else is
  an internal error in one line (``AGENTD_DEBUG=1`` lets the traceback through,
  for a bug report).
- ``terminal_size``: the size of the terminal an attached person watches from
  (``agentd run -i``, ``agentctl attach``): what the agent's pty is given while
  they watch.
- ``clean``: a transcript as a person reads it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from agentd.config.ptysize import bounded
from agentd.errors import describe


class OneLineErrors(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            if os.environ.get("AGENTD_DEBUG"):
                raise
            raise click.ClickException(describe(exc)) from None


def terminal_size() -> tuple[int, int] | None:
    """(cols, rows) of the terminal on stdin and stdout, within the bounds of a
    unit's pty; None when either is not a terminal."""
    if not (os.isatty(sys.stdin.fileno()) and os.isatty(sys.stdout.fileno())):
        return None
    size = os.get_terminal_size(sys.stdout.fileno())
    return bounded(size.columns), bounded(size.lines)


def clean(text: str) -> str:
    """What a person reads: escape sequences removed, redraws as line breaks."""
    from agentd.terminal.ansi import strip_ansi

    return "".join(f"{line}\n" for line in strip_ansi(text))
