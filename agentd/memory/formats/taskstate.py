"""``state.json`` as Markdown for the bootstrap, and what is wrong with it.

Schema 1 (docs/layouts.md; the ``memento`` layout's is a subset of it): ``mission``, ``task``,
``phase``, ``next_action``, ``completed_steps`` (``{text, at, verified}``
or plain strings), ``blockers``, ``constraints``, ``key_decisions``
(``{decision, reason}``), ``handoff``, ``updated_at``. Seed 004 names three
of them differently, and those names are read too: ``next`` for
``next_action``, ``completed`` for ``completed_steps``, ``blocked_by`` for
``blockers`` and ``status`` for ``phase``.

Most important first: the agent must see the mission (or task) and the next
action even if the rest is cut. Completed steps and key decisions only grow:
they are records (``ListPart``), of which the bootstrap keeps the newest;
completed steps without ``verified`` are shown as pending (the ``checkpoint`` layout:
"没填的条目视为未完成").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from agentd.memory import statedir
from agentd.memory.formats.jsonitems import json_items, json_text
from agentd.memory.formats.markdown import NONE_MARKERS, strip_blank
from agentd.memory.formats.outline import role

MAX_JSON_BYTES = 4 << 20  # a state.json bigger than this is not read whole
BAD_NAMED = 5  # a warning names this many malformed list items, then counts the rest
SHOWN_ITEMS = 10  # completed steps and key decisions: the newest ten are guaranteed
GROWING = ("completed_steps", "key_decisions")  # lists that are records (``ListPart``)
# (and the agent's own lists that are not about what to do now: ``_own_lists``)
ALIASES: dict[str, tuple[str, ...]] = {
    "next_action": ("next_action", "next"),
    "completed_steps": ("completed_steps", "completed"),
    "blockers": ("blockers", "blocked_by"),
    "phase": ("phase", "status"),
}
KNOWN_KEYS = frozenset(
    {"schema_version", "mission", "task", "next_action", "constraints", "key_decisions"}
    | {"handoff", "updated_at"}
    | {name for names in ALIASES.values() for name in names}
)

# warn(message, key): key is the JSON key the problem is about, when there is one.
Warn: TypeAlias = Callable[[str, "str | None"], None]
_Item: TypeAlias = Callable[[object], "str | None"]


@dataclass(frozen=True)
class Loaded:
    data: object  # the parsed value, None when it does not parse
    raw: str
    problem: str | None = None  # "is not valid JSON (line 3, col 18: ...)"
    line: int | None = None  # where the problem is, when known


def load(path: Path) -> Loaded:
    """The JSON file ``path``, parsed, with what is wrong with it."""
    raw, truncated = statedir.read_head(path, MAX_JSON_BYTES)
    if truncated:
        return Loaded(None, raw, f"is larger than {MAX_JSON_BYTES >> 20} MiB: shrink it")
    try:
        return Loaded(json.loads(raw), raw)
    except json.JSONDecodeError as e:
        return Loaded(
            None, raw, f"is not valid JSON (line {e.lineno}, col {e.colno}: {e.msg})", e.lineno
        )
    except (ValueError, RecursionError) as e:  # a 5000-digit number, nesting 1000 deep
        return Loaded(None, raw, f"is not valid JSON ({type(e).__name__}: {e})")


def key_line(raw: str, key: str) -> int | None:
    """The line of ``raw`` where ``"key":`` first appears (for ``check``)."""
    needle = json.dumps(key) + ":"
    for number, line in enumerate(raw.splitlines(), start=1):
        if needle in line.replace('" :', '":'):
            return number
    return None


def field(data: dict[str, object], canon: str) -> tuple[str, object]:
    """(the key used, its value) for the schema field ``canon`` or its alias."""
    for key in ALIASES.get(canon, (canon,)):
        if key in data:
            return key, data[key]
    return canon, None


@dataclass(frozen=True)
class ListPart:
    """A list of state.json that only grows (completed steps, key decisions):
    a record in the bootstrap, its newest items first to be kept."""

    label: str  # "Completed steps"
    items: list[str]  # "- text" lines, oldest first


Parts: TypeAlias = "list[list[str] | ListPart]"


def to_parts(data: dict[str, object], warn: Warn, unset: Warn | None = None) -> Parts:
    """state.json (schema 1) as Markdown, most important first: runs of fact
    lines, and the growing lists as ``ListPart``s. What is malformed goes to
    ``warn``; a required field not set yet to ``unset`` (default: ``warn`` too)."""
    unset = unset or warn
    version = data.get("schema_version", 1)
    if version != 1:
        warn(f"schema_version is {version!r}, not 1; showing the fields agentd knows", None)
    mission = _scalar(data, "mission", warn)
    task = _scalar(data, "task", warn)
    nxt = _scalar(data, "next_action", warn)
    facts: list[str] = []
    if mission:
        facts += [f"**Mission:** {mission}", ""]
    elif "mission" in data or not task:  # a checkpoint state.json has a task and no mission field
        key = "task" if "task" in data and "mission" not in data else "mission"
        facts += [f"**{key.capitalize()}:** (not set)", ""]
        unset(
            f'`{key}` is not set: `agentctl state {key} "TEXT"` sets it, so the next '
            "session knows what it is for",
            key,
        )
    facts += [f"> **Next action:** {nxt or '(not set)'}", ""]
    if not nxt:
        key = field(data, "next_action")[0]
        unset(
            f'`{key}` is not set: `agentctl state next "TEXT"` sets it, so the next '
            "session knows where to go",
            key,
        )
    phase = _scalar(data, "phase", warn)
    shown = [f"**{label}:** {v}" for label, v in (("Task", task), ("Phase", phase)) if v]
    if shown:
        facts += [" · ".join(shown), ""]
    parts: Parts = [facts]
    parts.append(_list_part(data, "completed_steps", "Completed steps", _step, warn))
    parts.append(_list_part(data, "blockers", "Blockers", _plain_item, warn))
    parts.append(_list_part(data, "constraints", "Constraints", _plain_item, warn))
    parts.append(_list_part(data, "key_decisions", "Key decisions", _decision_item, warn))
    parts += _own_lists(data)
    tail: list[str] = []
    if updated := _scalar(data, "updated_at", warn):
        tail += [f"_Updated: {updated}_", ""]
    parts.append(tail + _other_fields(data))
    return [p for p in parts if p and (isinstance(p, ListPart) or strip_blank(p))]


def to_markdown(data: dict[str, object], warn: Warn, unset: Warn | None = None) -> list[str]:
    """state.json as Markdown lines, every list whole (``to_parts``, flattened)."""
    out: list[str] = []
    for part in to_parts(data, warn, unset):
        if isinstance(part, ListPart):
            out += [f"**{part.label}:**", *part.items, ""]
        else:
            out += part
    return strip_blank(out)


def handoff(data: object, warn: Warn) -> str | None:
    """The ``handoff`` text of a state.json, None when there is none."""
    value = data.get("handoff") if isinstance(data, dict) else None
    if not value or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        warn("field `handoff` should be a string", "handoff")
        value = json.dumps(value, ensure_ascii=False)
    return value.strip()


def _scalar(data: dict[str, object], canon: str, warn: Warn) -> str | None:
    key, value = field(data, canon)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        warn(f"field `{key}` should be a string, not {_type(value)}", key)
        return _preview(value, 200)
    return str(value).strip()


def _list_part(
    data: dict[str, object], canon: str, label: str, item: _Item, warn: Warn
) -> list[str] | ListPart:
    """A growing list (completed steps, key decisions) as a ``ListPart``; the
    others (blockers, constraints: facts) as lines."""
    key, value = field(data, canon)
    if value is None or value == [] or (isinstance(value, str) and _is_none(value)):
        return []
    if isinstance(value, str):  # one item written without the list around it
        value = [value]
    if not isinstance(value, list):
        warn(f"field `{key}` should be a list, not {_type(value)}", key)
        return [f"**{label}:** {_preview(value, 200)}", ""]
    lines, bad = [], []
    for i, entry in enumerate(value):
        text = item(entry)
        if text is None:
            bad.append(f"`{key}[{i}]`")
            text = _preview(entry, 200)
        lines.append(f"- {text}")
    if bad:  # one warning, however many: a long list must not fill the bootstrap with them
        more = f" and {len(bad) - BAD_NAMED} more" if len(bad) > BAD_NAMED else ""
        named = ", ".join(bad[:BAD_NAMED]) + more
        warn(f"{named} {'is' if len(bad) == 1 else 'are'} not in the expected form", key)
    if canon in GROWING:
        return ListPart(label, lines)
    return [f"**{label}:**", *lines, ""]


def _is_none(text: str) -> bool:
    return " ".join(text.split()).casefold() in NONE_MARKERS or not text.strip()


def _step(entry: object) -> str | None:
    if isinstance(entry, str):
        return f"{entry} (pending verification)"
    if not isinstance(entry, dict):
        return None
    if not isinstance(entry.get("text"), str):  # the agent's own keys: `step`, `title`...
        text = json_text(entry)
        verified = entry.get("verified")
        if text is None:
            return None
        if not verified:
            return f"{text} (pending verification)"
        return f"{text} - verified" + ("" if verified is True else f": {_preview(verified, 120)}")
    at = f" ({entry['at']})" if entry.get("at") else ""
    verified = entry.get("verified")
    if not verified:
        return f"{entry['text']}{at} (pending verification)"
    how = "" if verified is True else f": {_preview(verified, 120)}"
    return f"{entry['text']}{at} - verified{how}"


def _plain_item(entry: object) -> str | None:
    return json_text(entry)


def _decision_item(entry: object) -> str | None:
    if isinstance(entry, str):
        return entry
    if not isinstance(entry, dict):
        return None
    if not isinstance(entry.get("decision"), str):  # `title`, `text`, `choice`...
        return json_text(entry)
    reason = entry.get("reason")
    decision: str = entry["decision"]
    if not reason:
        return decision
    because = "" if str(reason).lower().startswith(("because", "因为")) else "because "
    return f"{decision} - {because}{reason}"


def _own_lists(data: dict[str, object]) -> Parts:
    """The agent's own lists (not the schema's): what says what to do now
    (``next_steps``, ``todo``) as facts, the others (``done``, ``history``,
    ``decisions``) as records, newest last."""
    parts: Parts = []
    for key, value in data.items():
        if key in KNOWN_KEYS or not _own(key, value):
            continue
        label = key.replace("_", " ").capitalize()
        if isinstance(value, str):  # `current_step`, `下一步`: whole, not a preview
            parts.append([f"**{label}:** {value.strip()}", ""])
            continue
        assert isinstance(value, list)
        texts, _ = json_items(value)
        lines = [f"- {t}" for t in texts]
        if role(key.replace("_", " ")) == "now":
            parts.append([f"**{label}:**", *lines, ""])
        else:
            parts.append(ListPart(label, lines))
    return parts


def _own(key: str, value: object) -> bool:
    """Is ``value`` one of the agent's own fields shown whole (``_own_lists``)?"""
    if isinstance(value, list):
        return bool(value)
    return isinstance(value, str) and bool(value.strip()) and role(key.replace("_", " ")) == "now"


def _other_fields(data: dict[str, object]) -> list[str]:
    extra = [k for k in data if k not in KNOWN_KEYS and not _own(k, data[k])]
    if not extra:
        return []
    # Briefly: the agent wrote them for a reason, but they are not the schema.
    return ["**Other fields:** " + "; ".join(f"`{k}`: {_preview(data[k], 60)}" for k in extra)]


def _preview(value: object, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type(value: object) -> str:
    names = {dict: "an object", list: "a list", bool: "a boolean", str: "a string"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else "null")
