"""``agentd check``: what is wrong with unit files, every problem of each, before
the daemon meets them (like ``nginx -t``).

For each file: what the loader refuses (every key at once), and what a
session would meet (``agentd.config.lint``: the command not found, the
bootstrap in ``ps``...). A missing workdir does not hide the rest: the file
is read again past it (``probe``) and linted. Across the files (and the units
dir beside them), units that share a state dir or a git worktree (they may
share a repository, each on its own branch). Each problem once, with one
severity, as the daemon says it (``agentd run``, ``agentd serve``).

``check_files`` gives the reports; ``said``/``as_json`` word them; ``run`` is the
command (the click command's and the console script's, which runs a plain ``agentd
check`` without importing click).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentd.cli.colour import Painter, wanted
from agentd.config.lint import ArgLimits, lint
from agentd.config.unit import Unit
from agentd.config.unitfile import read_unit, unit_paths
from agentd.config.yamllines import Lines, format_key, line_of
from agentd.errors import AgentdError, UnitError

Level = Literal["error", "warning"]
Echo = Callable[[str, bool], None]  # (line, to stderr)


class NothingToCheck(AgentdError):
    """No unit file among the arguments, or in the units dir (a usage error)."""


@dataclass(frozen=True)
class Problem:
    level: Level
    line: int | None
    key: str | None
    message: str


@dataclass
class Report:
    """What ``check`` found in one file."""

    file: Path
    unit: str | None = None
    command: list[str] | None = None  # the effective argv, once the file loads
    problems: list[Problem] = field(default_factory=list)
    loads: bool = False  # the daemon would load it (it may still fail to run)

    @property
    def ok(self) -> bool:
        return not any(p.level == "error" for p in self.problems)


def run(files: Iterable[Path], units_dir: Path, in_json: bool, color: str, echo: Echo) -> int:
    """``agentd check [--json] [--color COLOR] FILES``: the reports said through ``echo``
    (stdout: each file that loads, or the JSON; stderr: the problems, then how many
    files are invalid); exit 1 when a file has an error."""
    found = targets(files, units_dir)
    if not found:
        raise NothingToCheck(f"no unit files to check in {units_dir}")
    reports = check_files(found, units_dir, os.environ, ArgLimits.of_this_system())
    if in_json:
        echo(json.dumps(as_json(reports), indent=2, ensure_ascii=False), False)
    else:
        out, err = said(reports, Painter(wanted(color, sys.stderr)))
        for line in err:
            echo(line, True)
        for line in out:
            echo(line, False)
    return 0 if all(r.ok for r in reports) else 1


def targets(args: Iterable[Path], units_dir: Path) -> list[Path]:
    """The files ``agentd check ARGS`` means: each FILE, every unit file of each DIR
    (a directory named like a unit file is a bad file, not a DIR); with no ARGS, the
    units dir's."""
    given = list(args)
    if not given:
        return unit_paths(units_dir)
    out: list[Path] = []
    for arg in given:
        folder = arg.is_dir() and arg.suffix not in (".yaml", ".yml")
        out += unit_paths(arg) if folder else [arg]
    return out


def check_files(
    files: list[Path], units_dir: Path, env: Mapping[str, str], limits: ArgLimits
) -> list[Report]:
    """A report per file, in order, and the state dirs they share with each other or
    with the units in ``units_dir``."""
    reports, units = [], {}
    for path in files:
        report, unit = _check_one(path, env, limits)
        reports.append(report)
        if unit is not None:
            units[_real(path)] = (unit, report)
    others = {
        _real(p): p for p in unit_paths(units_dir) if _real(p) not in units
    }  # beside those given: the daemon would run them together
    beside: dict[str, Unit] = {}
    for real, path in others.items():
        try:
            beside[real] = read_unit(path)[0]
        except UnitError:
            continue  # its own check says why
    _shared_state_dirs(units, beside)
    _shared_worktrees(units, beside)
    return reports


def _check_one(
    path: Path, env: Mapping[str, str], limits: ArgLimits
) -> tuple[Report, tuple[Unit, Lines] | None]:
    report = Report(path)
    try:
        unit, lines = read_unit(path)
        report.loads = True
    except UnitError as exc:
        report.problems += [_problem(p) for p in getattr(exc, "problems", None) or [exc]]
        if not any(p.key == "workdir" for p in report.problems):
            return report, None
        try:  # past the missing workdir: what else would go wrong?
            unit, lines = read_unit(path, probe=True)
        except UnitError:
            return report, None
    report.unit, report.command = unit.name, list(unit.command)
    for finding in lint(unit, env, limits):
        if not report.loads and _relative_program(unit, finding.key):
            continue  # relative to a workdir that does not exist: said already
        report.problems.append(
            Problem(
                finding.level, line_of(finding.key, lines), format_key(finding.key), finding.message
            )
        )
    return report, (unit, lines)


def _relative_program(unit: Unit, key: tuple[Any, ...]) -> bool:
    program = unit.command[0]
    return key[:1] == ("command",) and "/" in program and not os.path.isabs(program)


def _problem(exc: UnitError) -> Problem:
    return Problem("error", exc.line, exc.key, exc.message)


def _shared_state_dirs(
    units: dict[str, tuple[tuple[Unit, Lines], Report]], beside: dict[str, Unit]
) -> None:
    """An error on each checked unit whose state dir another unit uses too."""
    by_dir: dict[str, list[tuple[Unit, Report | None]]] = {}
    for (checked, _), its in units.values():
        by_dir.setdefault(os.path.realpath(checked.state_dir), []).append((checked, its))
    for other in beside.values():
        by_dir.setdefault(os.path.realpath(other.state_dir), []).append((other, None))
    for real, sharing in by_dir.items():
        if len(sharing) < 2:
            continue
        for unit, report in sharing:
            if report is None:
                continue
            lines = next(lines for (u, lines), r in units.values() if r is report)
            names = ", ".join(f"{u.name} ({u.source})" for u, _ in sharing if u.name != unit.name)
            report.problems.append(
                Problem(
                    "error",
                    line_of(("state", "dir"), lines),
                    "state.dir",
                    f"{real} is also the state dir of {names}: two units that share one "
                    "overwrite each other's memory, so only one of them runs at a time (the "
                    "other shows `conflict` and waits); give each its own state.dir",
                )
            )


def _shared_worktrees(
    units: dict[str, tuple[tuple[Unit, Lines], Report]], beside: dict[str, Unit]
) -> None:
    """An error on each checked unit whose git worktree another unit has too."""
    by_tree: dict[str, list[tuple[Unit, Report | None]]] = {}
    for (checked, _), its in units.values():
        if checked.worktree is not None:
            real = os.path.realpath(checked.worktree.path)
            by_tree.setdefault(real, []).append((checked, its))
    for other in beside.values():
        if other.worktree is not None:
            by_tree.setdefault(os.path.realpath(other.worktree.path), []).append((other, None))
    for real, sharing in by_tree.items():
        for unit, report in sharing:
            if report is None or len(sharing) < 2:
                continue
            lines = next(lines for (u, lines), r in units.values() if r is report)
            names = ", ".join(f"{u.name} ({u.source})" for u, _ in sharing if u.name != unit.name)
            report.problems.append(
                Problem(
                    "error",
                    line_of(("worktree", "branch"), lines),
                    "worktree.branch",
                    f"{real} is also the worktree of {names}: units may share a repository, "
                    "not a worktree (only one of them runs at a time; the other shows "
                    "`conflict` and waits); give each its own branch",
                )
            )


def _real(path: Path) -> str:
    return os.path.realpath(path)


def said(reports: list[Report], painter: Painter) -> tuple[list[str], list[str]]:
    """The lines for stdout (each loading file's ``ok`` and its effective argv) and
    stderr (every problem, ``file:line: key: [warning: ]message``; the count)."""
    out, err = [], []
    for r in reports:
        for p in r.problems:
            where = f"{r.file}" + (f":{p.line}" if p.line else "") + (f": {p.key}" if p.key else "")
            text = (
                f"{painter.level('warning:')} {p.message}"
                if p.level == "warning"
                else painter.level(p.message, "error")
            )
            err.append(f"{where}: {text}")
        if r.ok and r.command is not None:
            out.append(f"{r.file}: {painter.level('ok')} ({r.unit}: {shlex.join(r.command)})")
    bad = sum(not r.ok for r in reports)
    if bad:
        err.append(f"{bad} of {len(reports)} unit file(s) invalid")
    return out, err


def as_json(reports: list[Report]) -> list[dict[str, Any]]:
    """``agentd check --json``: one object per file."""
    return [
        {
            "file": str(r.file),
            "unit": r.unit,
            "ok": r.ok,
            "command": r.command,
            "problems": [
                {"level": p.level, "line": p.line, "key": p.key, "message": p.message}
                for p in r.problems
            ],
        }
        for r in reports
    ]
