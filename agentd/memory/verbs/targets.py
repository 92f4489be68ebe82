"""A verb's text written into its layout target, and a target read back.

A ``Target`` (``agentd.memory.layout``) is a field of a JSON file (a value,
or a list of items), a section of a Markdown file (its text, or its list),
a line appended to a log, or a checkpoint file made of the other targets.
"""

from __future__ import annotations

import json
import os

from agentd.memory.formats import markdown
from agentd.memory.formats.markdown import NONE_MARKERS
from agentd.memory.layout import Target
from agentd.memory.verbs.ops import Docs, StateError, stamp

CHECKPOINT_DONE = 5  # done items a checkpoint repeats


def apply(
    docs: Docs,
    t: Target,
    text: str,
    now: float,
    *,
    verified: str | None = None,
    why: str | None = None,
) -> None:
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


def _apply_json(
    docs: Docs, t: Target, text: str, now: float, *, verified: str | None, why: str | None
) -> None:
    data = docs.json(t.path)
    key = t.field or ""
    if t.form == "text":
        data[key] = text
    else:
        items = json_list(data, key, t.path)
        if t.form == "step":
            # state.json: {text, at, verified}; verified is null until someone checked it
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
        return markdown.set_key(lines, names, t.key or "", text)
    if t.form == "item":
        return markdown.edit_items(lines, names, add=f"- {text}")[0]
    if t.form == "first-item":
        return markdown.edit_items(lines, names, add=f"- [ ] {text}", remove=text, first=True)[0]
    # step: a done item; the same text as a to-do item is crossed off
    item = f"- [x] {text}" + (f" (verified: {verified})" if verified else "")
    if t.cross_off in names:  # the to-do item turns into the done one, in place
        return markdown.edit_items(lines, names, add=item, remove=text, replace_removed=True)[0]
    if t.cross_off and markdown.find_section(lines, [t.cross_off]) is not None:
        lines = markdown.edit_items(lines, [t.cross_off], remove=text)[0]
    return markdown.edit_items(lines, names, add=item)[0]


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
        value = markdown.get_key(lines, t.names, t.key or "")
        return [value] if value else []
    if t.form in ("item", "first-item", "step"):
        return [text for _, text in markdown.items(lines, t.names)]
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


def _same(a: object, b: str) -> bool:
    return isinstance(a, str) and " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _is_none(value: object) -> bool:
    return value is None or (
        isinstance(value, str) and " ".join(value.split()).casefold() in NONE_MARKERS | {""}
    )
