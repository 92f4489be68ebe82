"""Layouts: which state files a bootstrap shows, in which order, and how.

A layout is data: an ordered list of ``LayoutFile`` entries. Presets live in
``agentd/presets/NAME.yaml`` (a YAML list of entries); a unit may also give
its list inline under ``state.layout``.
"""

from __future__ import annotations

from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from agentd.errors import AgentdError

# How a file is rendered. `text`: as is (optionally one `## section`);
# `task-state`: the state.json schema as Markdown; `decision-log`: six-field
# lines, newest last; `handoff`: only the `handoff` field of a state.json.
FileKind = Literal["text", "task-state", "decision-log", "handoff"]


class LayoutFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(min_length=1)
    title: str | None = None
    kind: FileKind = "text"
    tail: int | None = Field(default=None, ge=1)
    section: str | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    optional: bool = False
    readonly: bool = False

    @property
    def heading(self) -> str:
        return self.title or self.path


class LayoutError(AgentdError):
    pass


def preset_names() -> list[str]:
    root = resources.files("agentd") / "presets"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml"))


def load_preset(name: str) -> list[LayoutFile]:
    """The files of the layout preset ``name``; LayoutError names the choices."""
    res = resources.files("agentd") / "presets" / f"{name}.yaml"
    if not res.is_file():
        raise LayoutError(f"unknown layout {name!r}; choose one of: {', '.join(preset_names())}")
    data = yaml.safe_load(res.read_text(encoding="utf-8"))
    return [LayoutFile.model_validate(entry) for entry in data["files"]]


def resolve(layout: str | list[LayoutFile]) -> list[LayoutFile]:
    return load_preset(layout) if isinstance(layout, str) else list(layout)
