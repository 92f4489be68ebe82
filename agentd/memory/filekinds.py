"""How each kind of layout file is shown in the bootstrap (``agentd.memory.layout.FileKind``).

``file_block(ctx, entry, warnings)`` reads one layout file and returns a
``Block`` (not yet fitted to the budget), or None when there is nothing worth
a heading (an optional file that is missing or empty). Problems become
warnings; nothing here raises for a missing or malformed file.

In Markdown, HTML comments (template guidance for people) are left out,
headings are nested under the block's own ``##`` heading, and a run of more
than ten done items (``- [x]``) shows its newest ten and counts the rest.
Tails are read backwards from the end of the file (``statedir.tail_lines``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from agentd.memory import markdown, mdlists, statedir, taskstate
from agentd.memory.decisions import DECISION_FORM, bad_lines
from agentd.memory.fit import Block
from agentd.memory.layout import LayoutFile

if TYPE_CHECKING:
    from agentd.memory.context import BootstrapContext

DEFAULT_LOG_TAIL = 10
DEFAULT_ENTRIES = 10
SHOWN_DONE = 10  # done items of a Markdown checklist: the newest ten
MAX_SECTION_BYTES = 4 << 20
COUNT_LINES_LIMIT = 4 << 20  # true line numbers only while counting them is cheap


def shown(workdir: Path, path: Path) -> str:
    """``path`` as the agent should use it: relative to the workdir when inside."""
    normal = Path(os.path.normpath(path))
    try:
        return normal.relative_to(os.path.normpath(workdir)).as_posix()
    except ValueError:
        return str(normal)


def file_block(ctx: BootstrapContext, entry: LayoutFile, warnings: list[str]) -> Block | None:
    path = ctx.state_dir / entry.path
    where = shown(ctx.workdir, path)
    block = Block(title=entry.heading, shown=where, body=[], max_tokens=entry.max_tokens)
    try:
        if not path.exists():
            if entry.optional:
                return None
            warnings.append(f"{where} is missing: create it (the layout lists it as required)")
            block.body = [f"_(missing: `{where}`)_"]
            return block
        if entry.kind == "latest" or path.is_dir():
            return _latest(ctx, entry, path, block, warnings)
        return _KINDS[entry.kind](ctx, entry, path, block, warnings)
    except (OSError, UnicodeError) as e:
        warnings.append(f"{where} could not be read: {e}")
        block.body = [f"_(unreadable: `{where}`)_"]
        return block


def _text(ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block,
          warnings: list[str]) -> Block | None:  # fmt: skip
    if entry.tail and not entry.sections:
        with path.open("rb") as f:
            lines, start = statedir.tail_lines(f, entry.tail)
        block.body = markdown.nest(markdown.without_comments(lines), block.title)
        block.keep_end = True
        if start > 0:
            block.lead += [f"_(its last {len(lines)} lines)_", ""]
        return _empty_optional(entry, block)
    cap = MAX_SECTION_BYTES if entry.sections else max(64 << 10, ctx.budget_tokens * 16)
    text, truncated = statedir.read_head(path, cap)
    lines = text.splitlines()
    block.complete = not truncated or bool(entry.sections)
    if len(entry.sections) == 1:
        name = entry.sections[0]
        found = markdown.section_body(lines, [name])
        if found is None:
            warnings.append(f"{block.shown} has no `## {name}` section")
            block.body = [f"_(no `## {name}` section)_"]
            return block
        lines = found
        if entry.tail:
            lines, block.keep_end = lines[-entry.tail :], True
    elif entry.sections:
        lines = _sections(lines, entry.sections, block.shown, warnings)
    lines = mdlists.collapse_checked(markdown.without_comments(lines), SHOWN_DONE, block.shown)
    block.body = markdown.strip_blank(markdown.nest(lines, block.title))
    return _empty_optional(entry, block)


def _empty_optional(entry: LayoutFile, block: Block) -> Block | None:
    """An optional file with nothing in it is not worth a heading; a required
    one says it is empty."""
    if not markdown.has_content(block.body):
        if entry.optional:
            return None
        block.body = block.body or ["_(empty)_"]
    return block


def _sections(lines: list[str], names: Sequence[str], shown: str, warnings: list[str]
              ) -> list[str]:  # fmt: skip
    """The sections ``names`` of a Markdown file, in that order, each under ``### NAME``."""
    out: list[str] = []
    for name in names:
        body = markdown.section_body(lines, [name])
        if body is None:
            warnings.append(f"{shown} has no `## {name}` section")
            body = [f"_(no `## {name}` section)_"]
        body = markdown.strip_blank(markdown.without_comments(body))
        out += [f"### {name}", "", *(body or ["_(empty)_"]), ""]
    return out


def _entries(ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block,
             warnings: list[str]) -> Block | None:  # fmt: skip
    """A Markdown file of ``## `` entries, newest last: the newest ``tail``."""
    text, truncated = statedir.read_head(path, MAX_SECTION_BYTES)
    lines = markdown.without_comments(text.splitlines())
    preamble, entries = markdown.split_entries(lines)
    keep = entry.tail or DEFAULT_ENTRIES
    if not entries:
        block.body = markdown.strip_blank(markdown.nest(preamble, block.title))
        if not markdown.has_content(block.body):
            return None if entry.optional else _note(block, "_(no entries yet)_")
        return block
    if len(entries) > keep or truncated:
        more = "+" if truncated else ""
        block.lead = [f"_(the newest {keep} of {len(entries)}{more} entries; "
                      f"read {block.shown} for the rest)_", ""]  # fmt: skip
        entries = entries[-keep:]
    block.body = markdown.strip_blank(markdown.nest([ln for e in entries for ln in e], ""))
    block.keep_end = True
    return block


def _latest(ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block,
            warnings: list[str]) -> Block | None:  # fmt: skip
    """The newest file (by name) of the directory ``path``: snapshots/."""
    if not path.is_dir():
        warnings.append(f"{block.shown} should be a directory")
        return block
    latest, count = statedir.latest_file(path)
    if latest is None:
        return None if entry.optional else _note(block, f"_(no files in `{block.shown}`)_")
    block.lead = [f"_(latest of {count} files: `{shown(ctx.workdir, latest)}`)_", ""]
    block.shown = shown(ctx.workdir, latest)
    if latest.suffix == ".json":
        text, truncated = statedir.read_head(latest, MAX_SECTION_BYTES)
        block.body, block.fence, block.complete = text.splitlines(), "json", not truncated
        return block
    inner = replace(entry, kind="text", optional=False)
    return _text(ctx, inner, latest, block, warnings)


def _note(block: Block, text: str) -> Block:
    block.body = [text]
    return block


def _decision_log(ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block,
                  warnings: list[str]) -> Block | None:  # fmt: skip
    with path.open("rb") as f:
        lines, start = statedir.tail_lines(f, entry.tail or DEFAULT_LOG_TAIL)
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
    block.body = [line for line in lines if line.strip()]
    if not block.body:
        return None if entry.optional else _note(block, "_(no decisions yet)_")
    block.fence, block.keep_end = "text", True
    return block


def _task_state(ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block,
                warnings: list[str]) -> Block | None:  # fmt: skip
    loaded = taskstate.load(path)
    data, raw = loaded.data, loaded.raw
    if loaded.problem:
        warnings.append(f"{block.shown} {loaded.problem}")
    if not isinstance(data, dict):
        if data is not None:  # valid JSON, but not an object (invalid JSON is warned)
            warnings.append(f"{block.shown} should hold a JSON object")
        block.lead = ["_(shown raw: repair it so it parses as a JSON object)_", ""]
        block.body, block.fence = raw.splitlines() or ["(empty file)"], "json"
        return block
    block.body = taskstate.to_markdown(data, _warner(block, warnings))
    return block


def _warner(block: Block, warnings: list[str]) -> taskstate.Warn:
    return lambda msg, _key: warnings.append(f"{block.shown}: {msg}")


def _handoff(ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block,
             warnings: list[str]) -> Block | None:  # fmt: skip
    loaded = taskstate.load(path)
    if loaded.problem:
        warnings.append(f"{block.shown} {loaded.problem}")
    text = taskstate.handoff(loaded.data, _warner(block, warnings))
    if text is None:
        return None  # no handoff: nothing to say, not even a heading
    block.body = text.splitlines()
    return block


_KINDS: dict[str, Callable[..., Block | None]] = {
    "text": _text,
    "entries": _entries,
    "latest": _latest,
    "decision-log": _decision_log,
    "task-state": _task_state,
    "handoff": _handoff,
}
