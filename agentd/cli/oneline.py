"""Every failure of a command is one line on stderr and exit 1, never a traceback.

Commands turn the errors they expect into messages themselves; this group
class is the net under them: an ``AgentdError`` says its message, an
``OSError`` says what failed on which path, anything else is an internal
error in one line (``AGENTD_DEBUG=1`` lets the traceback through, for a bug
report). Kept light: ``agentctl`` imports it on every call.
"""

from __future__ import annotations

import os
from typing import Any

import click

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
