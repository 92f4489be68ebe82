"""How agentd and agentctl end on a failure, without click: one line on stderr
(``say_error``), the shell's code for SIGPIPE when the reader of our output went away
(``closed_pipe``). ``agentd.cli.common.OneLineErrors`` says so for the click commands;
a verb done without click imports it from here."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

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
