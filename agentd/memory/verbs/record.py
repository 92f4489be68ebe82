"""``agentctl state mission|task|next|done|block|handoff|decide|complete``: record, locked.

Every layout keeps ``decisions.log`` (the six-field lines, ``agentd.memory.formats.decisions``)
and ``snapshots/`` in the state dir root; a layout with a decision file of its
own (``decisions.md``, ``key_decisions`` in state.json) gets the decision
there too. The snapshot is written before the log line that names it.

A handoff is dated (``agentd.memory.verbs.handoffs``); a new mission clears the
completion mark that ``complete`` writes (``agentd.memory.formats.complete``).

``mission|task|next|done|block|handoff`` run after every step of an agent, so the
decision machinery (``decisions``, whose line grammar is a large regex, and
``snapshots``) is imported only when a decision is recorded.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from agentd import fileio
from agentd.memory.formats import complete
from agentd.memory.formats.markdown import next_entry_number, strip_trailing_blank
from agentd.memory.verbs.ops import Docs, StateDir, StateError, stamp
from agentd.memory.verbs.targets import apply, read

if TYPE_CHECKING:
    from agentd.memory.formats.decisions import Decision

LOG = "decisions.log"
VERBS = ("mission", "task", "next", "done", "block", "handoff")
TASK_SWITCH_WHY = "the task changed: the decisions after this line serve the new task"


def write(
    sd: StateDir,
    verb: str,
    text: str,
    now: float,
    *,
    verified: str | None = None,
    cwd: Path | None = None,
) -> str:
    """Record ``text`` with ``verb``; returns what was done, for the user."""
    target = getattr(sd.layout.state, verb)
    if target is None:
        raise StateError(f"layout {sd.layout.name!r} has no place for `{verb}`")
    if verb == "handoff" and target.form != "checkpoint":  # a checkpoint dates itself
        from agentd.memory.verbs.handoffs import dated

        text = dated(text, now)
    with fileio.locked(sd.path):
        docs = Docs(sd)
        apply(docs, target, text, now, verified=verified)
        docs.save()
        cleared = verb == "mission" and complete.clear(sd.path)
        if verb == "task" and sd.layout.state.task_switch_decision:
            from agentd.memory.formats.decisions import Decision

            d = Decision(
                at=stamp(now), decision=f"switch to task: {text}", why=TASK_SWITCH_WHY, tag="task"
            )
            _record(sd, d, [], now, cwd or Path.cwd())
    part = target.field or target.section
    note = " (the completion mark is cleared: a new mission)" if cleared else ""
    return f"{verb}: recorded in {sd.path / target.path}" + (f" ({part})" if part else "") + note


def mark_complete(sd: StateDir, summary: str, now: float) -> str:
    """``agentctl state complete``: the mission is done; returns what was done."""
    with fileio.locked(sd.path):
        path = complete.mark(sd.path, summary, stamp(now))
    return (
        f"complete: recorded in {path}; when this session ends, agentd ends the unit "
        "`done` (a new `agentctl state mission` clears it)"
    )


def check_decision(d: Decision) -> None:
    """ValueError (a usage error) when ``d`` cannot be written as one log line."""
    from agentd.memory.formats.decisions import format_line

    format_line(d._replace(snapshot="snapshot-000"))


def decide(sd: StateDir, d: Decision, files: list[str], now: float, cwd: Path) -> str:
    """Record decision ``d`` with a snapshot; returns the snapshot's name."""
    check_decision(d)
    with fileio.locked(sd.path):
        return _record(sd, d, files, now, cwd)


def _record(sd: StateDir, d: Decision, files: list[str], now: float, cwd: Path) -> str:
    """Under the lock: snapshot, log line, the layout's own decision record."""
    from agentd.memory.formats import snapshots
    from agentd.memory.formats.decisions import format_line

    name = snapshots.next_name(sd.path)
    d = d._replace(snapshot=name)
    line = format_line(d)
    docs = Docs(sd)
    try:
        task = " ".join(read(docs, sd.layout.state.task))
    except StateError:
        task = ""  # an unreadable task file must not lose the decision
    record: dict[str, object] = {
        "time": datetime.fromtimestamp(now).astimezone().isoformat(timespec="seconds"),
        "decision": d.decision,
        "why": d.why,
        "tag": d.tag or None,
        "alternatives": d.alternatives or None,
        "task": task or None,
    }
    snapshots.take(sd.path, name, record, files, cwd, sd.workdir)
    fileio.append_line(sd.path / LOG, line)
    own_record(docs, d, now)
    docs.save()
    return name


def own_record(docs: Docs, d: Decision, now: float) -> None:
    """Add ``d`` to the layout's own decision record (beside decisions.log), in ``docs``."""
    from agentd.memory.formats.decisions import format_entry

    for t in docs.sd.layout.state.decide:
        if t.form == "entry":
            lines = strip_trailing_blank(docs.lines(t.path))
            entry = format_entry(next_entry_number(lines), d)
            docs.set_lines(t.path, [*lines, *([""] if lines else []), *entry])
        else:
            apply(docs, t, d.decision, now, why=d.why)
