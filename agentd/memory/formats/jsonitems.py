"""The items of a JSON record, whatever keys the agent gave them.

``json_items(values)`` reads an array of strings or of objects, whatever
text-like key they use (``text``, ``title``, ``decision``, ``step``,
``内容``...), with a reason and a date when they have one; ``json_record(text)``
finds that array in a JSON document (its top level, or the list in an object:
a record-like key first, else the longest) or in a JSON Lines file. The
Markdown shapes are ``agentd.memory.formats.items``'. No I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

# The key that holds an object's text, most likely first; then its reason and date.
TEXT_KEYS = (
    "text",
    "title",
    "summary",
    "decision",
    "description",
    "desc",
    "step",
    "task",
    "item",
    "what",
    "action",
    "name",
    "content",
    "message",
    "msg",
    "note",
    "done",
    "change",
    "result",
    "detail",
    "details",
    "内容",
    "标题",
    "决策",
    "描述",
    "任务",
    "步骤",
    "事项",
)
REASON_KEYS = ("why", "reason", "rationale", "because", "理由", "原因")
DATE_KEYS = ("at", "date", "time", "when", "timestamp", "updated_at", "日期", "时间")
RECORD_KEYS = (
    "items",
    "entries",
    "decisions",
    "records",
    "log",
    "history",
    "done",
    "completed",
    "steps",
    "gotchas",
    "notes",
)


def json_text(value: object) -> str | None:
    """The text of one JSON record item: a string, a number, or an object's
    text-like field with its reason and date (None: nothing that reads as text)."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return str(value)
    if not isinstance(value, dict):
        return None
    keys = {str(k).casefold(): k for k in value}
    text = _first_string(value, keys, TEXT_KEYS)
    if text is None:
        text = next((v.strip() for v in value.values() if isinstance(v, str) and v.strip()), None)
    if text is None:
        return None
    when = _first_string(value, keys, DATE_KEYS)
    why = _first_string(value, keys, REASON_KEYS)
    if when and when not in text:
        text = f"{text} ({when})"
    if why and why not in text:
        because = "" if why.casefold().startswith(("because", "因为", "since")) else "because "
        text = f"{text} - {because}{why}"
    return text


def _first_string(
    value: dict[str, object], keys: dict[str, str], names: Sequence[str]
) -> str | None:
    for name in names:
        key = keys.get(name)
        found = value[key] if key is not None else None
        if isinstance(found, str) and found.strip():
            return found.strip()
    return None


def json_items(values: Sequence[object]) -> tuple[list[str], list[int]]:
    """(the text of each item, the indexes of those that read as no text)."""
    texts, bad = [], []
    for i, value in enumerate(values):
        text = json_text(value)
        if text is None:
            bad.append(i)
            text = json.dumps(value, ensure_ascii=False)[:200]
        texts.append(text)
    return texts, bad


def json_record(text: str) -> tuple[list[object], str] | None:
    """The record array of a JSON document (its top level, or the list in an
    object: a record-like key first, else the longest), or of a JSON Lines
    file; with where it was found. None: not JSON."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if not stripped.startswith(("[", "{", '"')):
        return None
    try:
        data = json.loads(stripped)
    except (ValueError, RecursionError):
        return _json_lines(stripped)
    if isinstance(data, list):
        return data, "the top-level array"
    if not isinstance(data, dict):
        return None
    lists = {str(k): v for k, v in data.items() if isinstance(v, list)}
    if not lists:
        return None
    named = [k for k in lists if k.casefold() in RECORD_KEYS]
    key = named[0] if named else max(lists, key=lambda k: len(lists[k]))
    return lists[key], f"the array `{key}`"


def _json_lines(text: str) -> tuple[list[object], str] | None:
    values: list[object] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except (ValueError, RecursionError):
            return None
    return (values, "one JSON value per line") if len(values) >= 2 else None
