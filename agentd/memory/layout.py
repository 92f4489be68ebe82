"""Layouts: which state files a bootstrap shows, in which order, and how; and
where ``agentctl state`` verbs write.

A layout is data. Presets live in ``agentd/memory/layouts/NAME.yaml``::

    description: one line
    files:            # the bootstrap, in order (earlier files win the budget)
      - {path: TASK_STATE.md, title: Task state, section: [CURRENT, NEXT]}
    state:            # where `agentctl state VERB` writes (a Target per verb)
      next: {path: TASK_STATE.md, section: NEXT, form: first-item}
    archive:          # what `agentctl state archive` moves out (Target + keep, to)
      - {path: TASK_STATE.md, section: DONE, form: step, keep: 10, to: TASK_STATE_archive.md}

and the files ``agentctl state init --layout NAME`` creates are under
``agentd/memory/layouts/templates/NAME/``. A unit may also give an inline list of
files under ``state.layout``; that list has no verbs of its own.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from importlib.abc import Traversable
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentd.errors import AgentdError

# How a file is rendered. `text`: as is (optionally only some sections, or its
# last `tail` lines); `task-state`: a state.json as Markdown; `decision-log`:
# six-field lines, newest last; `handoff`: only the `handoff` field of a
# state.json; `entries`: a Markdown file of `## ` entries, the newest `tail`
# of them; `latest`: the newest file of a directory (by name).
FileKind = Literal["text", "task-state", "decision-log", "handoff", "entries", "latest"]

# How a verb writes its text into a target. JSON (`field`): `text` sets a
# string, `item` appends to a list, `step` appends {text, at, verified},
# `decision` appends {decision, reason}. Markdown (`section`): `text` replaces
# the body, `key` sets a `- key: value` line, `item`/`first-item` add a list
# item last/first, `step` adds a `- [x]` item. Whole files: `line` appends a
# dated line, `entry` appends a numbered `## N.` decision, `checkpoint`
# rewrites the file as a seed-004 checkpoint.
TargetForm = Literal[
    "text", "key", "item", "first-item", "step", "decision", "line", "entry", "checkpoint"
]
_WHOLE_FILE = frozenset({"line", "entry", "checkpoint"})


class LayoutError(AgentdError):
    pass


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LayoutFile(_Frozen):
    path: str = Field(min_length=1)
    title: str | None = None
    kind: FileKind = "text"
    tail: int | None = Field(default=None, ge=1)
    section: str | tuple[str, ...] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    optional: bool = False
    readonly: bool = False

    @property
    def heading(self) -> str:
        return self.title or self.path

    @property
    def sections(self) -> tuple[str, ...]:
        if self.section is None:
            return ()
        return (self.section,) if isinstance(self.section, str) else self.section


class Target(_Frozen):
    """Where a verb writes: a JSON field, a Markdown section, or a whole file."""

    path: str = Field(min_length=1)
    field: str | None = None
    section: str | None = None
    aliases: tuple[str, ...] = ()  # other names the section may have (the seed's own)
    key: str | None = None
    form: TargetForm = "text"
    cross_off: str | None = None  # `step`: the field or section that held it as to-do

    @model_validator(mode="after")
    def _addressed(self) -> Target:
        if self.form in _WHOLE_FILE:
            if self.field or self.section:
                raise ValueError(f"form {self.form!r} writes a whole file: no field or section")
        elif self.path.endswith(".json") != (self.field is not None):
            raise ValueError("a .json target needs `field`; a Markdown target needs `section`")
        elif self.field is None and self.section is None:
            raise ValueError("a Markdown target needs `section`")
        if (self.form == "key") != (self.key is not None):
            raise ValueError("form `key` and `key:` go together")
        return self

    @property
    def names(self) -> tuple[str, ...]:
        return (self.section, *self.aliases) if self.section else ()

    @property
    def is_json(self) -> bool:
        return self.field is not None


class ArchiveRule(Target):
    keep: int = Field(ge=1)
    to: str = Field(min_length=1)  # may contain {year}


class StateVerbs(_Frozen):
    task: Target | None = None
    next: Target | None = None
    done: Target | None = None
    block: Target | None = None
    handoff: Target | None = None
    decide: tuple[Target, ...] = ()  # the layout's own decision record, beside decisions.log
    task_switch_decision: bool = False  # `task` also logs a decision (seed 000)


class Layout(_Frozen):
    name: str
    description: str = ""
    files: tuple[LayoutFile, ...]
    state: StateVerbs = StateVerbs()
    archive: tuple[ArchiveRule, ...] = ()


def _presets() -> Traversable:
    return resources.files("agentd.memory") / "layouts"


def preset_names() -> list[str]:
    return sorted(p.name[:-5] for p in _presets().iterdir() if p.name.endswith(".yaml"))


@cache
def load_layout(name: str) -> Layout:
    """The layout preset ``name``; LayoutError names the choices."""
    res = _presets() / f"{name}.yaml"
    if not res.is_file():
        raise LayoutError(f"unknown layout {name!r}; choose one of: {', '.join(preset_names())}")
    data = yaml.safe_load(res.read_text(encoding="utf-8"))
    return Layout.model_validate({"name": name, **data})


def load_preset(name: str) -> list[LayoutFile]:
    """The files of the layout preset ``name``."""
    return list(load_layout(name).files)


def templates(name: str) -> Traversable:
    """The directory of the files ``agentctl state init --layout name`` creates."""
    return _presets() / "templates" / name


def resolve(layout: str | list[LayoutFile]) -> list[LayoutFile]:
    return load_preset(layout) if isinstance(layout, str) else list(layout)
