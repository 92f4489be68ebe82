"""Unit files on disk: find them, refuse unsafe ones, load them with line numbers.

The YAML is read with the line of every key (``agentd.config.yamllines``) and
pydantic's errors are mapped back to ``file:line: key.path: message``
(``agentd.config.problems``). A unit file can run any command as the
daemon's user, so one that others could write, or that someone else owns, is
refused before it is parsed, and so is a file over ``MAX_UNIT_BYTES`` (1 MiB):
parsing a huge YAML document takes seconds and hundreds of megabytes.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from pydantic import ValidationError

from agentd.config.names import RESERVED_PREFIX, UNIT_NAME, reserved
from agentd.config.problems import validation_problems
from agentd.config.unit import Unit
from agentd.config.yamllines import Lines, read_yaml
from agentd.errors import PathError, UnitError

MAX_UNIT_BYTES = 1024 * 1024


class UnitInvalid(UnitError):
    """Several problems in one unit file; ``str`` lists them one per line."""

    def __init__(self, problems: list[UnitError]) -> None:
        self.problems = problems
        first = problems[0]
        super().__init__(first.message, file=first.file, line=first.line, key=first.key)

    def __str__(self) -> str:
        return "\n".join(str(problem) for problem in self.problems)


# --- finding unit files ----------------------------------------------------------


def unit_paths(units_dir: Path) -> list[Path]:
    """The unit files in ``units_dir``, sorted; hidden files (editor locks) skipped."""
    if not units_dir.is_dir():
        return []
    try:
        found = [
            p
            for p in units_dir.iterdir()
            if p.suffix in (".yaml", ".yml") and not p.name.startswith(".") and p.is_file()
        ]
    except OSError as exc:
        raise PathError(f"cannot list the units dir {units_dir}: {exc.strerror}") from None
    return sorted(found)


def resolve_unit_arg(arg: str, units_dir: Path) -> Path:
    """The file ``agentd run ARG`` means: a path, or a unit name in ``units_dir``."""
    path = Path(arg).expanduser()
    if path.is_file() or "/" in arg or arg.endswith((".yaml", ".yml")):
        if not path.exists():
            raise UnitError("no such unit file", file=path)
        if not path.is_file():
            raise UnitError("not a unit file (not a regular file)", file=path)
        return path
    for suffix in (".yaml", ".yml"):
        candidate = units_dir / f"{arg}{suffix}"
        if candidate.is_file():
            return candidate
    raise UnitError(f"no unit named {arg} in {units_dir} (looked for {arg}.yaml)")


# --- permissions -------------------------------------------------------------


def check_permissions(path: Path) -> None:
    """Refuse a unit file others may write or someone else owns (root included)."""
    try:
        st = path.stat()
    except OSError as exc:
        raise UnitError(f"cannot read: {exc.strerror}", file=path) from None
    _refuse_unsafe(st, path)


def _refuse_unsafe(st: os.stat_result, path: Path) -> None:
    """Raise if ``st`` shows a file others may write or someone else owns.

    Being root changes nothing: a root daemon running a world-writable unit
    would run anyone's command as root.
    """
    mode = stat.S_IMODE(st.st_mode)
    writable = [
        who for who, bit in (("group", stat.S_IWGRP), ("world", stat.S_IWOTH)) if mode & bit
    ]
    if writable:
        raise UnitError(
            f"mode {mode:04o} is {'- and '.join(writable)}-writable; run: chmod go-w {path}",
            file=path,
        )
    me = os.geteuid()
    if st.st_uid not in (me, 0):
        raise UnitError(
            f"owned by uid {st.st_uid}, not by this user (uid {me}) or root;"
            f" run: chown {me} {path}",
            file=path,
        )


def _refuse_unsafe_dir(path: Path) -> None:
    """Raise if others may replace the files in ``path``'s directory (the units dir):
    one could put there a link to any file of ours that reads as a unit. A sticky
    directory (/tmp) lets nobody replace another's file."""
    directory = path.parent
    st = os.stat(directory)
    mode = stat.S_IMODE(st.st_mode)
    if mode & (stat.S_IWGRP | stat.S_IWOTH) and not mode & stat.S_ISVTX:
        raise UnitError(
            f"its directory {directory} is mode {mode:04o}, writable by others, "
            f"who could replace it; run: chmod go-w {directory}",
            file=path,
        )
    me = os.geteuid()
    if st.st_uid not in (me, 0):
        raise UnitError(
            f"its directory {directory} is owned by uid {st.st_uid}, not by this "
            f"user (uid {me}) or root; run: chown {me} {directory}",
            file=path,
        )


# --- loading -----------------------------------------------------------------


def load_unit(path: Path, *, check_permissions: bool = True) -> Unit:
    """The unit in ``path``, named after the file; UnitError says what is wrong where."""
    return read_unit(path, check_permissions=check_permissions)[0]


def read_unit(
    path: Path, *, check_permissions: bool = True, probe: bool = False
) -> tuple[Unit, Lines]:
    """``load_unit``, and the line of each key path in the file (for ``agentd check``).
    ``probe``: a workdir that does not exist is let through, so that ``check`` can
    find the problems behind it (such a unit must not run)."""
    _check_name(path.stem, path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the open
            raise UnitError("not a regular file", file=path)
        with path.open("rb") as handle:  # check what was opened: no swap after the check
            st = os.fstat(handle.fileno())
            if check_permissions:
                _refuse_unsafe(st, path)
                _refuse_unsafe_dir(path)
            _refuse_large(st.st_size, path)
            raw = handle.read(MAX_UNIT_BYTES + 1)
        _refuse_large(len(raw), path)  # it grew since
    except OSError as exc:
        raise UnitError(f"cannot read: {exc.strerror or exc}", file=path) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise UnitError("not UTF-8 text", file=path, line=line) from None
    return _validate(text, str(path), path.stem, Path(os.path.abspath(path)), probe=probe)


def _refuse_large(size: int, path: Path) -> None:
    if size > MAX_UNIT_BYTES:
        raise UnitError(
            f"{size} bytes: over the {MAX_UNIT_BYTES // 1024} KiB a unit file may "
            "hold (refused unread); is this the right file?",
            file=path,
        )


def parse_unit(text: str, *, file: str, name: str) -> Unit:
    """The unit in ``text`` as if read from ``file`` (no file access but the workdir)."""
    _check_name(name, file)
    return _validate(text, file, name, Path(os.path.abspath(file)))[0]


def _check_name(name: str, file: Path | str) -> None:
    if not re.fullmatch(UNIT_NAME, name):
        raise UnitError(
            f"{name!r} is not a valid unit name (the file name without .yaml must match"
            f" {UNIT_NAME}); rename the file",
            file=file,
        )
    if reserved(name):
        raise UnitError(
            f"{name!r} is reserved: names that begin with {RESERVED_PREFIX!r} are agentd's own "
            "files in the logs dir (agentd.jsonl...); rename the file",
            file=file,
        )


def _validate(
    text: str, file: str, name: str, source: Path, *, probe: bool = False
) -> tuple[Unit, Lines]:
    data, lines = read_yaml(text, file)
    if not isinstance(data, dict):
        raise UnitError(
            "a unit file must be a mapping of keys (key: value)", file=file, line=lines[()]
        )
    if "source" in data:
        raise UnitError("unknown key", file=file, line=lines[("source",)], key="source")
    if "name" in data and data["name"] != name:
        line = lines.get(("name",), 1)
        raise UnitError(
            f"{data['name']!r} differs from the file name; a unit is named after its file"
            " (remove this key)",
            file=file,
            line=line,
            key="name",
        )
    try:
        unit = Unit.model_validate(
            {**data, "name": name, "source": source}, context={"probe": True} if probe else None
        )
        return unit, lines
    except ValidationError as exc:
        problems = validation_problems(exc, data, lines, file)
    raise problems[0] if len(problems) == 1 else UnitInvalid(problems)
