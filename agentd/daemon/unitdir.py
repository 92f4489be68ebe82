"""The unit files of the units dir as values: which are valid, which are not and why.

A scan re-parses only the files whose stat changed since the last one (the
watcher's rescans); ``scan(force=True)`` re-parses all (SIGHUP, ``agentctl
reload``). One bad file never stops the others, and a name defined twice is
an error of the second file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentd.config.unit import Unit
from agentd.config.unitfile import load_unit, unit_paths
from agentd.errors import UnitError


@dataclass
class Scan:
    units: dict[str, Unit] = field(default_factory=dict)
    errors: dict[Path, UnitError] = field(default_factory=dict)  # every invalid file now
    fresh: list[Path] = field(default_factory=list)  # the invalid ones parsed this time


class UnitDir:
    """The unit files of a directory as values; a scan re-parses only changed files."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._cache: dict[Path, tuple[tuple[int, ...], Unit | UnitError]] = {}

    def scan(self, *, force: bool = False) -> Scan:
        out = Scan()
        cache: dict[Path, tuple[tuple[int, ...], Unit | UnitError]] = {}
        for path in unit_paths(self.directory):
            try:
                st = path.stat()
            except OSError:
                continue  # deleted meanwhile
            sig = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode, st.st_uid)
            cached = self._cache.get(path)
            fresh = force or cached is None or cached[0] != sig
            result = _load(path) if fresh or cached is None else cached[1]
            cache[path] = (sig, result)
            if isinstance(result, Unit) and result.name in out.units:
                first = out.units[result.name].source
                result = UnitError(
                    f"unit {result.name} is already defined by {first}; "
                    "keep only one of the two files",
                    file=path,
                    line=1,
                )
            if isinstance(result, UnitError):
                out.errors[path] = result
                if fresh:
                    out.fresh.append(path)
            else:
                out.units[result.name] = result
        self._cache = cache
        return out


def _load(path: Path) -> Unit | UnitError:
    try:
        return load_unit(path)
    except UnitError as exc:
        return exc
    except Exception as exc:  # one bad unit never stops the others
        return UnitError(f"cannot load: {type(exc).__name__}: {exc}", file=path)


def describe_error(exc: UnitError) -> str:
    """The problem(s) without the file name (the event has it): ``restart.dealy: unknown key``."""
    problems: list[UnitError] = getattr(exc, "problems", None) or [exc]
    said = [f"{p.key}: {p.message}" if p.key else p.message for p in problems]
    if len(problems) == 1:
        return said[0]
    return "; ".join(f"line {p.line}: {text}" for p, text in zip(problems, said, strict=True))


def problem(exc: UnitError) -> dict[str, Any]:
    """What ``agentctl status --json`` shows of an invalid file: the first problem's
    file, line, key and message, and every problem when there are several."""
    out: dict[str, Any] = {
        "file": exc.file,
        "line": exc.line,
        "key": exc.key,
        "message": exc.message,
    }
    problems: list[UnitError] = getattr(exc, "problems", None) or []
    if len(problems) > 1:
        out["problems"] = [{"line": p.line, "key": p.key, "message": p.message} for p in problems]
    return out
