"""A layout file rendered for the budget: a ``Block`` of ``Part``s - facts,
records, free text - and what each line costs.

The file kinds (``agentd.memory.bootstrap.kinds``) render a file to Markdown lines;
this module says which of those lines are what for the budget
(``agentd.memory.bootstrap.fit``): a must-keep file's runs of done items (``- [x]``) are
records of their own, a record file's lines group into items (a list item with
its continuation lines, a heading travels with the item below it), and each
record gets a caption that counts what is not shown. No I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agentd.memory.formats.markdown import HEADING, ITEM
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

    @property
    def total(self) -> int:
        """A record's items in all, read or not."""
        return len(self.items) + (self.unread or 0)

    def fenced(self, lines: list[str]) -> list[str]:
        return [f"```{self.fence}", *lines, "```"] if self.fence is not None else list(lines)

    def fence_cost(self) -> float:
        return 2 * line_cost("```") if self.fence is not None else 0.0

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


def with_done_runs(lines: Sequence[str], keep: Keep, path: str) -> list[Part]:
    """``lines`` as ``keep`` parts, except each run of done items (``- [x]``),
    which is a record; the heading right above a run is its caption."""
    parts: list[Part] = []
    plain: list[str] = []
    runs = _done_runs(lines)
    pos = 0
    for start, end in runs:
        plain += lines[pos:start]
        head = _trailing_heading(plain)
        if head:
            del plain[len(plain) - len(head) :]
        if plain:
            parts.append(Part(keep, lines=plain))
        plain = []
        items = _items(lines[start:end])
        parts.append(
            Part(
                "record",
                items=items,
                least=DONE_LEAST,
                what="done items",
                caption=_done_caption(head, path),
            )
        )
        pos = end
    plain += lines[pos:]
    if plain:
        parts.append(Part(keep, lines=plain))
    return parts


def record_items(lines: Sequence[str]) -> list[list[str]]:
    """The items of a record file, oldest first: each top-level list item with
    its continuation lines, each other line alone; headings and blank lines
    go with the item after them."""
    items: list[list[str]] = []
    pending: list[str] = []
    for line in lines:
        m = ITEM.match(line)
        continuation = items and not pending and line.startswith((" ", "\t")) and line.strip()
        if continuation and not (m and not m["indent"]):
            items[-1].append(line)
        elif not line.strip() or HEADING.match(line):
            pending.append(line)
        else:
            items.append([*pending, line])
            pending = []
    return items


def _done_runs(lines: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of each run of top-level done items and their continuation lines."""
    runs: list[tuple[int, int]] = []
    start = None
    end = 0
    for i, line in enumerate(lines):
        m = ITEM.match(line)
        if m and not m["indent"] and (m["mark"] or "").lower() == "x":
            start = i if start is None else start
            end = i + 1
        elif start is not None and m is None and line.startswith((" ", "\t")) and line.strip():
            end = i + 1  # an item's continuation line stays with it
        elif start is not None:
            runs.append((start, end))
            start = None
    if start is not None:
        runs.append((start, end))
    return runs


def _items(lines: Sequence[str]) -> list[list[str]]:
    items: list[list[str]] = []
    for line in lines:
        m = ITEM.match(line)
        if (m and not m["indent"]) or not items:
            items.append([line])
        else:
            items[-1].append(line)
    return items


def _trailing_heading(lines: Sequence[str]) -> list[str]:
    """The heading (and the blank lines after it) that ``lines`` end with, if any."""
    i = len(lines)
    while i > 0 and not lines[i - 1].strip():
        i -= 1
    if i > 0 and HEADING.match(lines[i - 1]):
        return list(lines[i - 1 :])
    return []


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
