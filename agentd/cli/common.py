"""What ``agentd`` and ``agentctl`` share: one-line errors, the attached terminal's
size, and transcript text for people.

- ``OneLineErrors``: every failure of a command is one line on stderr, never a
  traceback, in one style: ``agentctl: what is wrong`` (``agentd: ...``), exit
  1; a usage error too (``agentctl: no such option: --x (see: agentctl logs
  --help)``, exit 2), not click's three-line usage block. Commands turn the
  errors they expect into messages themselves; this group class is the net
  under them: an ``AgentdError`` says its message, an ``OSError`` says what
  failed on which path, anything else is an internal error in one line
  (``AGENTD_DEBUG=1`` lets the traceback through, for a bug report). Output
  into a pipe that closed (``agentctl logs | head -1``) ends quietly with the
  shell's code for SIGPIPE (141), as ``journalctl | head`` does.
- ``terminal_size``: the size of the terminal an attached person watches from
  (``agentd run -i``, ``agentctl attach``): what the agent's pty is given while
  they watch.
- ``clean``: a transcript as a person reads it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from agentd.cli.oneline import INTERRUPTED_EXIT, closed_pipe, say_error
from agentd.config.ptysize import bounded
from agentd.errors import describe


class ClosedPipe(Exception):
    """Our stdout's reader went away; not an OSError, so click's ``main`` (which turns
    EPIPE into exit 1) lets it through to ``OneLineErrors.main``."""


class OneLineErrors(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise ClosedPipe() from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            if os.environ.get("AGENTD_DEBUG"):
                raise
            raise click.ClickException(describe(exc)) from None

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """click's ``main``, with failures said in one line (``standalone_mode``)."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        prog = self.name or "agentd"  # the name errors begin with, however it was run
        try:
            try:
                code = super().main(args, prog_name, complete_var, False, **extra)
            except SystemExit as exc:  # a command's own exit code
                code = exc.code
            sys.stdout.flush()  # here, where a closed pipe can still be caught
        except (BrokenPipeError, ClosedPipe):
            closed_pipe()
        except click.UsageError as exc:
            hint = exc.ctx.command_path if exc.ctx is not None else prog
            say_error(prog, f"{exc.format_message().rstrip('.')} (see: {hint} --help)")
            code = exc.exit_code
        except click.ClickException as exc:
            say_error(prog, exc.format_message())
            code = exc.exit_code
        except click.Abort:  # Ctrl-C (click turns KeyboardInterrupt into Abort)
            code = INTERRUPTED_EXIT
        sys.exit(code if isinstance(code, int) or code is None else str(code))


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


color_option = click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour states and outcomes: auto colours a terminal, unless NO_COLOR is set.",
)
