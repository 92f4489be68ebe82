"""The structured kinds of layout file in the bootstrap: a file of ``## `` entries,
a decision log (read backwards), a task state and its handoff (JSON).
``filekinds`` dispatches to them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentd.memory import markdown, statedir, taskstate
from agentd.memory.decisions import DECISION_FORM, bad_lines
from agentd.memory.kindbase import (
    COUNT_LINES_LIMIT,
    DEFAULT_ENTRIES,
    DEFAULT_LOG_TAIL,
    MAX_SECTION_BYTES,
    note,
)
from agentd.memory.layout import Keep, LayoutFile
from agentd.memory.parts import Block, Part, list_part

if TYPE_CHECKING:
    from agentd.memory.context import BootstrapContext


def entries(ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block,
             warnings: list[str]) -> Block | None:  # fmt: skip
    """A Markdown file of ``## `` entries, newest last: a record of them."""
    text, truncated = statedir.read_head(path, MAX_SECTION_BYTES)
    lines = markdown.without_comments(text.splitlines())
    preamble, entries = markdown.split_entries(lines)
    if not entries:
        body = markdown.strip_blank(markdown.nest(preamble, block.title))
        if not markdown.has_content(body):
            return None if entry.optional else note(block, entry, "_(no entries yet)_")
        # only the file's preamble so far: text, behind the records of other files
        block.parts = [Part("free" if entry.priority == "record" else entry.priority,
                            lines=body)]  # fmt: skip
        return block
    items = [[*markdown.strip_blank(markdown.nest(e, "")), ""] for e in entries]
    items[-1] = items[-1][:-1]
    block.parts = [list_part(entry.priority, items, entry.tail or DEFAULT_ENTRIES,
                             what="entries", path=block.shown,
                             unread=None if truncated else 0)]  # fmt: skip
    return block


def decision_log(ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block,
                  warnings: list[str]) -> Block | None:  # fmt: skip
    least = entry.tail or DEFAULT_LOG_TAIL
    # a record reads as much more as the budget could show (4 bytes a token)
    more = min(ctx.budget_tokens * 4, MAX_SECTION_BYTES) if entry.priority == "record" else 0
    with statedir.open_regular(path) as f:
        lines, start = statedir.tail_window(f, least, more)
    before = statedir.count_lines_before(path, start, COUNT_LINES_LIMIT)
    bad = [str(before + i + 1) if before is not None else str(len(lines) - i)
           for i in bad_lines(lines)]  # fmt: skip
    if bad:
        where = ("lines " if len(bad) > 1 else "line ") + ", ".join(bad)
        where += "" if before is not None else " (counted from the end)"
        warnings.append(
            f"{block.shown}: {where} {'are' if len(bad) > 1 else 'is'} not in the six-field form "
            f"`{DECISION_FORM}`"
        )
    items = [[line] for line in lines if line.strip()]
    if not items:
        return None if entry.optional else note(block, entry, "_(no decisions yet)_")
    unread = None if before is None else before
    block.parts = [list_part(entry.priority, items, least, what="decisions", path=block.shown,
                             fence="text", unread=unread)]  # fmt: skip
    return block


def task_state(ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block,
                warnings: list[str]) -> Block | None:  # fmt: skip
    loaded = taskstate.load(path)
    data, raw = loaded.data, loaded.raw
    if loaded.problem:
        warnings.append(f"{block.shown} {loaded.problem}")
    if not isinstance(data, dict):
        if data is not None:  # valid JSON, but not an object (invalid JSON is warned)
            warnings.append(f"{block.shown} should hold a JSON object")
        block.lead = ["_(shown raw: repair it so it parses as a JSON object)_", ""]
        block.parts = [Part(entry.priority, lines=raw.splitlines() or ["(empty file)"],
                            fence="json")]  # fmt: skip
        return block
    block.parts = [_state_part(p, entry.priority, block.shown)
                   for p in taskstate.to_parts(data, _warner(block, warnings))]  # fmt: skip
    return block


def _state_part(part: list[str] | taskstate.ListPart, keep: Keep, where: str) -> Part:
    if not isinstance(part, taskstate.ListPart):
        return Part(keep, lines=markdown.strip_blank(part), gap=True)
    label = part.label

    def caption(shown: int, total: int) -> list[str]:
        newest = f" the newest {shown} of {total} (the rest: {where})" if shown < total else ""
        return [f"**{label}:**{newest}"]

    items = [[line] for line in part.items]
    made = list_part("record", items, taskstate.SHOWN_ITEMS, what=label.lower(), path=where,
                     caption=caption)  # fmt: skip
    made.gap = True
    return made


def _warner(block: Block, warnings: list[str]) -> taskstate.Warn:
    return lambda msg, _key: warnings.append(f"{block.shown}: {msg}")


def handoff(ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block,
             warnings: list[str]) -> Block | None:  # fmt: skip
    loaded = taskstate.load(path)
    if loaded.problem:
        warnings.append(f"{block.shown} {loaded.problem}")
    text = taskstate.handoff(loaded.data, _warner(block, warnings))
    if text is None:
        return None  # no handoff: nothing to say, not even a heading
    block.parts = [Part(entry.priority, lines=text.splitlines())]
    return block
