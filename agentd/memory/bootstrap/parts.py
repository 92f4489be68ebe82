"""A layout file rendered for the budget: a ``Block`` of ``Part``s - facts,
records, free text - and what each line costs.

The file kinds (``agentd.memory.bootstrap.kinds``) render a file to Markdown lines;
this module says which of those lines are what for the budget
(``agentd.memory.bootstrap.fit``): in a must-keep file, the sections that say
what to do now are cut last, and its growing lists (``## DONE``, ``## 进度``)
and runs of done items (``- [x]``) are records of their own
(``agentd.memory.formats.outline``); a record file's lines group into items
(``agentd.memory.formats.items``: a list item with its continuation lines, a
heading entry, a table row; a heading travels with the item below it), and
each record gets a caption that counts what is not shown. No I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agentd.memory.formats import items, outline
from agentd.memory.layout import Keep
from agentd.tokens import count_cjk, estimate_tokens

Caption = Callable[[int, int], list[str]]  # (items shown, items in all) -> lines


def no_caption(shown: int, total: int) -> list[str]:
    return []


@dataclass
class Part:
    """A run of a file's rendered lines with one priority."""

    keep: Keep
    lines: list[str] = field(default_factory=list)  # must / free: the body
    items: list[list[str]] = field(default_factory=list)  # record: oldest first
    least: int = 0  # record: its newest items guaranteed (the layout's `tail`)
    caption: Caption = no_caption  # record: shown above its items when any is
    what: str = "items"  # record: what its items are, for the account
    unread: int | None = 0  # record: older items not read (None: not counted)
    fence: str | None = None  # wrap in a ``` fence (raw JSON, log lines)
    keep_end: bool = False  # must / free: a cut keeps the end (the newest part)
    gap: bool = False  # a blank line before it
    now: bool = False  # must: says what to do now (current task, next, blockers): cut last

    @property
    def total(self) -> int:
        """A record's items in all, read or not."""
        return len(self.items) + (self.unread or 0)

    def fenced(self, lines: list[str]) -> list[str]:
        return [f"```{self.fence}", *lines, "```"] if self.fence is not None else list(lines)

    def fence_cost(self) -> float:
        """Its opening (with the fence's info string) and closing lines."""
        return line_cost(f"```{self.fence}") + line_cost("```") if self.fence is not None else 0.0

    def whole_cost(self) -> float:
        """The cost of the part shown whole."""
        gap = 0.5 if self.gap else 0.0
        if self.keep == "record":
            body = [
                *self.caption(len(self.items), self.total),
                *(ln for item in self.items for ln in item),
            ]
            return lines_cost(body) + self.fence_cost() + gap
        return lines_cost(self.lines) + self.fence_cost() + gap


@dataclass
class Block:
    """One layout file, rendered but not yet fitted to the budget."""

    title: str
    shown: str  # the path as the agent should type it (relative to the workdir)
    parts: list[Part] = field(default_factory=list)
    lead: list[str] = field(default_factory=list)  # notes shown whenever the file is
    complete: bool = True  # False: only part of the file was read (a read cap)
    max_tokens: int | None = None
    notes: list[str] = field(default_factory=list)  # for the account: what was left out and why


def line_cost(line: str) -> float:
    """Estimated tokens of ``line`` and its newline: CJK 1 each, others 1/4."""
    cjk = count_cjk(line) if not line.isascii() else 0
    return cjk + (len(line) - cjk + 1) / 4


def lines_cost(lines: Sequence[str]) -> float:
    return sum(line_cost(line) for line in lines)


DONE_LEAST = 10  # done items of a Markdown checklist: the newest ten are guaranteed


def newest_caption(what: str, path: str, *, counted: bool = True) -> Caption:
    """``_(the newest 12 of 310 decisions; read PATH for the rest)_`` when not
    all are shown (``310+`` when not all of them were ``counted``)."""
    plus = "" if counted else "+"

    def caption(shown: int, total: int) -> list[str]:
        if shown >= total and counted:
            return []
        return [f"_(the newest {shown} of {total}{plus} {what}; read {path} for the rest)_", ""]

    return caption


def list_part(
    keep: Keep,
    items: list[list[str]],
    least: int,
    *,
    what: str,
    path: str,
    fence: str | None = None,
    caption: Caption | None = None,
    unread: int | None = 0,
) -> Part:
    """``items`` (oldest first; ``unread`` older ones not read) as a record, or -
    in a must or free file - their newest ``least`` as plain lines."""
    caption = caption or newest_caption(what, path, counted=unread is not None)
    if keep == "record":
        return Part(
            "record",
            items=items,
            least=least,
            caption=caption,
            what=what,
            fence=fence,
            unread=unread,
        )
    shown = items[-least:] if least else items
    total = len(items) + (unread or 0)
    lines = [*caption(len(shown), total), *(ln for item in shown for ln in item)]
    return Part(keep, lines=lines, fence=fence, keep_end=True)


def record_part(
    keep: Keep,
    reading: items.Reading,
    least: int,
    *,
    what: str,
    path: str,
    fence: str | None = None,
    unread: int | None = 0,
) -> Part:
    """The items of ``reading`` as a record (``list_part``); a table's header
    is shown above whatever rows are."""
    counted = newest_caption(what, path, counted=unread is not None)
    head = reading.head

    def caption(shown: int, total: int) -> list[str]:
        return [*counted(shown, total), *head]

    return list_part(
        keep,
        [item.lines for item in reading.items],
        least,
        what=what,
        path=path,
        fence=fence,
        caption=caption if head else None,
        unread=unread,
    )


def record_items(lines: Sequence[str]) -> list[list[str]]:
    """The items of a record file, oldest first, each with its lines
    (``agentd.memory.formats.items.read``)."""
    return [item.lines for item in items.read(lines, 0).items]


def must_parts(lines: Sequence[str], keep: Keep, path: str) -> list[Part]:
    """A must-keep file's ``lines`` as parts (``agentd.memory.formats.outline``):
    the sections that say what to do now are ``now`` parts (cut last); a
    growing list (``## DONE``, ``## 进度``: any items not marked open) and any
    run of items marked done (``- [x]``, ``✅``) are records, newest first,
    the heading above them their caption; the rest is ``keep`` text."""
    parts: list[Part] = []
    for span in outline.outline(lines):
        body = list(lines[span.start : span.end])
        head: list[str] = []
        if span.heading:
            head, body = _heading_lines(body)
        now = span.role == "now"
        if span.role == "list":
            reading = items.read(body, 0)
            parts += _runs(reading, head, keep, path, now, f"`{span.name}` items", open_only=True)
        elif any(items.mark_of(ln) == "x" for ln in body if items.bullet(ln)):
            parts += _runs(
                items.read(body, 0), head, keep, path, now, "done items", open_only=False
            )
        else:
            parts.append(Part(keep, lines=[*head, *body], now=now))
    return _merged(parts)


def _heading_lines(lines: list[str]) -> tuple[list[str], list[str]]:
    """(the heading line and the blank lines after it, the rest)."""
    i = 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    return lines[:i], lines[i:]


def _runs(
    reading: items.Reading,
    head: list[str],
    keep: Keep,
    path: str,
    now: bool,
    what: str,
    *,
    open_only: bool,
) -> list[Part]:
    """``reading``'s items as parts: each run of items that are done (any not
    marked open, when ``open_only``; else those marked done) a record, the
    others ``keep`` text; ``head`` goes with the first part."""
    parts: list[Part] = []
    run: list[items.Item] = []
    plain: list[str] = []

    def flush_run() -> None:
        nonlocal head
        if run:
            caption = _done_caption(head, path)
            lines = [i.lines for i in run]
            parts.append(Part("record", items=lines, least=DONE_LEAST, what=what, caption=caption))
            run.clear()
            head = []

    def flush_plain() -> None:
        nonlocal head
        if plain:
            parts.append(Part(keep, lines=[*head, *plain], now=now))
            plain.clear()
            head = []

    for item in reading.items:
        done = item.mark != " " if open_only else item.mark == "x"
        if done:
            flush_plain()
            run.append(item)
        else:
            flush_run()
            plain.extend(item.lines)
    flush_run()
    plain.extend(reading.tail)
    if head and not plain and not parts:
        plain.extend(head)
        head = []
    flush_plain()
    return parts


def _merged(parts: list[Part]) -> list[Part]:
    """Neighbouring text parts of the same kind as one; blank lines between
    parts go with the text after them (dropped before a record)."""
    out: list[Part] = []
    blank: list[str] = []
    for p in parts:
        if p.keep != "record" and not any(ln.strip() for ln in p.lines):
            blank += p.lines
            continue
        last = out[-1] if out else None
        if p.keep != "record":
            p.lines = [*blank, *p.lines]
        blank = []
        if last and last.keep == p.keep != "record" and last.now == p.now:
            last.lines += p.lines
        else:
            out.append(p)
    return out


def _done_caption(head: list[str], path: str) -> Caption:
    """The heading above a run of done items, and a line counting those not shown."""

    def caption(shown: int, total: int) -> list[str]:
        more = [f"- _({total - shown} earlier done items: see {path})_"] if shown < total else []
        return [*head, *more]

    return caption


def take_tokens(line: str, room: int, *, from_end: bool) -> str:
    """The longest start (or end) of ``line`` costing at most ``room`` tokens."""
    chars = line[::-1] if from_end else line
    lo, hi = 0, min(len(chars), room * 4)
    while lo < hi:  # binary search: estimate_tokens is monotonic in the prefix
        mid = (lo + hi + 1) // 2
        if estimate_tokens(chars[:mid]) <= room:
            lo = mid
        else:
            hi = mid - 1
    return chars[:lo][::-1] if from_end else chars[:lo]
