"""Layouts: which state files a bootstrap shows, in which order, and how; and
where ``agentctl state`` verbs write.

A layout is data. Presets live in ``agentd/memory/layouts/NAME.yaml`` (read
at run time from ``presets.json``, their compiled copy, which
``scripts/gen_docs.py`` writes and a test keeps equal: ``agentctl state`` runs
after every step of an agent, and parsing YAML would cost it more than the
rest of the verb)::

    description: one line
    files:            # the bootstrap, in order; `keep` says what the budget keeps first
      - {path: TASK_STATE.md, title: Task state, section: [CURRENT, NEXT], keep: must}
    state:            # where `agentctl state VERB` writes (a Target per verb)
      next: {path: TASK_STATE.md, section: NEXT, form: first-item}
    archive:          # what `agentctl state archive` moves out (Target + keep, to)
      - {path: TASK_STATE.md, section: DONE, form: step, keep: 10, to: TASK_STATE_archive.md}

and the files ``agentctl state init --layout NAME`` creates are under
``agentd/memory/layouts/templates/NAME/``. A unit may also give an inline list of
files under ``state.layout`` (``parse_files``); that list has no verbs of its own.

The models are frozen records checked against their annotations
(``agentd.memory.schema``), not pydantic models: ``agentctl state`` loads a
layout on every call and must start fast. A bad key raises ``KeyProblem``
(a ValueError naming the key); a bad preset file raises ``LayoutError``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Literal

from agentd.errors import AgentdError, KeyProblem
from agentd.memory.schema import Record, check_fields, field, from_mapping

# How a file is rendered. `text`: as is (optionally only some sections, or its
# last `tail` lines); `task-state`: a state.json as Markdown; `decision-log`:
# six-field lines, newest last; `handoff`: only the `handoff` field of a
# state.json; `entries`: a Markdown file of entries (``## `` entries, list
# items, any shape ``agentd.memory.formats.items`` reads), the newest `tail`
# of them; `latest`: the newest file of a directory (by name).
FileKind = Literal["text", "task-state", "decision-log", "handoff", "entries", "latest"]

# What the budget keeps first (``agentd.memory.bootstrap.fit``). `must`: facts the
# agent cannot work without (mission, next action, blockers, constraints, the
# handoff), never cut while anything of lower priority is shown; `record`: an
# append-only record (decisions, done items, gotchas), its newest `tail` items
# guaranteed, then more of the newest as room allows; `free`: free text
# (scratch, notes) that gets only what is left, its newest part first. The
# growing lists inside a must-keep file (a `## DONE` or `## 进度` section, a
# Markdown `- [x]` run, a state.json's completed steps and key decisions) are
# records of their own, and its sections that say what to do now are cut last
# (``agentd.memory.formats.outline``).
Keep = Literal["must", "record", "free"]

# How a verb writes its text into a target. JSON (`field`): `text` sets a
# string, `item` appends to a list, `step` appends {text, at, verified},
# `decision` appends {decision, reason}. Markdown (`section`): `text` replaces
# the body, `key` sets a `- key: value` line, `item`/`first-item` add a list
# item last/first, `step` adds a `- [x]` item. Whole files: `line` appends a
# dated line, `entry` appends a numbered `## N.` decision, `checkpoint`
# rewrites the file as a checkpoint (the ``checkpoint`` layout).
TargetForm = Literal[
    "text", "key", "item", "first-item", "step", "decision", "line", "entry", "checkpoint"
]
_WHOLE_FILE = frozenset({"line", "entry", "checkpoint"})


class LayoutError(AgentdError):
    """A layout preset that cannot be used: an unknown name or a bad file."""


_NOT_EMPTY = {"min_length": 1}
_STATE_PATH = {"min_length": 1, "inside": True}  # relative, inside the state dir
_POSITIVE = {"ge": 1}


class _Checked(Record):
    """Checks each field against its annotation when built (see ``schema``)."""

    def __post_init__(self) -> None:
        check_fields(self)


class LayoutFile(_Checked):
    path: str = field(metadata=_STATE_PATH)
    title: str | None = None
    kind: FileKind = "text"
    tail: int | None = field(default=None, metadata=_POSITIVE)
    section: str | tuple[str, ...] | None = None
    max_tokens: int | None = field(default=None, metadata=_POSITIVE)
    optional: bool = False
    readonly: bool = False
    keep: Keep | None = None  # None: as the kind implies (`priority`)

    @property
    def heading(self) -> str:
        return self.title or self.path

    @property
    def priority(self) -> Keep:
        """``keep``, or what the file's kind implies when the layout does not say."""
        if self.keep is not None:
            return self.keep
        if self.kind in ("decision-log", "entries") or (self.kind == "text" and self.tail):
            return "record"
        return "free" if self.kind == "latest" else "must"

    @property
    def sections(self) -> tuple[str, ...]:
        if self.section is None:
            return ()
        return (self.section,) if isinstance(self.section, str) else self.section


class Target(_Checked):
    """Where a verb writes: a JSON field, a Markdown section, or a whole file."""

    path: str = field(metadata=_STATE_PATH)
    field: str | None = None
    section: str | None = None
    aliases: tuple[str, ...] = ()  # other names of the section (its write-up's own)
    key: str | None = None
    form: TargetForm = "text"
    cross_off: str | None = None  # `step`: the field or section that held it as to-do

    def __post_init__(self) -> None:
        super().__post_init__()
        self._addressed()

    def _addressed(self) -> None:
        if self.form in _WHOLE_FILE:
            if self.field or self.section:
                raise ValueError(f"form {self.form!r} writes a whole file: no field or section")
        elif self.path.endswith(".json") != (self.field is not None):
            raise ValueError("a .json target needs `field`; a Markdown target needs `section`")
        elif self.field is None and self.section is None:
            raise ValueError("a Markdown target needs `section`")
        if (self.form == "key") != (self.key is not None):
            raise ValueError("form `key` and `key:` go together")

    @property
    def names(self) -> tuple[str, ...]:
        return (self.section, *self.aliases) if self.section else ()

    @property
    def is_json(self) -> bool:
        return self.field is not None


class ArchiveRule(Target):
    keep: int = field(metadata=_POSITIVE)
    to: str = field(metadata=_STATE_PATH)  # may contain {year}


class StateVerbs(_Checked):
    mission: Target | None = None
    task: Target | None = None
    next: Target | None = None
    done: Target | None = None
    block: Target | None = None
    handoff: Target | None = None
    decide: tuple[Target, ...] = ()  # the layout's own decision record, beside decisions.log
    task_switch_decision: bool = False  # `task` also logs a decision (the ``decision-log`` layout)


class Layout(_Checked):
    name: str
    description: str = ""
    files: tuple[LayoutFile, ...]
    state: StateVerbs = StateVerbs()
    archive: tuple[ArchiveRule, ...] = ()


# Next to this module (as the CLI presets): importlib.resources costs an import
# of tempfile and more, and every `agentctl state` call would pay it.
PRESETS = Path(__file__).resolve().parent / "layouts"
COMPILED = PRESETS / "presets.json"


def preset_names() -> list[str]:
    return sorted(_compiled())


@cache
def _compiled() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(COMPILED.read_text(encoding="utf-8"))
    return data


def compile_presets() -> str:
    """``presets.json``: every ``layouts/NAME.yaml`` parsed, as JSON (for gen_docs)."""
    import yaml  # only here: the run-time path reads the JSON

    data = {
        p.stem: yaml.safe_load(p.read_text(encoding="utf-8"))
        for p in sorted(PRESETS.glob("*.yaml"))
    }
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


@cache
def load_layout(name: str) -> Layout:
    """The layout preset ``name``; LayoutError names the choices."""
    data = _compiled().get(name)
    if data is None:
        raise LayoutError(f"unknown layout {name!r}; choose one of: {', '.join(preset_names())}")
    if not isinstance(data, dict):
        raise LayoutError(f"layout {name!r}: {name}.yaml is not a mapping of keys")
    try:
        return from_mapping(Layout, {"name": name, **data})
    except KeyProblem as exc:
        raise LayoutError(f"layout {name!r} ({name}.yaml): {exc}") from None


def load_preset(name: str) -> list[LayoutFile]:
    """The files of the layout preset ``name``."""
    return list(load_layout(name).files)


def templates(name: str) -> Path:
    """The directory of the files ``agentctl state init --layout name`` creates."""
    return PRESETS / "templates" / name


def parse_files(items: Any) -> list[LayoutFile]:
    """The files of an inline layout (a unit's ``state.layout``: mappings, or
    LayoutFiles already built); KeyProblem names the item and key: ``(1, "tail")``."""
    if not isinstance(items, list):
        raise KeyProblem((), f"should be a list of files (got {items!r})")
    return [
        item if isinstance(item, LayoutFile) else from_mapping(LayoutFile, item, (i,))
        for i, item in enumerate(items)
    ]


def resolve(layout: str | list[LayoutFile]) -> list[LayoutFile]:
    return load_preset(layout) if isinstance(layout, str) else list(layout)
