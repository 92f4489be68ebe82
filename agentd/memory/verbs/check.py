"""``agentctl state check``: every problem of a state dir, with file and line.

Unlike the bootstrap, which reads only the tail of decisions.log, ``check``
reads every file whole (streaming): it is the place to find the one mangled
line among 300,000. Problems make ``check`` exit 1; notes (a template not
filled in yet, a layout not recorded) and warnings (where reading a record the
agent wrote in its own words had to guess: no list items, text between them,
newest first - ``agentd.memory.formats.outline.guesses``) are printed but do
not fail it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentd.memory.formats import (
    decisions,
    jsonitems,
    outline,
    readonly,
    snapshots,
    taskstate,
)
from agentd.memory.layout import LayoutFile
from agentd.memory.verbs.init import template_text
from agentd.memory.verbs.ops import LAYOUT_RECORD, StateDir
from agentd.memory.verbs.record import LOG

MAX_SNAPSHOTS_CHECKED = 1000


@dataclass(frozen=True)
class Problem:
    path: Path
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        return f"{where}: {self.message}"


def check(sd: StateDir) -> tuple[list[Problem], list[str], list[Problem]]:
    """(problems, notes, warnings) of the state dir ``sd``."""
    problems: list[Problem] = []
    notes: list[str] = []
    warnings: list[Problem] = []
    if not sd.recorded:
        notes.append(
            f"{sd.path / LAYOUT_RECORD} is missing: using layout {sd.layout.name!r} "
            f"({sd.source}); `agentctl state init --layout {sd.layout.name}` "
            "records it"
        )
    seen: set[str] = set()
    for entry in sd.layout.files:
        if entry.path in seen:
            continue
        seen.add(entry.path)
        path = sd.path / entry.path
        if not path.exists():
            if not entry.optional:
                problems.append(
                    Problem(
                        path,
                        "missing: the layout lists it as required; "
                        "`agentctl state init` creates it",
                    )
                )
            continue
        problems += _check_file(sd, entry, path, notes)
        warnings += _guesses(entry, path)
    if LOG not in seen and (sd.path / LOG).is_file():
        problems += _check_log(sd.path / LOG)
    if "snapshots" not in seen:
        problems += _check_snapshots(sd.path / snapshots.DIR)
    recorded = {k: v for k, v in readonly.load_record(sd.path).items() if v}
    _, changed = readonly.check(sd.path, sd.layout.files, recorded, str)
    problems += [Problem(sd.path / readonly.RECORD, msg) for msg in changed]
    return problems, notes, warnings


def _guesses(entry: LayoutFile, path: Path) -> list[Problem]:
    """Where the bootstrap's reader guesses in a Markdown or JSON record file,
    or in the growing lists of a must-keep one (free text is read as it is)."""
    record = entry.kind == "entries" or entry.priority == "record"
    if entry.kind not in ("text", "entries") or not path.is_file():
        return []
    if entry.priority == "free" and not record:
        return []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    if record and (found := jsonitems.json_record(text)) is not None:
        values, where = found
        _, bad = jsonitems.json_items(values)
        return [
            Problem(path, f"item {i} of {where} holds no text field: shown as JSON") for i in bad
        ]
    lines = text.lstrip("\ufeff").splitlines()
    spans: list[tuple[int, int]] = [(0, len(lines))]
    if entry.sections:
        spans = [s for s in outline.find_all(lines, entry.sections) if s is not None]
    return [
        Problem(path, f"read with a guess: {g.message}", g.line or None)
        for a, b in spans
        for g in outline.guesses(lines[a:b], a + 1, record=record)
    ]


def _check_file(sd: StateDir, entry: LayoutFile, path: Path, notes: list[str]) -> list[Problem]:
    if entry.kind in ("task-state", "handoff"):
        return _check_json(path, notes)
    if entry.kind == "decision-log":
        return _check_log(path)
    if entry.kind == "latest" or path.is_dir():
        return _check_snapshots(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as e:
        return [Problem(path, f"cannot be read: {e}")]
    template = template_text(sd.layout, entry.path)
    unfilled = template is not None and text.encode("utf-8") == template
    if unfilled and entry.kind == "text" and entry.priority == "must":  # records start empty
        notes.append(f"{path} still holds the template `agentctl state init` wrote: fill it in")
    lines = text.splitlines()
    return [
        Problem(path, f"has no `## {name}` section (the layout shows it)")
        for name, found in zip(entry.sections, outline.find_all(lines, entry.sections), strict=True)
        if found is None
    ]


def _check_json(path: Path, notes: list[str]) -> list[Problem]:
    loaded = taskstate.load(path)
    if loaded.problem:
        return [Problem(path, loaded.problem, loaded.line)]
    if not isinstance(loaded.data, dict):
        return [Problem(path, "should hold a JSON object", 1)]
    found: list[Problem] = []
    taskstate.to_markdown(
        loaded.data,
        lambda msg, key: found.append(Problem(path, msg, _line(loaded.raw, key))),
        lambda msg, key: notes.append(str(Problem(path, msg, _line(loaded.raw, key)))),
    )
    return found


def _line(raw: str, key: str | None) -> int | None:
    return taskstate.key_line(raw, key) if key else None


def _check_log(path: Path) -> list[Problem]:
    form = f"not in the six-field form `{decisions.DECISION_FORM}`"
    return [Problem(path, f"{form}: {line[:80]!r}", n) for n, line in decisions.scan_file(path)]


def _check_snapshots(directory: Path) -> list[Problem]:
    found = []
    for _, name in snapshots.listing(directory)[-MAX_SNAPSHOTS_CHECKED:]:
        loaded = taskstate.load(directory / name)
        if loaded.problem or not isinstance(loaded.data, dict):
            message = loaded.problem or "should hold a JSON object"
            found.append(Problem(directory / name, message, loaded.line))
    return found
