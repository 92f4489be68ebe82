"""A plain ``agentd check`` without click, for the console script
(``agentd.cli.agentd.script``), as ``agentctl``'s does its state writes
(``agentd.cli.agentctl.statefast``).

``check`` is what people run in a loop while editing a unit; click is about a
tenth of its time. ``agentd check [--json] [--color COLOR] [--] FILE...`` (or no
FILE: the units dir) is done here, through the click command's own ``run``, with
its output, errors and exit codes. Anything else (``--home``, ``--help``, an
unknown option or choice, a path click would refuse, shell completion, a stream
click would re-encode) returns None: the click command runs and says what is
wrong. ``tests/cli/test_checkfast.py`` holds the two paths equal.
"""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from agentd.cli.colour import CHOICES


class Check(NamedTuple):
    files: list[Path]
    in_json: bool
    color: str


def run(argv: Sequence[str]) -> int | None:
    """Do ``argv`` (agentd's arguments) if it is a plain check: its exit code, or None
    for the click command to run."""
    plain = plain_check(argv, os.environ)
    if plain is None:
        return None
    from agentd.cli.agentd import check
    from agentd.cli.oneline import say_error
    from agentd.paths import Paths

    try:
        return check.run(plain.files, Paths.resolve().units, plain.in_json, plain.color, _echo)
    except check.NothingToCheck as exc:  # the click command's usage error
        say_error("agentd", str(exc))
        return 1


def plain_check(argv: Sequence[str], env: Mapping[str, str]) -> Check | None:
    """``argv`` as a plain ``check`` this script does, or None for click."""
    if argv[:1] != ["check"] or not _plain_streams() or _completing(env):
        return None
    files, in_json, color, rest = [], False, "auto", iter(argv[1:])
    for arg in rest:
        if arg == "--":
            files += [Path(a) for a in rest]
        elif not arg.startswith("-"):
            files.append(Path(arg))
        elif arg == "--json":
            in_json = True
        elif arg == "--color":
            color = next(rest, "")
        elif arg.startswith("--color="):
            color = arg.removeprefix("--color=")
        else:
            return None
    home = env.get("AGENTD_HOME")  # --home's: click refuses a file too
    if home and (os.path.isfile(home) or _unreadable(home)):
        return None
    if color not in CHOICES or any(_unreadable(str(p)) for p in files):
        return None
    return Check(files, in_json, color)


def _echo(line: str, err: bool) -> None:
    print(line, file=sys.stderr if err else sys.stdout, flush=True)


def _unreadable(path: str) -> bool:
    """A path that exists but cannot be read (click.Path refuses it)."""
    return os.path.exists(path) and not os.access(path, os.R_OK)


def _plain_streams() -> bool:
    """stdout and stderr as ``click.echo`` writes to them (it re-wraps an ASCII stream)."""
    return all(
        stream is not None and not _ascii(getattr(stream, "encoding", None) or "ascii")
        for stream in (sys.stdout, sys.stderr)
    )


def _ascii(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name == "ascii"
    except LookupError:
        return False


def _completing(env: Mapping[str, str]) -> bool:
    """Shell completion asked for (click's ``_AGENTD_COMPLETE``, under any program name)."""
    return any(k.startswith("_") and k.endswith("_COMPLETE") and v for k, v in env.items())
