"""``agentctl state archive``: keep the state small enough to re-read.

- ``decisions.log`` is cut into epochs of ``EPOCH`` decisions (as the write-up of
  the ``decision-log`` layout does): every complete epoch but the current one moves to
  ``decisions-epoch-N.log``, so the log keeps between 1 and 50 lines.
- Snapshots beyond the newest ``KEEP_SNAPSHOTS`` move to ``snapshots/archive/``.
- Each rule of the layout's ``archive:`` list moves the oldest entries of a
  list (completed steps, done items, key decisions, summary lines) to its
  ``to`` file, keeping the newest ``keep`` (the ``four-file`` and ``memento``
  layouts). JSON entries are
  archived as JSON lines, or as Markdown items when ``to`` ends in ``.md``.
- Constraints are never archived. A state file still longer than one screen
  (``SCREEN_LINES``) is reported, for a person or the agent to shorten.
"""

from __future__ import annotations

import json
import re
import time

from agentd import fileio
from agentd.memory.formats import items, markdown, outline, snapshots
from agentd.memory.layout import ArchiveRule
from agentd.memory.verbs.ops import Docs, StateDir
from agentd.memory.verbs.record import LOG
from agentd.memory.verbs.targets import item_text, json_list

EPOCH = 50
KEEP_SNAPSHOTS = 20
SCREEN_LINES = 50
EPOCH_FILE = re.compile(r"^decisions-epoch-(\d+)\.log$")


def archive(sd: StateDir, now: float) -> list[str]:
    """Archive what has grown; returns a report, one line a change."""
    with fileio.locked(sd.path):
        report = _epochs(sd)
        moved = snapshots.archive_old(sd.path, KEEP_SNAPSHOTS)
        if moved:
            report.append(f"moved {moved} older snapshots to {sd.path / 'snapshots' / 'archive'}")
        docs = Docs(sd)
        for rule in sd.layout.archive:
            report += _apply_rule(docs, rule, now)
        docs.save()
        report += _too_long(sd)
    return report or ["nothing to archive"]


def _epochs(sd: StateDir) -> list[str]:
    log = sd.path / LOG
    if not log.is_file():
        return []
    lines = [
        ln for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()
    ]
    full = (len(lines) - 1) // EPOCH  # complete epochs before the current one
    if full <= 0:
        return []
    taken = [int(m[1]) for p in sd.path.iterdir() if (m := EPOCH_FILE.match(p.name))]
    first = max(taken, default=0) + 1
    report = []
    for k in range(full):  # epoch files first: a crash now duplicates, never loses
        chunk = lines[k * EPOCH : (k + 1) * EPOCH]
        target = sd.path / f"decisions-epoch-{first + k}.log"
        fileio.write_atomic(target, "\n".join(chunk) + "\n")
        report.append(f"moved {len(chunk)} decisions to {target}")
    fileio.write_atomic(log, "\n".join(lines[full * EPOCH :]) + "\n")
    return report


def _apply_rule(docs: Docs, rule: ArchiveRule, now: float) -> list[str]:
    to = rule.to.format(year=time.strftime("%Y", time.localtime(now)))
    if rule.is_json:
        data = docs.json(rule.path)
        items = json_list(data, rule.field or "", rule.path)
        old, data[rule.field or ""] = items[: -rule.keep], items[-rule.keep :]
        if old:
            docs.touch_json(rule.path, now)
        moved = [
            f"- {item_text(x)}" if to.endswith(".md") else json.dumps(x, ensure_ascii=False)
            for x in old
        ]
    else:
        lines, moved = _take_old(docs.lines(rule.path), rule)
        if moved:
            docs.set_lines(rule.path, lines)
    if not moved:
        return []
    docs.set_lines(to, [*markdown.strip_trailing_blank(docs.lines(to)), *moved])
    label = rule.field or rule.section or "entries"
    return [f"moved {len(moved)} of {rule.path} ({label}) to {docs.sd.path / to}"]


def _take_old(lines: list[str], rule: ArchiveRule) -> tuple[list[str], list[str]]:
    """``lines`` without the oldest done items (or dated lines) beyond ``keep``.
    A section's items are read as the bootstrap reads them
    (``agentd.memory.formats.items``): any list style, an item with its
    continuation lines; in a growing list (``## DONE``, ``## 进度``) every item
    not marked open is done, elsewhere those marked ``[x]``."""
    if rule.form == "line":
        idx = [i for i, ln in enumerate(lines) if ln.startswith("- [")]
        dated = set(idx[: max(len(idx) - rule.keep, 0)])
        return [ln for i, ln in enumerate(lines) if i not in dated], [
            lines[i] for i in sorted(dated)
        ]
    sec = markdown.find_section(lines, rule.names)
    if sec is None:
        return lines, []
    growing = outline.role(markdown.headings(lines[sec.heading : sec.start])[0][2]) == "list"
    found = items.read(lines[sec.start : sec.end], 1).items
    done = [
        item
        for item in found
        if rule.form != "step" or item.mark == "x" or (growing and item.mark is None)
    ]
    old: set[int] = set()
    for item in done[: max(len(done) - rule.keep, 0)]:
        start = sec.start + item.line - 1
        old.update(range(start, start + len(item.own)))
    return [ln for i, ln in enumerate(lines) if i not in old], [lines[i] for i in sorted(old)]


def _too_long(sd: StateDir) -> list[str]:
    verbs = sd.layout.state
    paths = {t.path for t in (verbs.task, verbs.next, verbs.done, verbs.block) if t}
    report = []
    for rel in sorted(paths):
        try:
            count = len((sd.path / rel).read_text(encoding="utf-8").splitlines())
        except OSError:
            continue
        if count > SCREEN_LINES:
            report.append(
                f"{sd.path / rel} still has {count} lines (one screen is about {SCREEN_LINES}): "
                "shorten it by hand - drop decisions that no longer bind; constraints stay"
            )
    return report
