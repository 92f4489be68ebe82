"""How agentd and agentctl end on a failure, without click: one line on stderr
(``say_error``), the shell's code for SIGPIPE when the reader of our output went away
(``closed_pipe``). ``agentd.cli.common.OneLineErrors`` says so for the click commands;
``without_click`` for a verb that the console script does before it imports click
(``agentctl``'s state writes and plain ``status``, a plain ``agentd check``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import NoReturn

from agentd.errors import describe

SIGPIPE_EXIT = 128 + 13  # what a shell reports for a process ended by SIGPIPE
INTERRUPTED_EXIT = 128 + 2  # ... by SIGINT


def say_error(prog: str, message: str) -> None:
    """``prog: message`` on stderr: the one style of every error of agentd and agentctl."""
    first, *more = message.rstrip().splitlines() or [""]
    with_prog = first if first.startswith(f"{prog}: ") else f"{prog}: {first}"
    print("\n".join([with_prog, *more]), file=sys.stderr, flush=True)


def closed_pipe() -> NoReturn:
    """The reader of our output went away (``| head``): stop quietly, with the code a
    shell gives a process ended by SIGPIPE. Python's own flush at exit would fail
    again, so stdout points at /dev/null from here on."""
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), sys.stdout.fileno())
    raise SystemExit(SIGPIPE_EXIT)


def without_click(prog: str, verb: Callable[[], int | None]) -> int | None:
    """``verb()``'s exit code (None: it left the command to click), ending as
    ``OneLineErrors`` ends a click command: an unexpected exception said in one line,
    exit 1 (``AGENTD_DEBUG=1``: its traceback); a closed pipe quietly, 141; Ctrl-C
    with click's empty line, 130."""
    try:
        code = verb()
        if code is not None:
            sys.stdout.flush()  # here, where a closed pipe (`| head`) can still be caught
    except BrokenPipeError:
        closed_pipe()
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return INTERRUPTED_EXIT
    except Exception as exc:
        if os.environ.get("AGENTD_DEBUG"):
            raise
        say_error(prog, describe(exc))
        return 1
    return code
