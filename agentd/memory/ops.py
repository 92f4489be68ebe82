"""The write verbs of ``agentctl state``, for any layout (SPEC 8).

A verb writes its text into the layout's ``Target`` for it (``agentd.memory.layout``):
a field of a JSON file, a section of a Markdown file, or a whole file. Each
verb runs under the state dir's lock (``statewrite.locked``), reads the files it
touches, and replaces each with ``statewrite.write_atomic``; decisions.log only
grows, and is appended to in one write (``statewrite.append_line``). Two agents
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
from dataclasses import dataclass, field
from pathlib import Path

from agentd.errors import AgentdError
from agentd.memory import markdown, mdlists, statedir, statewrite
from agentd.memory.layout import Layout, LayoutError, Target, load_layout, preset_names, templates
from agentd.memory.markdown import NONE_MARKERS

LAYOUT_RECORD = ".layout"
DEFAULT_LAYOUT = "agentd"
TIME_FORMAT = "%Y-%m-%d %H:%M"
CHECKPOINT_DONE = 5  # done items a checkpoint repeats


class StateError(AgentdError):
    """A state dir problem the user must fix; the message says how."""


@dataclass(frozen=True)
class StateDir:
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


def _same(a: object, b: str) -> bool:
    return isinstance(a, str) and " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _is_none(value: object) -> bool:
    return value is None or (isinstance(value, str)
                             and " ".join(value.split()).casefold() in NONE_MARKERS | {""})


@dataclass
class Docs:
    """The files one verb touches: loaded once, written together by ``save``."""

    sd: StateDir
    _json: dict[str, dict[str, object]] = field(default_factory=dict)
    _lines: dict[str, list[str]] = field(default_factory=dict)
    _dirty: set[str] = field(default_factory=set)

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
            statewrite.write_atomic(path, text)
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


# --- applying a verb's text to its target --------------------------------------------


def apply(docs: Docs, t: Target, text: str, now: float, *, verified: str | None = None,
          why: str | None = None) -> None:  # fmt: skip
    """Write ``text`` into target ``t`` (see ``agentd.memory.layout.TargetForm``)."""
    if t.is_json:
        _apply_json(docs, t, text, now, verified=verified, why=why)
    elif t.form == "line":
        line = f"- [{stamp(now)}] {' '.join(text.split())}"
        line += f" (verified: {verified})" if verified else ""
        docs.set_lines(t.path, [*docs.lines(t.path), line])
    elif t.form == "checkpoint":
        docs.set_lines(t.path, _checkpoint(docs, text, now))
    elif t.form != "entry":  # entries are written by `decide`
        docs.set_lines(t.path, _edit_section(docs.lines(t.path), t, text, verified))


def _apply_json(docs: Docs, t: Target, text: str, now: float, *, verified: str | None,
                why: str | None) -> None:  # fmt: skip
    data = docs.json(t.path)
    key = t.field or ""
    if t.form == "text":
        data[key] = text
    else:
        items = json_list(data, key, t.path)
        if t.form == "step":
            # SPEC 4: {text, at, verified}; verified is null until someone checked it
            step: dict[str, object] = {"text": text, "at": stamp(now), "verified": verified or None}
            items.append(step)
            if t.cross_off and _same(data.get(t.cross_off), text):
                data[t.cross_off] = ""  # the next action is done: the agent sets a new one
            elif t.cross_off and isinstance(todo := data.get(t.cross_off), list):
                data[t.cross_off] = [x for x in todo if not _same(x, text)]
        elif t.form == "decision":
            items.append({"decision": text, "reason": why or ""})
        else:
            items.append(text)
        data[key] = items
    docs.touch_json(t.path, now)


def json_list(data: dict[str, object], key: str, where: str) -> list[object]:
    value = data.get(key)
    if _is_none(value):
        return []
    if isinstance(value, str):
        return [value]  # one item written without the list around it
    if not isinstance(value, list):
        raise StateError(f"{where}: field `{key}` should be a list: repair it first")
    return value


def _edit_section(lines: list[str], t: Target, text: str, verified: str | None) -> list[str]:
    names = t.names
    if t.form == "text":
        return markdown.set_body(lines, names, text.splitlines())
    text = " ".join(text.split())  # a list item or a key is one line
    if t.form == "key":
        return mdlists.set_key(lines, names, t.key or "", text)
    if t.form == "item":
        return mdlists.edit_items(lines, names, add=f"- {text}")[0]
    if t.form == "first-item":
        return mdlists.edit_items(lines, names, add=f"- [ ] {text}", remove=text, first=True)[0]
    # step: a done item; the same text as a to-do item is crossed off
    item = f"- [x] {text}" + (f" (verified: {verified})" if verified else "")
    if t.cross_off in names:  # the to-do item turns into the done one, in place
        return mdlists.edit_items(lines, names, add=item, remove=text, replace_removed=True)[0]
    if t.cross_off and markdown.find_section(lines, [t.cross_off]) is not None:
        lines = mdlists.edit_items(lines, [t.cross_off], remove=text)[0]
    return mdlists.edit_items(lines, names, add=item)[0]


# --- reading a target back ------------------------------------------------------------


def read(docs: Docs, t: Target | None) -> list[str]:
    """What target ``t`` holds now, as lines of text (for snapshots and checkpoints)."""
    if t is None:
        return []
    if t.is_json:
        value = docs.json(t.path).get(t.field or "")
        if _is_none(value):
            return []
        values = value if isinstance(value, list) else [value]
        return [item_text(v) for v in values]
    lines = docs.lines(t.path)
    if t.form == "key":
        value = mdlists.get_key(lines, t.names, t.key or "")
        return [value] if value else []
    if t.form in ("item", "first-item", "step"):
        return [text for _, text in mdlists.items(lines, t.names)]
    if t.form == "line":
        return [ln[2:] for ln in lines if ln.startswith("- ")]
    body = markdown.section_body(lines, t.names) if t.names else lines
    return markdown.strip_blank(markdown.without_comments(body or []))


def item_text(value: object) -> str:
    if isinstance(value, dict):
        text = str(value.get("text") or value.get("decision") or json.dumps(value))
        verified = value.get("verified")
        return text + (f" (verified: {verified})" if verified not in (None, "", False) else "")
    return str(value)


def _checkpoint(docs: Docs, text: str, now: float) -> list[str]:
    """Seed 004's checkpoint, overwritten at each hand-over."""
    verbs = docs.sd.layout.state
    done = read(docs, verbs.done)
    verified = [d for d in done if "(verified:" in d]
    session = os.environ.get("AGENTD_SESSION")
    round_ = f"round={session} " if session else ""
    out = [f"[CHECKPOINT {round_}time={stamp(now)}]", "", "## Done", ""]
    out += [f"- {d}" for d in done[-CHECKPOINT_DONE:]] or ["- (nothing yet)"]
    out += ["", "## Current state", "", *text.splitlines(), "", "## Next", ""]
    out += [f"- {n}" for n in read(docs, verbs.next)] or ["- (not set)"]
    out += ["", "## Verification", "", f"- {verified[-1] if verified else '(none recorded)'}"]
    return [*out, "", "[/CHECKPOINT]"]
