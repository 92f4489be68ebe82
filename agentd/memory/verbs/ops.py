"""The state dir a verb of ``agentctl state`` works on, and the files it touches.

A verb writes its text into the layout's ``Target`` for it (``agentd.memory.layout``,
``agentd.memory.verbs.targets``): a field of a JSON file, a section of a Markdown file, or
a whole file; ``Docs`` loads each file once and saves them together. Each
verb runs under the state dir's lock (``fileio.locked``), reads the files it
touches, and replaces each with ``fileio.write_atomic``; decisions.log only
grows, and is appended to in one write (``fileio.append_line``). Two agents
writing at once take turns and lose nothing.

The layout of a state dir is the name in ``STATE_DIR/.layout`` (written by
``agentctl state init``), else ``$AGENTD_LAYOUT``, else the first preset
(``agentd`` first) whose required files are all there, else ``agentd``:
an agent never writes a default state.json into a contract's state dir.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import NamedTuple

from agentd import fileio
from agentd.errors import AgentdError
from agentd.memory import statedir
from agentd.memory.formats import markdown
from agentd.memory.layout import Layout, LayoutError, load_layout, preset_names, templates

LAYOUT_RECORD = ".layout"
DEFAULT_LAYOUT = "agentd"
TIME_FORMAT = "%Y-%m-%d %H:%M"


class StateError(AgentdError):
    """A state dir problem the user must fix; the message says how."""


class StateDir(NamedTuple):
    path: Path
    layout: Layout
    source: str  # where the layout name came from: recorded, env, detected, default

    @property
    def recorded(self) -> bool:
        return self.source == "recorded"

    @property
    def workdir(self) -> Path:
        """Where git is asked about HEAD: the dir that holds the state dir."""
        return self.path.parent


def layout_name(path: Path) -> tuple[str, str]:
    """(layout name, where it came from: recorded, env, detected or default)."""
    try:
        return (path / LAYOUT_RECORD).read_text(encoding="utf-8").strip(), "recorded"
    except FileNotFoundError:
        pass
    except OSError as e:
        raise StateError(f"{path / LAYOUT_RECORD}: cannot read it: {e}") from None
    if env := os.environ.get("AGENTD_LAYOUT"):
        return env, "env"
    if path.is_dir() and (found := detect(path)):
        return found, "detected"
    return DEFAULT_LAYOUT, "default"


def detect(path: Path) -> str | None:
    """The first preset (the default first) whose required files are all in ``path``."""
    for name in dict.fromkeys([DEFAULT_LAYOUT, *preset_names()]):
        required = [f.path for f in load_layout(name).files if not f.optional]
        if required and all((path / rel).exists() for rel in required):
            return name
    return None


def open_dir(path: Path) -> StateDir:
    """The state dir at ``path`` with its layout; StateError when it does not exist."""
    if not path.is_dir():
        raise StateError(
            f"no state dir at {path}: create it with `agentctl state init [--layout L]`, "
            "or point --dir (or $AGENTD_STATE_DIR) at it"
        )
    name, source = layout_name(path)
    try:
        layout = load_layout(name)
    except LayoutError as e:
        where = path / LAYOUT_RECORD if source == "recorded" else "$AGENTD_LAYOUT"
        raise StateError(f"{where}: {e}") from None
    return StateDir(path, layout, source)


def stamp(now: float) -> str:
    return time.strftime(TIME_FORMAT, time.localtime(now))


class Docs:
    """The files one verb touches: loaded once, written together by ``save``."""

    def __init__(self, sd: StateDir) -> None:
        self.sd = sd
        self._json: dict[str, dict[str, object]] = {}
        self._lines: dict[str, list[str]] = {}
        self._dirty: set[str] = set()

    def _initial(self, rel: str) -> str:
        path = self.sd.path / rel
        if path.exists():
            return statedir.read_text(path)
        template = templates(self.sd.layout.name) / rel
        return template.read_text(encoding="utf-8") if template.is_file() else ""

    def json(self, rel: str) -> dict[str, object]:
        if rel not in self._json:
            raw = self._initial(rel)
            try:
                data = json.loads(raw) if raw.strip() else {"schema_version": 1}
            except ValueError as e:
                raise StateError(
                    f"{self.sd.path / rel} is not valid JSON ({e}): repair it, then run the "
                    "command again; nothing was written"
                ) from None
            if not isinstance(data, dict):
                raise StateError(f"{self.sd.path / rel} should hold a JSON object: repair it")
            self._json[rel] = data
        return self._json[rel]

    def lines(self, rel: str) -> list[str]:
        if rel not in self._lines:
            self._lines[rel] = self._initial(rel).splitlines()
        return self._lines[rel]

    def set_lines(self, rel: str, lines: list[str]) -> None:
        self._lines[rel] = lines
        self._dirty.add(rel)

    def touch_json(self, rel: str, now: float) -> None:
        self.json(rel)["updated_at"] = stamp(now)
        self._dirty.add(rel)

    def changed(self, rel: str) -> None:
        """``rel`` (loaded with ``json``) is to be saved, without a new ``updated_at``."""
        self._dirty.add(rel)

    def save(self) -> None:
        for rel in sorted(self._dirty):
            path = self.sd.path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if rel in self._json:
                text = dump_json(self._json[rel])
            else:
                text = "\n".join(markdown.strip_trailing_blank(self._lines[rel])) + "\n"
            fileio.write_atomic(path, text)
        self._dirty.clear()


def dump_json(data: dict[str, object]) -> str:
    """A state.json as people and agents read it: one key a line, one list
    entry a line (``{"text": ..., "verified": ...}`` stays on one line), so
    ten steps and ten decisions still fit on one screen and grep finds them."""

    def one(value: object) -> str:
        return json.dumps(value, ensure_ascii=False)

    parts = []
    for key, value in data.items():
        if isinstance(value, list) and value:
            items = ",\n".join(f"    {one(v)}" for v in value)
            parts.append(f"  {one(key)}: [\n{items}\n  ]")
        else:
            parts.append(f"  {one(key)}: {one(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"
