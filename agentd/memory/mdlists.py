"""List items in the seeds' Markdown sections: checklists and ``- key: value`` lines.

Reads and edits the items of one section (``- [x] done``, ``- [ ] to do``,
``- next: ...``) on lists of lines, and shortens long runs of done items for
the bootstrap. Sections and headings are ``agentd.memory.markdown``'s; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentd.memory.markdown import (
    ITEM,
    find_section,
    is_placeholder,
    normalized,
    padded_body,
    section_body,
    set_body,
    strip_blank,
    strip_trailing_blank,
    without_comments,
)


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
