"""The outline of a must-keep Markdown file: which sections say what to do now,
which are growing lists, which are other facts.

A task-state file mixes the two things the bootstrap must tell apart: the
sections that say what to do now (current task, next step, blockers,
handoff; ``当前任务``, ``下一步``, ``卡住的问题``, ``上次中断时的状态``...),
which the next session cannot work without, and the lists that only grow
(done, progress, completed, history; ``已完成``, ``进度``...), of which the
newest items matter. ``outline(lines)`` splits a file into ``Span``s by its
headings - ``#`` headings of any level, and label lines such as ``**Done:**``
or ``下一步：`` that name one of those sections - and gives each its ``Role``.
A section under a growing list (``### Week 2`` under ``## DONE``) is part of
it. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from agentd.memory.formats import items
from agentd.memory.formats.markdown import (
    HEADING,
    comment_lines,
    find_sections,
    heading_key,
    strip_blank,
)

Role = Literal["now", "list", "text"]

# The sections that say what to do now, as heading_key spells them.
NOW_NAMES = frozenset(
    {
        "current",
        "current task",
        "current tasks",
        "current state",
        "current status",
        "current step",
        "current focus",
        "current work",
        "status",
        "state",
        "task",
        "mission",
        "goal",
        "goals",
        "objective",
        "next",
        "next step",
        "next steps",
        "next action",
        "next actions",
        "next up",
        "up next",
        "todo",
        "to do",
        "to-do",
        "blockers",
        "blocker",
        "blocked",
        "blocked by",
        "blocking",
        "open questions",
        "open issues",
        "open problems",
        "handoff",
        "hand-off",
        "handover",
        "hand over",
        "interrupted at",
        "where i stopped",
        "in progress",
        "wip",
        "resume here",
        "当前任务",
        "当前状态",
        "当前步骤",
        "当前阶段",
        "当前工作",
        "任务",
        "目标",
        "下一步",
        "接下来",
        "待办",
        "待办事项",
        "卡住的问题",
        "阻塞",
        "阻塞问题",
        "阻碍",
        "未解决的问题",
        "上次中断时的状态",
        "中断时的状态",
        "中断位置",
        "交接",
        "交接说明",
        "进行中",
        "正在进行",
    }
)
# The lists that only grow (done items, decisions, gotchas): shown newest first, like a record.
LIST_NAMES = frozenset(
    {
        "done",
        "done so far",
        "done today",
        "done items",
        "done tasks",
        "completed",
        "completed steps",
        "completed tasks",
        "completed items",
        "complete",
        "finished",
        "accomplished",
        "progress",
        "progress log",
        "history",
        "log",
        "work log",
        "worklog",
        "changelog",
        "change log",
        "changes",
        "journal",
        "timeline",
        "what was done",
        "decisions",
        "key decisions",
        "decision log",
        "decision record",
        "gotchas",
        "known gotchas",
        "lessons learned",
        "已完成",
        "完成",
        "已做",
        "完成记录",
        "已完成的工作",
        "已完成事项",
        "当前进度",
        "进度",
        "进展",
        "历史",
        "日志",
        "工作记录",
        "工作日志",
        "里程碑",
        "决策",
        "决策记录",
        "关键决策",
        "踩坑记录",
        "已知陷阱",
    }
)
LONGEST_NAME = 48  # a heading longer than this (before a colon) names no section role
_PAREN = re.compile(r"\s*[(（][^()（）]*[)）]\s*$")
_CJK_START = re.compile(r"^[\u3400-\u9fff]")


@lru_cache(maxsize=1024)
def role(name: str) -> Role:
    """What the section called ``name`` is: ``now``, ``list`` or ``text``."""
    if len(re.split(r"[:：]", name, maxsplit=1)[0]) > LONGEST_NAME:  # an entry's title
        return "text"
    key = heading_key(_PAREN.sub("", name) or name)
    key = re.split(r"\s*[:：]\s*", key, maxsplit=1)[0]  # `Current task: refactor auth`
    if key in LIST_NAMES:
        return "list"
    if key in NOW_NAMES:
        return "now"
    if _CJK_START.match(key):  # Chinese compounds: `下一步计划`, `已完成的任务`
        if any(key.startswith(n) for n in LIST_NAMES if _CJK_START.match(n)):
            return "list"
        if any(key.startswith(n) for n in NOW_NAMES if _CJK_START.match(n)):
            return "now"
    return "text"


@dataclass(frozen=True)
class Span:
    """Lines ``start`` to ``end`` of a file: a heading (or label) and its body."""

    start: int
    end: int
    role: Role
    name: str = ""  # the heading's name; "" for the lines before the first heading
    heading: bool = False  # ``lines[start]`` is the heading (or label) line


def outline(lines: Sequence[str]) -> list[Span]:
    """``lines`` as spans, one per heading (and one for the lines before the
    first), each with its role. A ``list`` section's span holds the sections
    under it (``### Week 2`` under ``## DONE``), unless one says what to do now."""
    hidden = comment_lines(lines)
    starts: list[tuple[int, int, str]] = []  # (index, level, name); labels are level 7
    fenced = False
    for i, line in enumerate(lines):
        if items.FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or i in hidden:
            continue
        if line.startswith("#") and (h := HEADING.match(line)):
            starts.append((i, len(h["hashes"]), h["name"]))
        elif items.LABEL.match(line) and role(_label_name(line)) != "text":
            starts.append((i, 7, _label_name(line)))
    spans: list[Span] = []
    if not starts or starts[0][0] > 0:
        spans.append(Span(0, starts[0][0] if starts else len(lines), "text"))
    k = 0
    while k < len(starts):
        i, level, name = starts[k]
        own = role(name)
        k += 1
        if own == "list":
            while k < len(starts) and starts[k][1] > level and role(starts[k][2]) != "now":
                k += 1
        end = starts[k][0] if k < len(starts) else len(lines)
        spans.append(Span(i, end, own, name, heading=True))
    return spans


def _label_name(line: str) -> str:
    return line.strip().strip("*_").rstrip(":：").strip("*_ ")


def guesses(lines: Sequence[str], first: int = 1, *, record: bool) -> list[items.Guess]:
    """Where reading ``lines`` (a whole record, or a must-keep file's growing
    lists) had to guess, with file lines counted from ``first``."""
    if record:
        return items.read(lines, first).guesses
    found: list[items.Guess] = []
    for span in outline(lines):
        if span.role == "list":
            body = span.start + 1 if span.heading else span.start
            found += items.read(lines[body : span.end], first + body if first else 0).guesses
    return found


def find(lines: Sequence[str], name: str) -> tuple[int, int] | None:
    """(start, end) of the section ``name``: a heading (``find_section``), else
    a label line that names it (``**Next:**``, ``下一步：``)."""
    return find_all(lines, [name])[0]


def find_all(lines: Sequence[str], names: Sequence[str]) -> list[tuple[int, int] | None]:
    """``find`` of each of ``names``, the file read once."""
    secs = find_sections(lines, [[n] for n in names])
    found = [None if s is None else (s.heading, s.end) for s in secs]
    if all(f is not None for f in found):
        return found
    labels = {heading_key(s.name): (s.start, s.end) for s in outline(lines) if s.heading}
    return [
        f if f is not None else labels.get(heading_key(n))
        for f, n in zip(found, names, strict=True)
    ]


def section_body(lines: Sequence[str], name: str) -> list[str] | None:
    """The body of the section ``name`` (``find``), blank ends removed."""
    found = find(lines, name)
    return None if found is None else strip_blank(lines[found[0] + 1 : found[1]])


def bodies(lines: Sequence[str], names: Sequence[str]) -> list[list[str] | None]:
    """``section_body`` of each of ``names``, the file read once."""
    return [
        None if f is None else strip_blank(lines[f[0] + 1 : f[1]]) for f in find_all(lines, names)
    ]
