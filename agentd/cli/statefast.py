"""``agentctl state VERB TEXT``, the writes agents run after every step, without click.

Importing click costs more than the rest of such a write (about 70 ms of 170 on
a shared 2-core machine). So the ``agentctl`` console script (``ctlmain``)
tries this first: a plain ``state [--dir DIR] VERB TEXT [--dir DIR]`` of the
text verbs below (``done`` also with ``--verified HOW``) is done here, with the
same output, errors and exit codes as the click command. Anything else (another
verb or option, ``--help``, ``--``, a missing, extra or empty argument, an
empty ``$AGENTD_STATE_DIR``) returns None, and the click command runs and says
what is wrong. ``tests/cli/test_statefast.py`` holds the two paths equal.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentd.memory.ops import StateDir

TEXT_VERBS = frozenset({"mission", "task", "next", "block", "handoff", "done"})


def run(argv: Sequence[str]) -> int | None:
    """Do ``argv`` (agentctl's arguments) if it is a plain text write; its exit code,
    or None for the click command to run."""
    parsed = _parse(argv)
    if parsed is None:
        return None
    state_dir, verb, text, verified = parsed
    from agentd.errors import AgentdError, describe
    from agentd.memory.ops import open_dir

    try:
        said = record_text(open_dir(Path(state_dir)), verb, text, verified)
    except AgentdError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # as the click command's usage error
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # as OneLineErrors: one line, never a traceback
        if os.environ.get("AGENTD_DEBUG"):
            raise
        print(f"Error: {describe(exc)}", file=sys.stderr)
        return 1
    print(said)
    return 0


def record_text(sd: StateDir, verb: str, text: str, verified: str | None = None) -> str:
    """Record ``text`` with a text verb (``done``: ``verified`` says how); what was done.
    The click commands call it too."""
    from agentd.memory import record

    how = verified.strip() if verified else None
    return record.write(sd, verb, text, time.time(), verified=how, cwd=Path.cwd())


def _parse(argv: Sequence[str]) -> tuple[str, str, str, str | None] | None:
    """(state dir, verb, text, --verified) of a plain text write, else None."""
    if len(argv) < 3 or argv[0] != "state":
        return None
    state_dir: str | None = None
    verified: str | None = None
    words: list[str] = []
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        if arg in ("--dir", "--verified") and args:
            value = args.pop(0)
        elif arg.startswith(("--dir=", "--verified=")):
            arg, _, value = arg.partition("=")
        elif arg.startswith("-"):
            return None  # --help, --, another option, a text that looks like one
        else:
            words.append(arg)
            continue
        if arg == "--dir":
            state_dir = value
        elif words[:1] == ["done"]:
            verified = value
        else:
            return None  # --verified belongs to done, after it
    if len(words) != 2 or words[0] not in TEXT_VERBS or not words[1].strip():
        return None
    if state_dir is None:
        state_dir = os.environ.get("AGENTD_STATE_DIR", ".agent")
    if not state_dir or os.path.isfile(state_dir):
        return None  # the click command says what is wrong
    return state_dir, words[0], words[1].strip(), verified
