"""``agentctl state VERB TEXT``, the writes agents run after every step, without click.

Importing click costs more than the rest of such a write (about 70 ms of 170 on
a shared 2-core machine). So the ``agentctl`` console script (``ctlmain``)
tries this first: a plain ``state [--dir DIR] VERB TEXT [--dir DIR]`` of the
text verbs below (``done`` also with ``--verified HOW``), or ``state decide
TEXT --why WHY`` (with ``--files``, ``--alt``, ``--tag``), is done here, with
the same output, errors and exit codes as the click command. Anything else
(another verb or option, ``--help``, ``--``, a missing, extra or empty
argument, a decision that does not fit its line, an empty
``$AGENTD_STATE_DIR``) returns None, and the click command runs and says what
is wrong. ``tests/cli/test_statefast.py`` holds the two paths equal.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from agentd.memory.formats.decisions import Decision
    from agentd.memory.verbs.ops import StateDir

TEXT_VERBS = frozenset({"mission", "task", "next", "block", "handoff", "done"})
# The options each verb takes here besides --dir; decide's --files may repeat.
OPTIONS = {"done": ("--verified",), "decide": ("--why", "--files", "--alt", "--tag")}


class Write(NamedTuple):
    state_dir: str
    verb: str
    text: str
    options: dict[str, list[str]]  # option -> its values, in order

    def last(self, option: str, default: str = "") -> str:
        return self.options.get(option, [default])[-1]


def run(argv: Sequence[str]) -> int | None:
    """Do ``argv`` (agentctl's arguments) if it is a plain write; its exit code,
    or None for the click command to run."""
    w = _parse(argv)
    if w is None:
        return None
    from agentd.errors import AgentdError
    from agentd.memory.verbs.ops import open_dir

    now = time.time()
    files = w.options.get("--files", [])
    d = None
    if w.verb == "decide":
        try:
            d = decision(
                w.text, w.last("--why").strip(), files, w.last("--alt"), w.last("--tag"), now
            )
        except ValueError:  # a usage error, nothing written: the click command words it
            return None
    try:
        sd = open_dir(Path(w.state_dir))
        if d is not None:
            said = record_decision(sd, d, files, now)
        else:
            said = record_text(sd, w.verb, w.text, w.last("--verified") or None)
    except AgentdError as exc:
        print(f"agentctl: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # as the click command's usage error
        print(f"agentctl: {exc} (see: agentctl state {w.verb} --help)", file=sys.stderr)
        return 2
    print(said)
    return 0


def record_text(sd: StateDir, verb: str, text: str, verified: str | None = None) -> str:
    """Record ``text`` with a text verb (``done``: ``verified`` says how); what was done.
    The click commands call it too."""
    from agentd.memory.verbs import record

    how = verified.strip() if verified else None
    return record.write(sd, verb, text, time.time(), verified=how, cwd=Path.cwd())


def decision(text: str, why: str, files: Sequence[str], alt: str, tag: str, now: float) -> Decision:
    """The decision to record; ValueError (a usage error) when it does not fit its
    line, before anything is locked or written. The click command calls it too."""
    from agentd.memory.formats.decisions import Decision
    from agentd.memory.verbs import record
    from agentd.memory.verbs.ops import stamp

    d = Decision(
        at=stamp(now),
        decision=text,
        why=why,
        files=", ".join(files) or "-",
        tag=tag,
        alternatives=alt,
    )
    record.check_decision(d)
    return d


def record_decision(sd: StateDir, d: Decision, files: Sequence[str], now: float) -> str:
    """Record ``d`` with a snapshot of ``files``; what was done. The click command
    calls it too."""
    from agentd.memory.verbs import record

    name = record.decide(sd, d, list(files), now, Path.cwd())
    return f"decision recorded with {name}"


def _parse(argv: Sequence[str]) -> Write | None:
    """The plain write ``argv`` asks for, else None."""
    if len(argv) < 3 or argv[0] != "state":
        return None
    state_dir: str | None = None
    options: dict[str, list[str]] = {}
    words: list[str] = []
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        if arg.startswith("--") and "=" in arg:
            name, _, value = arg.partition("=")
        elif arg.startswith("-"):
            if not args or args[0].startswith("-"):
                return None  # --help, --, a flag, a value that looks like an option
            name, value = arg, args.pop(0)
        else:
            words.append(arg)
            continue
        if name == "--dir":
            state_dir = value
        elif words and name in OPTIONS.get(words[0], ()):
            options.setdefault(name, []).append(value)
        else:
            return None  # another option, or one before its verb
    if len(words) != 2 or not words[1].strip():
        return None
    verb, text = words[0], words[1].strip()
    if verb not in TEXT_VERBS and verb != "decide":
        return None
    if verb == "decide" and not options.get("--why", [""])[-1].strip():
        return None  # --why is required, and not empty
    if state_dir is None:
        state_dir = os.environ.get("AGENTD_STATE_DIR", ".agent")
    if not state_dir or os.path.isfile(state_dir):
        return None  # the click command says what is wrong
    return Write(state_dir, verb, text, options)
