"""Markdown state files as the layouts' agents write them: sections and entries.

The layouts keep state in Markdown with fixed headings (``## CURRENT``,
``## NEXT``, ``# 下一步``), checklists (``- [x] done``, ``- [ ] to do``) and
numbered entries (``## 5. 依赖注入方案``). This module finds and edits those
parts on lists of lines, as the ``agentctl state`` verbs write them; it does
no I/O. Reading a record in whatever shape the agent wrote it is
``agentd.memory.formats.items``'; a must-keep file's sections by what they
say, ``agentd.memory.formats.outline``'s.

A *section* is a heading of any level and the lines after it up to the next
heading of the same or a higher level. Headings match as people write them
(``heading_key``): in any case, with or without a trailing colon, a leading
number or emoji, emphasis or a trailing ``#`` run (``## 🎯 Next step:``
finds ``Next step``), a CJK name also without the space after the hashes
(``##下一步``) - and never inside a fenced code block.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import NamedTuple

# `##下一步` too: Chinese text often has no space after the hashes (`#hashtag` stays text).
# The name keeps a closing `#` run (``headings`` drops it): `(?:.*\S)?`, not `.*?\s*#*`,
# is linear (the lazy form retries the end at every character: slow on a long file).
HEADING = re.compile(r"^(?P<hashes>#{1,6})(?:\s+|(?=[^\x00-\x7f]))(?P<name>(?:.*\S)?)\s*$")
_CLOSING = re.compile(r"(?:^|\s+)#+$")
# `(?:.*\S)?\s*$`, not `.*?\s*$`: the same text without trailing blanks, but
# linear (the lazy form retries the end at every character: 10x slower on the
# long DONE lists a long run leaves).
ITEM = re.compile(r"^(?P<indent>\s*)[-*+]\s+(?:\[(?P<mark>[ xX])\]\s+)?(?P<text>(?:.*\S)?)\s*$")
COMMENT = re.compile(r"^\s*<!--.*-->\s*$")
# What a section holds when there is nothing in it: `- none`, `- 无`, `(none)`.
NONE_MARKERS = frozenset({"none", "(none)", "无", "(无)", "-", "n/a", "nothing", "(empty)"})


class Section(NamedTuple):
    heading: int  # index of the heading line
    start: int  # first line of the body
    end: int  # one past the last line of the body
    level: int


def _fences(lines: Sequence[str]) -> list[bool]:
    """For each line: is it inside (or delimiting) a fenced code block?"""
    inside, out = False, []
    for line in lines:
        fence = line.lstrip().startswith(("```", "~~~"))
        out.append(inside or fence)
        if fence:
            inside = not inside
    return out


def headings(lines: Sequence[str]) -> list[tuple[int, int, str]]:
    """(index, level, name) of every heading outside code fences."""
    found = []
    for i, (line, fenced) in enumerate(zip(lines, _fences(lines), strict=True)):
        m = HEADING.match(line) if not fenced and line.startswith("#") else None
        if m:
            name = m["name"]
            found.append((i, len(m["hashes"]), _CLOSING.sub("", name) if "#" in name else name))
    return found


def comment_lines(lines: Sequence[str]) -> set[int]:
    """Indexes of the lines that are wholly inside HTML comments (``<!-- -->``
    spanning one or more whole lines): guidance for people, not content."""
    found: set[int] = set()
    start = None
    for i, line in enumerate(lines):
        text = line.strip()
        if start is None and text.startswith("<!--"):
            start = i
        if start is not None:
            found.add(i)
            if "-->" in text:
                if not text.endswith("-->"):  # text after the comment: a real line
                    found -= set(range(start, i + 1))
                start = None
    if start is not None:  # never closed: not a comment we understand
        found -= set(range(start, len(lines)))
    return found


def without_comments(lines: Sequence[str]) -> list[str]:
    hidden = comment_lines(lines)
    return [line for i, line in enumerate(lines) if i not in hidden]


def normalized(name: str) -> str:
    """``name`` as headings and items compare: whitespace runs as one space, casefolded."""
    return " ".join(name.split()).casefold()


# What a heading's name may carry around its words: emphasis, a number, an emoji.
_HEADING_NUMBER = re.compile(r"^(?:\(?(?:\d+(?:\.\d+)*|[一二三四五六七八九十]+)(?:[.)、:]\s*|\s+))")
_EDGE = re.compile(r"^[\W_]+|[\W_]+$")


def heading_key(name: str) -> str:
    """``name`` as headings compare (``find_section``): casefolded, full-width
    forms made narrow, without emphasis, a leading number (``1.``, ``（一）``,
    ``一、``), emoji and punctuation at either end (``🎯 Next step:`` ->
    ``next step``); a name of only such characters stays as it is."""
    text = unicodedata.normalize("NFKC", name).replace("*", "").replace("`", "")
    text = " ".join(text.split())
    key = _EDGE.sub("", _HEADING_NUMBER.sub("", text.lstrip("#*_ ")))
    return (key or text).casefold()


def find_section(lines: Sequence[str], names: Iterable[str]) -> Section | None:
    """The first section whose heading is one of ``names`` (``heading_key``)."""
    wanted = [list(names)]
    return find_sections(lines, wanted)[0]


def find_sections(lines: Sequence[str], wanted: Sequence[Sequence[str]]) -> list[Section | None]:
    """For each list of names in ``wanted``, the first section whose heading is
    one of them: the headings found and compared once, whatever the count."""
    keys = [{heading_key(n) for n in names} for names in wanted]
    longest = max((len(n) for names in wanted for n in names), default=0) + 16
    found: list[Section | None] = [None] * len(wanted)
    heads = headings(lines)
    for k, (i, level, name) in enumerate(heads):
        if len(name) > longest:  # emoji, numbers and colons add a few characters, not more
            continue
        key = heading_key(name)
        for w, want in enumerate(keys):
            if found[w] is None and key in want:
                end = next((j for j, lv, _ in heads[k + 1 :] if lv <= level), len(lines))
                found[w] = Section(i, i + 1, end, level)
        if all(f is not None for f in found):
            break
    return found


def strip_blank(lines: Sequence[str]) -> list[str]:
    """``lines`` without blank lines at either end."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return list(lines[filled[0] : filled[-1] + 1]) if filled else []


def section_body(lines: Sequence[str], names: Iterable[str]) -> list[str] | None:
    """The body of the section named one of ``names`` (blank ends removed)."""
    sec = find_section(lines, names)
    return None if sec is None else strip_blank(lines[sec.start : sec.end])


def has_content(lines: Sequence[str]) -> bool:
    """Anything but blank lines, comments and placeholders (`- none`)?"""
    return any(ln.strip() and not is_placeholder(ln) for ln in without_comments(lines))


def is_placeholder(line: str) -> bool:
    """A line that only says "nothing here": `- none`, `(无)`, an HTML comment."""
    if COMMENT.match(line):
        return True
    m = ITEM.match(line)
    text = m["text"] if m else line.strip()
    return normalized(text) in NONE_MARKERS


def single_blank(lines: Sequence[str]) -> list[str]:
    """``lines`` with each run of blank lines made one (what is left out leaves runs)."""
    return [ln for i, ln in enumerate(lines) if ln.strip() or i == 0 or lines[i - 1].strip()]


def drop_empty_sections(lines: Sequence[str]) -> list[str]:
    """``lines`` without the sections that hold nothing (``has_content``): their
    heading goes, with the blank lines and placeholders under it. A numbered
    heading (``### 3. Never push to main``) is an entry, not an empty section."""
    heads = headings(lines)
    starts = [i for i, _, _ in heads]
    rows = set(starts)
    drop: set[int] = set()
    for k, (i, level, name) in enumerate(heads):
        if ENTRY_NUMBER.match(name):
            continue
        end = next((j for j, lv, _ in heads[k + 1 :] if lv <= level), len(lines))
        own_end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        body = [ln for j, ln in enumerate(lines[i + 1 : end], start=i + 1) if j not in rows]
        if not has_content(body):
            drop.update(range(i, own_end))
    return [line for j, line in enumerate(lines) if j not in drop]


def set_body(lines: list[str], names: Sequence[str], body: Sequence[str]) -> list[str]:
    """``lines`` with the body of section ``names[0]`` (or an alias) replaced by
    ``body``; HTML comments in the old body are kept. A missing section is
    appended as ``## names[0]``."""
    sec = find_section(lines, names)
    if sec is None:
        out = strip_trailing_blank(lines)
        return [*out, *([""] if out else []), f"## {names[0]}", "", *body, ""]
    old = lines[sec.start : sec.end]
    hidden = comment_lines(old)
    kept = [ln for i, ln in enumerate(old) if i in hidden]
    return [*lines[: sec.start], *padded_body([*kept, *body]), *lines[sec.end :]]


def strip_trailing_blank(lines: Sequence[str]) -> list[str]:
    out = list(lines)
    while out and not out[-1].strip():
        out.pop()
    return out


def padded_body(body: Sequence[str]) -> list[str]:
    """A section body with exactly one blank line before and after its content."""
    content = strip_blank(body)
    return ["", *content, ""] if content else [""]


def nest(lines: Sequence[str], title: str, top: int = 3) -> list[str]:
    """``lines`` to show under a ``## title`` heading: a first ``#`` heading
    that only repeats ``title`` is dropped, and headings move down so that
    the highest becomes level ``top`` (``# Role`` -> ``### Role``)."""
    heads = headings(lines)
    out = list(lines)
    if (
        heads
        and heads[0][1] == 1
        and normalized(heads[0][2]) == normalized(title)
        and not any(ln.strip() for ln in lines[: heads[0][0]])
    ):
        del out[heads[0][0]]
        heads = headings(out)
    if not heads:
        return out
    shift = top - min(level for _, level, _ in heads)
    if shift > 0:
        for i, level, name in heads:
            out[i] = "#" * min(level + shift, 6) + " " + name
    return out


# --- entries: `## N. title` blocks, newest last -------------------------------------------

ENTRY_NUMBER = re.compile(r"^(?P<n>\d+)[.)]\s")


def split_entries(lines: Sequence[str], level: int = 2) -> tuple[list[str], list[list[str]]]:
    """(preamble, entries): each entry is a heading of ``level`` and its lines."""
    starts = [i for i, lv, _ in headings(lines) if lv == level]
    if not starts:
        return list(lines), []
    entries = [list(lines[a:b]) for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]
    return list(lines[: starts[0]]), entries


def next_entry_number(lines: Sequence[str]) -> int:
    """One more than the highest ``## N.`` entry number in ``lines``."""
    numbers = [
        int(m["n"]) for _, lv, name in headings(lines) if lv == 2 if (m := ENTRY_NUMBER.match(name))
    ]
    return max(numbers, default=0) + 1


# -- the list items of a section: checklists and `- key: value` lines ------------


def items(lines: Sequence[str], names: Sequence[str]) -> list[tuple[str | None, str]]:
    """(mark, text) of the list items in section ``names``, placeholders left out.
    ``mark`` is ``" "``/``"x"`` for checklist items and None for plain ones."""
    body = without_comments(section_body(lines, names) or [])
    out = []
    for line in body:
        m = ITEM.match(line)
        if m and not m["indent"] and not is_placeholder(line):
            out.append((m["mark"].lower() if m["mark"] else None, m["text"]))
    return out


def edit_items(
    lines: list[str],
    names: Sequence[str],
    *,
    add: str | None = None,
    first: bool = False,
    remove: str | None = None,
    replace_removed: bool = False,
) -> tuple[list[str], bool]:
    """Edit the list of section ``names`` (created when missing).

    ``remove``: drop the first top-level item whose text (without its checkbox)
    is ``remove``. ``add``: a complete item line (``- [x] text``) inserted
    first (``first``), in the removed item's place (``replace_removed``), or
    after the last item with the same kind of checkbox (done items go after
    done items, before the open ones), else after the last item. Placeholder
    items (``- none``) are dropped. Returns the new lines and whether an item
    was removed.
    """
    sec = find_section(lines, names)
    if sec is None:
        lines = set_body(lines, names, [])
        sec = find_section(lines, names)
        assert sec is not None
    body = [ln for ln in lines[sec.start : sec.end] if not (ITEM.match(ln) and is_placeholder(ln))]
    removed_at = None
    if remove is not None:
        for i, line in enumerate(body):
            m = ITEM.match(line)
            if m and not m["indent"] and normalized(m["text"]) == normalized(remove):
                removed_at = i
                del body[i]
                break
    if add is not None:
        body = _insert_item(body, add, first=first, at=removed_at if replace_removed else None)
    return [*lines[: sec.start], *padded_body(body), *lines[sec.end :]], removed_at is not None


def _insert_item(body: list[str], line: str, *, first: bool, at: int | None) -> list[str]:
    tops = [i for i, ln in enumerate(body) if (m := ITEM.match(ln)) and not m["indent"]]
    if at is not None:
        pos = at
    elif first:
        pos = tops[0] if tops else len(strip_trailing_blank(body))
    else:
        same = [i for i in tops if _mark(body[i]) == _mark(line)]
        anchor = same or tops
        pos = _item_end(body, anchor[-1]) if anchor else len(strip_trailing_blank(body))
    return [*body[:pos], line, *body[pos:]]


def _mark(line: str) -> str | None:
    m = ITEM.match(line)
    return m["mark"].lower() if m and m["mark"] else None


def _item_end(body: list[str], i: int) -> int:
    """One past the last line of the item starting at ``i`` (its indented continuation)."""
    j = i + 1
    while j < len(body) and body[j].startswith((" ", "\t")) and body[j].strip():
        j += 1
    return j


def set_key(lines: list[str], names: Sequence[str], key: str, value: str) -> list[str]:
    """Set the ``- key: value`` line of section ``names`` (added first when missing)."""
    want = re.compile(rf"^\s*[-*+]\s+{re.escape(key)}\s*[:：]", re.IGNORECASE)
    sec = find_section(lines, names)
    if sec is None:
        return set_body(lines, names, [f"- {key}: {value}"])
    new = f"- {key}: {value}"
    for i in range(sec.start, sec.end):
        if want.match(lines[i]):
            return [*lines[:i], new, *lines[i + 1 :]]
    body = [ln for ln in lines[sec.start : sec.end] if not (ITEM.match(ln) and is_placeholder(ln))]
    return [*lines[: sec.start], *padded_body([new, *strip_blank(body)]), *lines[sec.end :]]


def get_key(lines: Sequence[str], names: Sequence[str], key: str) -> str | None:
    want = re.compile(rf"^\s*[-*+]\s+{re.escape(key)}\s*[:：]\s*(?P<v>.*)$", re.IGNORECASE)
    for line in section_body(lines, names) or []:
        if m := want.match(line):
            return m["v"].strip()
    return None
