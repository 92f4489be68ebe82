"""Decisions: the six-field log line (docs/layouts.md) and the Markdown entry.

One decision per line of ``decisions.log``; blank lines are ignored::

    [YYYY-MM-DD HH:MM] [TAG] decision: D | why: W | files: F | snapshot: S | alternatives: A

``[TAG]`` may be ``[]`` or left out; ``| alternatives: ...`` may be empty or
left out; decision, why, files and snapshot must not be empty (``-`` for
none); spaces around ``|`` are free; the time must be a real date and time.
The labels may also be the ``decision-log`` write-up's own (``决策``, ``理由``, ``影响文件``,
``快照``/``状态快照``, ``替代方案``) and a colon may be full-width (``：``), so a
log written by that write-up's shell function is read as it is.

Layouts with a Markdown decision file (``four-file``, ``checkpoint``) get the
same decision as a numbered entry (the ``four-file`` layout's ``## N. title`` with its fields
as ``- key: value`` lines), see ``format_entry``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

_LABELS = {
    "decision": "decision|决策",
    "why": "why|理由",
    "files": "files|影响文件",
    "snapshot": "snapshot|状态快照|快照",
    "alternatives": "alternatives|替代方案",
}


def _label(name: str) -> str:
    return rf"(?:{_LABELS[name]})\s*[:：]\s*"


_ANY_LABEL = "|".join(_LABELS.values())
# A field's value: not blank, and a `|` inside it only where no label follows.
# Possessive (Python 3.11): checking a line stays linear in its length.
_VALUE = rf"(?=[^\s|])(?:[^|]++|\|(?!\s*(?:{_ANY_LABEL})\s*[:：]))*+"


def _field(name: str) -> str:
    return rf"\|\s*{_label(name)}(?P<{name}>{_VALUE})"


DECISION_LINE = re.compile(
    r"^\[(?P<at>\d{4}-\d{2}-\d{2}\ \d{2}:\d{2})\]"
    r"(?:\s*\[(?P<tag>[^\]]*)\])?"
    rf"\s*{_label('decision')}(?P<decision>{_VALUE})"
    rf"{_field('why')}{_field('files')}{_field('snapshot')}"
    rf"(?:\|\s*{_label('alternatives')}(?P<alternatives>.*))?"
    r"\s*$"
)
DECISION_FORM = (
    "[YYYY-MM-DD HH:MM] [tag] decision: ... | why: ... | files: ... | snapshot: ... "
    "| alternatives: ..."
)
TIME_FORMAT = "%Y-%m-%d %H:%M"


class Decision(NamedTuple):
    at: str  # YYYY-MM-DD HH:MM, local time
    decision: str
    why: str
    files: str = "-"
    snapshot: str = "-"
    tag: str = ""
    alternatives: str = ""

    @property
    def file_list(self) -> list[str]:
        return [] if self.files.strip() == "-" else [f.strip() for f in self.files.split(",")]


def parse_line(line: str) -> Decision | None:
    """The decision on ``line``, or None when it is not in the six-field form."""
    m = DECISION_LINE.match(line)
    if m is None or not _real_time(m["at"]):
        return None
    return Decision(
        at=m["at"],
        tag=(m["tag"] or "").strip(),
        decision=m["decision"].strip(),
        why=m["why"].strip(),
        files=m["files"].strip(),
        snapshot=m["snapshot"].strip(),
        alternatives=(m["alternatives"] or "").strip(),
    )


@lru_cache(maxsize=4096)
def _real_time(at: str) -> bool:
    """Is ``YYYY-MM-DD HH:MM`` (the form the line's pattern took) a real date and
    time? (Cached: a log's lines share their minutes. Not strptime: its first
    call costs ``agentctl state decide`` 8 ms.)"""
    try:
        datetime.fromisoformat(at)
    except ValueError:
        return False
    return True


def _one_line(text: str) -> str:
    return " ".join(text.split())


def format_line(d: Decision) -> str:
    """``d`` as one log line (no newline). ValueError when a field would not
    read back as itself (it contains ``| why:`` or the like, or is empty)."""
    clean = Decision(
        at=d.at,
        tag=_one_line(d.tag).replace("]", ")"),
        decision=_one_line(d.decision),
        why=_one_line(d.why),
        files=_one_line(d.files) or "-",
        snapshot=_one_line(d.snapshot) or "-",
        alternatives=_one_line(d.alternatives),
    )
    tag = f" [{clean.tag}]" if clean.tag else ""
    line = (
        f"[{clean.at}]{tag} decision: {clean.decision} | why: {clean.why} | files: {clean.files}"
        f" | snapshot: {clean.snapshot}"
    )
    if clean.alternatives:
        line += f" | alternatives: {clean.alternatives}"
    if parse_line(line) != clean:
        raise ValueError(
            "the decision does not fit the six-field form: each field must be non-empty "
            "and must not contain `| why:`, `| files:` or another field's label"
        )
    return line


def is_decision(line: str) -> bool:
    m = DECISION_LINE.match(line)
    return m is not None and _real_time(m["at"])


def bad_lines(lines: Sequence[str]) -> list[int]:
    """Indexes of the non-blank ``lines`` that are not decisions."""
    return [i for i, line in enumerate(lines) if line.strip() and not is_decision(line)]


def scan_file(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of every non-blank line of ``path`` that is not a
    decision. Reads the file once, streaming (``agentctl state check``)."""
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if line.strip() and not is_decision(line):
                yield number, line


def format_entry(number: int, d: Decision) -> list[str]:
    """``d`` as a numbered Markdown entry, the ``four-file`` layout's ``decisions.md`` form."""
    tag = f"[{d.tag}] " if d.tag else ""
    lines = [
        f"## {number}. {tag}{_one_line(d.decision)}",
        "",
        f"- date: {d.at}",
        f"- why: {_one_line(d.why)}",
    ]
    if d.file_list:
        lines.append(f"- files: {', '.join(d.file_list)}")
    if d.alternatives:
        lines.append(f"- alternatives: {_one_line(d.alternatives)}")
    if d.snapshot.strip() not in ("", "-"):
        lines.append(f"- snapshot: {d.snapshot}")
    lines.append("- status: active")
    return lines
