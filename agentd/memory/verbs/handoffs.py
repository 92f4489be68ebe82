"""Handoffs: a dated note for the next session, shown once, then kept as history.

``agentctl state handoff TEXT`` writes ``[2026-12-01 14:32 · session 12] TEXT``
into the layout's handoff place (a state.json field, a Markdown section, or
the ``checkpoint`` layout's checkpoint file, which dates itself). When agentd starts a session it
renders the bootstrap, which shows the handoff, then ``retire`` moves the
handoff to ``handoffs.md`` (newest last) and clears its place: the session
after sees a handoff only if the one before wrote a new one, never a stale
one. ``agentctl state show --all`` prints the history.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from agentd import fileio
from agentd.memory import statedir
from agentd.memory.formats import markdown
from agentd.memory.layout import Layout, LayoutFile, Target, load_layout, templates
from agentd.memory.verbs.ops import Docs, StateDir, StateError, stamp
from agentd.memory.verbs.targets import read

HISTORY = "handoffs.md"


def dated(text: str, now: float) -> str:
    """``text`` with the time and the session that wrote it in front."""
    session = os.environ.get("AGENTD_SESSION", "")
    by = f" · session {session}" if session.isdigit() else ""
    return f"[{stamp(now)}{by}] {text}"


def layout_of(layout: str | Sequence[LayoutFile]) -> Layout:
    """A preset by name, or an inline list of files (whose handoff is the
    ``handoff`` field of the state.json its ``kind: handoff`` entry names)."""
    if isinstance(layout, str):
        return load_layout(layout)
    return Layout(name="", files=tuple(layout))


def _targets(layout: Layout) -> list[Target]:
    if layout.state.handoff is not None:
        return [layout.state.handoff]
    paths = dict.fromkeys(f.path for f in layout.files if f.kind == "handoff")
    return [Target(path=p, field="handoff") for p in paths]


def retire(
    state_dir: Path, layout: str | Sequence[LayoutFile], session: int, now: float
) -> str | None:
    """Move the handoff (just shown to ``session``) into ``handoffs.md``;
    returns its text, None when there was none."""
    sd = StateDir(state_dir, layout_of(layout), "recorded")
    if not any((state_dir / t.path).is_file() for t in _targets(sd.layout)):
        return None
    with fileio.locked(state_dir):
        docs = Docs(sd)
        moved = take(docs)
        if not moved:
            return None
        docs.save()
        history = state_dir / HISTORY
        gap = "\n" if history.is_file() and history.stat().st_size else ""
        fileio.append_line(history, gap + history_entry(moved, session, now))
    return moved


def take(docs: Docs) -> str | None:
    """The handoff in ``docs``, cleared there (not saved); None when there is none."""
    moved: list[str] = []
    for t in _targets(docs.sd.layout):
        if not (docs.sd.path / t.path).is_file():
            continue
        try:
            lines = read(docs, t)
        except StateError:
            continue  # a broken state.json: the bootstrap warned, leave it alone
        text = "\n".join(markdown.strip_blank(lines)).strip()
        if text and not markdown.is_placeholder(text):
            _clear(docs, t)
            moved.append(text)
    return "\n\n".join(moved) or None


def history_entry(text: str, session: int, now: float) -> str:
    """One entry of ``handoffs.md``: which session was shown ``text``, and when."""
    return f"## Shown to session {session} ({stamp(now)})\n\n{text}"


def _clear(docs: Docs, t: Target) -> None:
    if t.is_json:
        docs.json(t.path)[t.field or ""] = ""
        docs.changed(t.path)
    elif t.form == "checkpoint":
        template = templates(docs.sd.layout.name) / t.path if docs.sd.layout.name else None
        text = template.read_text(encoding="utf-8") if template and template.is_file() else ""
        docs.set_lines(t.path, text.splitlines())
    else:
        docs.set_lines(t.path, markdown.set_body(docs.lines(t.path), t.names, []))


def history(state_dir: Path) -> str:
    """The handoffs shown so far, oldest first ("" when none)."""
    try:
        return statedir.read_head(state_dir / HISTORY, statedir.TEXT_MAX_BYTES)[0]
    except OSError:
        return ""
