"""The items of a record, in whatever common shape the agent wrote them.

Agents keep their records (decisions, done items, gotchas) with ``agentctl
state`` or with their own editor, and an editor writes whatever Markdown the
agent likes. ``read(lines)`` finds the items of any of these shapes, oldest
first, each with the lines that belong to it:

- **list items**: ``-``, ``*``, ``+``, ``•``, ``1.``, ``1)``, ``1、``, ``（1）``
  (full-width digits and punctuation too), with or without a checkbox
  (``[ ]``, ``[x]``, ``✅``), with indented continuation lines and nested
  items, tight or loose (blank lines between items); a line right under an
  item continues it (Markdown's lazy continuation);
- **heading entries**: ``## 5. title`` or ``### title`` blocks, when the
  headings of one level are the entries (``agentctl state decide``'s ``## N.``
  entries with ``- key: value`` fields; a heading above a long list is its
  caption instead);
- **table rows**, the header kept above them;
- as a last resort **paragraphs** (blank-line separated) or single lines.

Headings, blank lines and label lines (``**Week 2**``, ``Done:``) that are
not items travel with the item below them. Lines are numbered as in the file
(``first``); HTML comments and fenced code blocks never start an item. Where
the reader had to guess (no list at all, text between items, newest first),
``Reading.guesses`` says so with the line: a note for ``agentctl state show
--explain`` and ``agentctl state check``, never an error.

A list whose numbers or dates fall (``3.``, ``2.``, ``1.``; ``2026-12-03``
before ``2026-12-01``) was written newest first: it is read in reverse.

A JSON record's items are ``agentd.memory.formats.jsonitems``'. No I/O.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from agentd.memory.formats.markdown import HEADING, comment_lines

Shape = Literal["list", "headings", "table", "paragraphs", "lines", "empty"]

# A list item: a bullet or a number, then the text; full-width forms are
# matched after NFKC (``１．`` -> ``1.``), but the line is kept as written. After
# `、` and a parenthesised number no space is needed (``1、第一步``, ``（2）第二步``).
_SIGNS = "✅|☑️?|✔️?|✓|☐|⬜|🔲|❌"
BULLET = re.compile(
    r"^(?P<indent>[ \t\u3000]*)"
    rf"(?P<bullet>[-*+•·・●○▪▸►‣–]|\d{{1,9}}[.)、]|\(\d{{1,9}}\)|{_SIGNS})"
    r"(?:[ \t\u3000]+|$|(?<=[、)✅☑✔✓☐⬜🔲❌\ufe0f]))(?P<text>.*)$"
)
# A checkbox or a check mark right after the bullet (or as the bullet: `✅ text`).
CHECK = re.compile(rf"^(?:\[(?P<box>[ xX✓✔✗~/-])\]|(?P<sign>{_SIGNS}))[ \t\u3000]*")
_DONE_SIGNS = frozenset({"✅", "☑", "☑️", "✔", "✔️", "✓"})
_OPEN_SIGNS = frozenset({"☐", "⬜", "🔲"})
TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
# A line that only names what follows: `**Week 2**`, `Done:`, `已完成：`.
LABEL = re.compile(
    r"^\s*(?:\*\*[^*]{1,60}\*\*[:：]?|__[^_]{1,60}__[:：]?|[^\s|:：][^:：]{0,40}[:：])\s*$"
)
# `- date: ...` and `- 日期：...`: the fields of an entry, not items of their own.
FIELD = re.compile(r"^(?:\*\*)?[^\s:：*]{1,24}(?:\s[^\s:：*]{1,24}){0,2}(?:\*\*)?\s*[:：]")
# What orders items in time: a date, a day, session or round number.
_DATE = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:[ T]+(\d{1,2}):(\d{2}))?")
_ORDINAL = re.compile(
    r"(?:\b(?:day|session|round|step|iteration|sprint|entry|#)\s*|第\s*)(\d{1,7})", re.IGNORECASE
)
ORDER_SAMPLE = 64  # items of a long list looked at for its time order
NEWEST_FIRST = "the dates or numbers fall: read newest first (the first item is the newest)"
ENTRY_ITEMS = 3  # a numbered entry's list: details, while it has at most this many items on average
_NUMBERED = re.compile(
    r"^\s*(?:#?\d{1,7}[.)、:\s]|第\s*\d|(?:adr|decision|决策)\s*-?\s*\d)", re.IGNORECASE
)

Mark = Literal["x", " "] | None


@dataclass(frozen=True)
class Item:
    """One record item: its lines as written, the captions above it first."""

    line: int  # the file line (1-based) of its own first line; 0: not known
    lines: list[str]
    mark: Mark = None  # "x": marked done, " ": marked open, None: no mark
    captions: int = 0  # how many of ``lines`` are the headings and blank lines above it

    @property
    def own(self) -> list[str]:
        """The item's own lines, without the captions above it."""
        return self.lines[self.captions :]


@dataclass(frozen=True)
class Guess:
    line: int  # 0: not known
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


@dataclass
class Reading:
    items: list[Item] = field(default_factory=list)  # oldest first
    head: list[str] = field(default_factory=list)  # shown above any item (a table's header)
    tail: list[str] = field(default_factory=list)  # the lines after the last item (blank, captions)
    shape: Shape = "empty"
    guesses: list[Guess] = field(default_factory=list)

    @property
    def what(self) -> str:
        """How the items were read, for the account: ``list items``, ``paragraphs``..."""
        return {
            "list": "list items",
            "headings": "heading entries",
            "table": "table rows",
            "paragraphs": "paragraphs",
            "lines": "lines",
            "empty": "items",
        }[self.shape]


def bullet(line: str) -> re.Match[str] | None:
    """The list item ``line`` starts, if any (full-width forms read as narrow)."""
    if not line or line.isspace():
        return None
    return BULLET.match(_narrow(line))


def _narrow(line: str) -> str:
    """``line`` with full-width forms narrow (``１．`` reads as ``1、``: no space needed)."""
    return line if line.isascii() else unicodedata.normalize("NFKC", line.replace("．", "、"))


def item_text(line: str) -> str:
    """``line`` without its bullet or number and checkbox."""
    m = bullet(line)
    text = m["text"] if m else _narrow(line).strip()
    return CHECK.sub("", text, count=1).strip()


def mark_of(line: str) -> Mark:
    """``"x"`` for a done mark (``[x]``, ``✅``), ``" "`` for an open one (``[ ]``)."""
    m = bullet(line)
    return _mark(m) if m else _check(CHECK.match(_narrow(line).strip()))


def _mark(m: re.Match[str]) -> Mark:
    """The mark of the list item ``m`` (a ``BULLET`` match)."""
    sign = m["bullet"]
    if sign[0] in "-*+•·・●○▪▸►‣–" or sign[0].isdigit() or sign[0] == "(":
        return _check(CHECK.match(m["text"]))
    return _check(CHECK.match(sign))  # the mark is the bullet: `✅ text`


def _check(c: re.Match[str] | None) -> Mark:
    if c is None:
        return None
    if c["box"] is not None:
        return " " if c["box"] == " " else "x"
    sign = c["sign"]
    return "x" if sign in _DONE_SIGNS else " " if sign in _OPEN_SIGNS else None


# --- the lines, classified once --------------------------------------------------------

_Kind = Literal["blank", "heading", "bullet", "indented", "text", "table", "rule", "fence"]


@dataclass
class _Line:
    kind: _Kind
    indent: int = 0
    level: int = 0  # headings
    name: str = ""  # headings
    mark: Mark = None  # bullets


def _classify(lines: Sequence[str]) -> list[_Line]:
    hidden = comment_lines(lines)
    out: list[_Line] = []
    fenced = False
    for i, line in enumerate(lines):
        if FENCE.match(line) or fenced:
            out.append(_Line("fence"))
            if FENCE.match(line):
                fenced = not fenced
            continue
        if i in hidden or not line.strip():
            out.append(_Line("blank"))
            continue
        if line.startswith("#") and (h := HEADING.match(line)):
            out.append(_Line("heading", level=len(h["hashes"]), name=h["name"]))
        elif m := bullet(line):
            out.append(_Line("bullet", len(m["indent"].expandtabs(4)), mark=_mark(m)))
        elif TABLE_RULE.match(line) and "|" in line:
            out.append(_Line("rule"))
        elif TABLE_ROW.match(line):
            out.append(_Line("table"))
        elif line[0] in " \t\u3000":
            out.append(_Line("indented", indent=len(line) - len(line.lstrip())))
        else:
            out.append(_Line("text"))
    return out


# --- reading ------------------------------------------------------------------------------


def read(lines: Sequence[str], first: int = 1) -> Reading:
    """The items of ``lines`` (a record's body; ``first``: the file line of
    ``lines[0]``, 0 when not known), oldest first (see the module docstring)."""
    kinds = _classify(lines)
    top = _top_indent(kinds)
    bullets = sum(1 for k in kinds if k.kind == "bullet" and k.indent <= top)
    rows = sum(1 for k in kinds if k.kind == "table")
    level, entries = _entry_level(kinds)
    reading: Reading
    if entries >= 2 and _entries_are_items(lines, kinds, level, top, bullets):
        reading = _by_headings(lines, kinds, level, first)
    elif rows > bullets and rows >= 2:
        reading = _by_table(lines, kinds, first)
    elif bullets:
        reading = _by_list(lines, kinds, top, first)
    else:
        reading = _by_blocks(lines, kinds, first)
    return _in_time_order(reading)


def _top_indent(kinds: list[_Line]) -> int:
    """The indent of the list's own items: the least of its bullets' (+1: sloppy editing)."""
    indents = [k.indent for k in kinds if k.kind == "bullet"]
    return min(indents) + 1 if indents else 0


def _entry_level(kinds: list[_Line]) -> tuple[int, int]:
    """(level, count) of the headings that are entries: the most frequent level,
    a lone first heading of the highest level (the file's title) left out."""
    levels = [k.level for k in kinds if k.kind == "heading"]
    if levels and levels.count(min(levels)) == 1 and levels[0] == min(levels):
        levels = levels[1:]
    if not levels:
        return 0, 0
    level = max(sorted(set(levels)), key=levels.count)
    return level, levels.count(level)


def _entries_are_items(
    lines: Sequence[str], kinds: list[_Line], level: int, top: int, bullets: int
) -> bool:
    """Are the headings of ``level`` the items (not captions of the lists under
    them)? Yes when there is no list, when the list items are the entries'
    ``key: value`` fields, when most entries have text of their own, or when
    the headings are numbered and their lists short (details of each entry)."""
    if bullets == 0 or _fields_only(lines, kinds, top):
        return True
    heads = [i for i, k in enumerate(kinds) if k.kind == "heading" and k.level == level]
    with_text = 0
    for a, b in zip(heads, [*heads[1:], len(kinds)], strict=True):
        body = kinds[a + 1 : b]
        with_text += any(
            k.kind == "text" and not LABEL.match(lines[a + 1 + j]) for j, k in enumerate(body)
        )
    numbered = sum(bool(_NUMBERED.match(kinds[i].name)) for i in heads)
    return 2 * with_text >= len(heads) or (
        2 * numbered >= len(heads) and bullets <= ENTRY_ITEMS * len(heads)
    )


def _fields_only(lines: Sequence[str], kinds: list[_Line], top: int) -> bool:
    """Are all top-level list items ``key: value`` fields (an entry's, not items)?"""
    own = [
        item_text(lines[i]) for i, k in enumerate(kinds) if k.kind == "bullet" and k.indent <= top
    ]
    return bool(own) and all(FIELD.match(text) for text in own)


class _Builder:
    """Items as they are found: captions wait for the item below them."""

    def __init__(self, lines: Sequence[str], first: int, kinds: list[_Line]) -> None:
        self.src = lines
        self.kinds = kinds
        self.first = first
        self.items: list[Item] = []
        self.pending: list[str] = []  # captions and blank lines waiting for the next item
        self.current: list[str] | None = None
        self.start = 0
        self.captions = 0
        self.gap: list[str] = []  # blank lines after the current item, not yet its own

    def begin(self, i: int) -> None:
        self.end()
        self.current = [*self.pending, *self.gap, self.src[i]]
        self.captions = len(self.pending) + len(self.gap)
        self.pending, self.gap = [], []
        self.start = i

    def add(self, i: int) -> None:
        assert self.current is not None
        self.current += [*self.gap, self.src[i]]
        self.gap = []

    def blank(self, i: int) -> None:
        (self.gap if self.current is not None else self.pending).append(self.src[i])

    def caption(self, i: int) -> None:
        self.end()
        self.pending += [*self.gap, self.src[i]]
        self.gap = []

    def end(self) -> None:
        if self.current is not None:
            line = self.first + self.start if self.first else 0
            k = self.kinds[self.start]
            mark = k.mark if k.kind == "bullet" else None
            self.items.append(Item(line, self.current, mark, self.captions))
            self.current = None
            self.pending = [*self.gap, *self.pending]
            self.gap = []

    def done(
        self, shape: Shape, head: list[str] | None = None, guesses: list[Guess] | None = None
    ) -> Reading:
        self.end()
        return Reading(self.items, head or [], self.pending, shape, guesses or [])


def _by_list(lines: Sequence[str], kinds: list[_Line], top: int, first: int) -> Reading:
    b = _Builder(lines, first, kinds)
    guesses: list[Guess] = []
    seen_item = False
    for i, k in enumerate(kinds):
        if k.kind == "bullet" and k.indent <= top:
            b.begin(i)
            seen_item = True
        elif k.kind == "blank":
            b.blank(i)
        elif k.kind == "heading" or (k.kind == "text" and LABEL.match(lines[i])):
            b.caption(i)
        elif b.current is not None and (k.kind in ("bullet", "indented", "fence") or not b.gap):
            b.add(i)  # a nested item, an indented or lazy continuation line, a code block
        elif not seen_item:
            b.pending.append(lines[i])  # the file's preamble: with the first item
        else:
            if k.kind != "fence":
                guesses.append(
                    Guess(first + i if first else 0, "text between list items: read as an item")
                )
            b.begin(i)
    return b.done("list", guesses=_few(guesses))


def _by_headings(lines: Sequence[str], kinds: list[_Line], level: int, first: int) -> Reading:
    b = _Builder(lines, first, kinds)
    for i, k in enumerate(kinds):
        if k.kind == "heading" and k.level == level:
            b.begin(i)
        elif k.kind == "heading" and k.level < level:
            b.caption(i)
        elif b.current is not None:
            if k.kind == "blank":
                b.blank(i)
            else:
                b.add(i)
        else:
            b.pending.append(lines[i])
    return b.done("headings")


def _by_table(lines: Sequence[str], kinds: list[_Line], first: int) -> Reading:
    b = _Builder(lines, first, kinds)
    head: list[str] = []
    for i, k in enumerate(kinds):
        header = k.kind == "table" and i + 1 < len(kinds) and kinds[i + 1].kind == "rule"
        if header or k.kind == "rule":
            if not b.items and b.current is None:
                head.append(lines[i])  # the first table's header: above every row shown
            else:
                b.caption(i)
        elif k.kind == "table":
            b.begin(i)
        elif k.kind == "blank":
            b.blank(i)
        elif b.current is not None and k.kind in ("indented", "fence"):
            b.add(i)
        else:
            b.caption(i)
    return b.done("table", head=head)


def _by_blocks(lines: Sequence[str], kinds: list[_Line], first: int) -> Reading:
    """No list, table or heading entries: paragraphs when they are short, else lines."""
    blocks = []
    size = 0
    for k in kinds:
        if k.kind in ("text", "indented", "fence"):
            size += 1
        elif size:
            blocks.append(size)
            size = 0
    if size:
        blocks.append(size)
    if not blocks:
        return Reading(tail=list(lines), shape="empty")
    paragraphs = len(blocks) >= 2 and sum(blocks) / len(blocks) <= 6
    b = _Builder(lines, first, kinds)
    start = next(i for i, k in enumerate(kinds) if k.kind in ("text", "indented", "fence"))
    for i, k in enumerate(kinds):
        if k.kind == "heading":
            b.caption(i)
        elif k.kind == "blank":
            b.blank(i)
            if paragraphs:
                b.end()
        elif b.current is not None and (k.kind in ("indented", "fence") or paragraphs):
            b.add(i)
        else:
            b.begin(i)
    shape: Shape = "paragraphs" if paragraphs else "lines"
    reading = b.done(shape)
    count = len(reading.items)
    what = (
        f"no list items: read as {count} paragraphs (separated by blank lines)"
        if paragraphs
        else f"no list items: read as {count} lines, one item each"
    )
    reading.guesses.append(Guess(first + start if first else 0, what))
    return reading


def _few(guesses: list[Guess], most: int = 3) -> list[Guess]:
    """At most ``most`` guesses of one kind, then how many more."""
    if len(guesses) <= most:
        return guesses
    more = len(guesses) - most
    return [*guesses[:most], Guess(0, f"and {more} more {'like it' if more == 1 else 'like them'}")]


# --- time order ------------------------------------------------------------------------


def order_key(text: str) -> tuple[int, ...] | None:
    """What orders an item in time, from its start: a date (and time), a day or
    session number, an ordered list's number; None when it says nothing."""
    head = _narrow(text)[:80]
    if m := _DATE.search(head):
        return tuple(int(g or 0) for g in m.groups())
    if m := _ORDINAL.search(head):
        return (int(m[1]),)
    if (m := BULLET.match(head)) and m["bullet"][0].isdigit():
        return (int(re.sub(r"\D", "", m["bullet"])),)
    if h := re.match(r"^#{1,6}\s*(\d{1,7})[.)、:\s]", head):
        return (int(h[1]),)
    return None


def newest_first(firsts: Sequence[str]) -> bool:
    """Do the dates or numbers of these items (their first lines, in file
    order; a sample of ``ORDER_SAMPLE`` of a long list) fall - a list written
    newest first?"""
    if len(firsts) > ORDER_SAMPLE:
        step = len(firsts) / ORDER_SAMPLE
        firsts = [firsts[int(k * step)] for k in range(ORDER_SAMPLE)] + [firsts[-1]]
    keys = [k for line in firsts if (k := order_key(line)) is not None]
    falls = sum(a > b for a, b in itertools.pairwise(keys))
    rises = sum(a < b for a, b in itertools.pairwise(keys))
    return falls >= 2 and falls > 2 * rises


def _in_time_order(reading: Reading) -> Reading:
    """``reading`` oldest first: reversed when its items' dates or numbers fall."""
    if newest_first([item.own[0] for item in reading.items if item.own]):
        reading.items.reverse()
        line = reading.items[-1].line
        reading.guesses.append(
            Guess(
                line, "the dates or numbers fall: read newest first (the first item is the newest)"
            )
        )
    return reading
