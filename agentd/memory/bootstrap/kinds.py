"""How each kind of layout file is shown in the bootstrap (``agentd.memory.layout.FileKind``).

``file_block(ctx, entry, warnings)`` reads one layout file and returns a
``Block`` of budget parts (``agentd.memory.bootstrap.parts``), not yet fitted
to the budget (``agentd.memory.bootstrap.fit``), or None when there is nothing
worth a heading (an optional file that is missing or empty). Problems become
warnings; nothing here raises for a missing or malformed file.

The kinds: Markdown text, a file of ``## `` entries, a decision log (read
backwards, never more than the budget could show), a task state and its
handoff (JSON), and the newest file of a directory. In Markdown, HTML
comments (template guidance for people) are left out, so are the template's
example lines that nobody edited since ``agentctl state init`` (they are
examples, not rules: the block says how many) and sections left empty;
headings are nested under the block's own ``##`` heading. Records and free
text are read from the end of the file (their newest part).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agentd import fileio
from agentd.memory import statedir
from agentd.memory.bootstrap.escapes import escape_lines
from agentd.memory.bootstrap.parts import Block, Part, list_part, must_parts, record_part
from agentd.memory.formats import items, jsonitems, markdown, outline, taskstate
from agentd.memory.formats.decisions import DECISION_FORM, bad_lines
from agentd.memory.layout import Keep, LayoutFile, templates
from agentd.memory.schema import replace

if TYPE_CHECKING:
    from agentd.memory.bootstrap.render import BootstrapContext

DEFAULT_LOG_TAIL = 10
MIN_READ = 64 << 10  # a record reads at least this much
DEFAULT_ENTRIES = 10
BAD_LINES_NAMED = 5  # a warning names this many malformed log lines, then counts the rest
MAX_SECTION_BYTES = 4 << 20
COUNT_LINES_LIMIT = 4 << 20  # true line numbers only while counting them is cheap


def shown(workdir: Path, path: Path) -> str:
    """``path`` as the agent should use it: relative to the workdir when inside."""
    normal = Path(os.path.normpath(path))
    try:
        return normal.relative_to(os.path.normpath(workdir)).as_posix()
    except ValueError:
        return str(normal)


def read_bytes(ctx: BootstrapContext) -> int:
    """What is read of a record or free text file: more than the budget can
    show (4 bytes a token, 4 times over), at least 64 KiB, at most 4 MiB."""
    return min(max(MIN_READ, ctx.budget_tokens * 16), MAX_SECTION_BYTES)


def empty_optional(entry: LayoutFile, block: Block) -> Block | None:
    """An optional file with nothing in it is not worth a heading; a required
    one says it is empty."""
    lines = [ln for p in block.parts for ln in p.lines] + [
        ln for p in block.parts for item in p.items for ln in item
    ]
    if not markdown.has_content(lines):
        if entry.optional:
            return None
        return note(block, entry, "_(empty)_")
    return block


def note(block: Block, entry: LayoutFile, text: str) -> Block:
    """``block`` saying only ``text`` (missing, empty): a fact, whatever the file's priority."""
    block.parts = [Part("must", lines=[text])]
    return block


# -- the structured kinds: entries, a decision log, a task state and its handoff --


def entries(
    ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block, warnings: list[str]
) -> Block | None:
    """A Markdown file of entries, newest last: a record of them, in any shape
    ``agentd.memory.formats.items`` reads (``## `` entries, list items, ...)."""
    made = _markdown(ctx, entry, path, block, warnings, record=True, what="entries")
    if made is not None and not made.parts:
        return None if entry.optional else note(block, entry, "_(no entries yet)_")
    return made


def _json_record(text: str, block: Block) -> tuple[list[str], str] | None:
    """The items of a JSON record file (an array, or a JSON Lines file), as text."""
    found = jsonitems.json_record(text)
    if found is None:
        return None
    values, where = found
    texts, bad = jsonitems.json_items(values)
    if bad:
        block.notes.append(
            f"guessed: {len(bad)} item(s) of {where} hold no text field: shown as JSON"
        )
    return texts, where


def _newest_at_top(text: str) -> bool:
    """Does the end of a record file read as a list written newest first?"""
    lines = lines_of(text)
    firsts = [ln for ln in lines if items.bullet(ln) or markdown.HEADING.match(ln)]
    return items.newest_first(firsts or lines)


def lines_of(text: str) -> list[str]:
    """``text``'s lines, as any editor writes them (CRLF, a byte-order mark)."""
    return text.lstrip("\ufeff").splitlines()


def _note_guesses(
    block: Block, lines: list[str], sections: Sequence[str], first: int, record: bool
) -> None:
    """The reader's guesses over ``lines`` (the file's, from line ``first``; 0:
    not known), or over its ``sections``, in the account: a note, never a
    warning of the bootstrap."""
    found: list[items.Guess] = []
    if sections:
        for span in outline.find_all(lines, sections):
            if span is not None:
                at = first + span[0] if first else 0
                found += outline.guesses(lines[span[0] : span[1]], at, record=record)
    else:
        found = outline.guesses(lines, first, record=record)
    for guess in found:
        where = f"{block.shown}:{guess.line}" if guess.line else block.shown
        block.notes.append(f"guessed ({where}): {guess.message}")


def decision_log(
    ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block, warnings: list[str]
) -> Block | None:
    least = entry.tail or DEFAULT_LOG_TAIL
    # a record reads as much more as the budget could show (4 bytes a token)
    more = min(ctx.budget_tokens * 4, MAX_SECTION_BYTES) if entry.priority == "record" else 0
    with statedir.open_regular(path) as f:
        lines, start = fileio.tail_window(f, least, more)
    before = statedir.count_lines_before(path, start, COUNT_LINES_LIMIT)
    unread: int | None = None if before is None else before
    newest_at_top = items.newest_first(lines)
    if newest_at_top:  # written newest first (by hand): the news is at its head
        head, truncated = statedir.read_head(path, max(more, MIN_READ))
        lines = lines_of(head)[:-1] if truncated else lines_of(head)
        before, unread = 0, None if truncated else 0
        block.notes.append(f"guessed ({block.shown}): {items.NEWEST_FIRST}")
    _warn_bad_lines(block, lines, before, warnings)
    logged = _log_items(lines)
    if newest_at_top:
        logged.reverse()
    if not logged:
        return None if entry.optional else note(block, entry, "_(no decisions yet)_")
    block.parts = [
        list_part(
            entry.priority,
            logged,
            least,
            what="decisions",
            path=block.shown,
            fence="text",
            unread=unread,
        )
    ]
    return block


def _warn_bad_lines(
    block: Block, lines: list[str], before: int | None, warnings: list[str]
) -> None:
    """A warning naming the first of ``lines`` (the file's, after ``before``
    lines; None: not known, counted from the end) not in the six-field form."""
    bad = [
        str(before + i + 1) if before is not None else str(len(lines) - i) for i in bad_lines(lines)
    ]
    if not bad:
        return
    named = bad[:BAD_LINES_NAMED]
    where = ("lines " if len(bad) > 1 else "line ") + ", ".join(named)
    if len(bad) > len(named):
        where += f" and {len(bad) - len(named)} more (`agentctl state check` lists them)"
    where += "" if before is not None else " (counted from the end)"
    warnings.append(
        f"{block.shown}: {where} {'are' if len(bad) > 1 else 'is'} not in the six-field form "
        f"`{DECISION_FORM}`"
    )


def _log_items(lines: list[str]) -> list[list[str]]:
    """A log's items: one a line, an indented line continuing the one above."""
    out: list[list[str]] = []
    for line in lines:
        if not line.strip():
            continue
        if out and line[0] in " \t":
            out[-1].append(line)
        else:
            out.append([line])
    return out


def task_state(
    ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block, warnings: list[str]
) -> Block | None:
    loaded = taskstate.load(path)
    data, raw = loaded.data, loaded.raw
    if loaded.problem:
        warnings.append(f"{block.shown} {loaded.problem}")
    if not isinstance(data, dict):
        if data is not None:  # valid JSON, but not an object (invalid JSON is warned)
            warnings.append(f"{block.shown} should hold a JSON object")
        block.lead = ["_(shown raw: repair it so it parses as a JSON object)_", ""]
        block.parts = [
            Part(entry.priority, lines=raw.splitlines() or ["(empty file)"], fence="json")
        ]
        return block
    block.parts = [
        _state_part(p, entry.priority, block.shown)
        for p in taskstate.to_parts(data, _warner(block, warnings))
    ]
    return block


def _state_part(part: list[str] | taskstate.ListPart, keep: Keep, where: str) -> Part:
    if not isinstance(part, taskstate.ListPart):
        return Part(keep, lines=markdown.strip_blank(part), gap=True)
    label = part.label

    def caption(shown: int, total: int) -> list[str]:
        newest = f" the newest {shown} of {total} (the rest: {where})" if shown < total else ""
        return [f"**{label}:**{newest}"]

    items = [[line] for line in part.items]
    made = list_part(
        "record", items, taskstate.SHOWN_ITEMS, what=label.lower(), path=where, caption=caption
    )
    made.gap = True
    return made


def _warner(block: Block, warnings: list[str]) -> taskstate.Warn:
    return lambda msg, _key: warnings.append(f"{block.shown}: {msg}")


def handoff(
    ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block, warnings: list[str]
) -> Block | None:
    loaded = taskstate.load(path)
    if loaded.problem:
        warnings.append(f"{block.shown} {loaded.problem}")
    text = taskstate.handoff(loaded.data, _warner(block, warnings))
    if text is None:
        return None  # no handoff: nothing to say, not even a heading
    block.parts = [Part(entry.priority, lines=text.splitlines())]
    return block


# -- the dispatch, Markdown text and the newest file of a directory ---------------

LAYOUT_RECORD = ".layout"  # the layout `agentctl state init` wrote the templates of


def file_block(ctx: BootstrapContext, entry: LayoutFile, warnings: list[str]) -> Block | None:
    """The block of one layout file (None: nothing worth a heading); its control
    characters escaped, with a warning (``agentd.memory.bootstrap.escapes``)."""
    block = _file_block(ctx, entry, warnings)
    if block is not None:
        _escape_block(block, warnings)
    return block


def _escape_block(block: Block, warnings: list[str]) -> None:
    found = escape_lines(block.lead)
    for part in block.parts:
        found += escape_lines(part.lines)
        for item in part.items:
            found += escape_lines(item)
    if found:
        names = ", ".join(dict.fromkeys(found))
        warnings.append(
            f"{block.shown} holds control characters ({names}): they are shown "
            "escaped (\\xNN), never typed or passed on; remove them"
        )


def _file_block(ctx: BootstrapContext, entry: LayoutFile, warnings: list[str]) -> Block | None:
    path = ctx.state_dir / entry.path
    where = shown(ctx.workdir, path)
    block = Block(title=entry.heading, shown=where, max_tokens=entry.max_tokens)
    try:
        statedir.check_inside(ctx.state_dir, path)
        if not path.exists():
            if entry.optional:
                return None
            warnings.append(f"{where} is missing: create it (the layout lists it as required)")
            return note(block, entry, f"_(missing: `{where}`)_")
        if entry.kind == "latest" or path.is_dir():
            return _latest(ctx, entry, path, block, warnings)
        return _KINDS[entry.kind](ctx, entry, path, block, warnings)
    except (OSError, UnicodeError) as e:
        warnings.append(f"{where} could not be read: {e}")
        return note(block, entry, f"_(unreadable: `{where}`)_")


def _text(
    ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block, warnings: list[str]
) -> Block | None:
    keep = entry.priority
    if entry.tail and not entry.sections and keep != "record":
        with statedir.open_regular(path) as f:  # a must or free tail: its last lines
            lines, start = fileio.tail_lines(f, entry.tail)
        if start > 0:
            block.lead += [f"_(its last {len(lines)} lines)_", ""]
        body = markdown.nest(markdown.without_comments(lines), block.title)
        block.parts = [Part(keep, lines=body, keep_end=True)]
        return empty_optional(entry, block)
    made = _markdown(ctx, entry, path, block, warnings, record=keep == "record", what="items")
    return made if made is None else empty_optional(entry, made)


def _markdown(
    ctx: BootstrapContext,
    entry: LayoutFile,
    path: Path,
    block: Block,
    warnings: list[str],
    *,
    record: bool,
    what: str,
) -> Block | None:
    """A Markdown file (or its ``sections``) as parts: a record of its items
    (``record``; a JSON array too), free text, or must-keep text with its
    growing lists as records (``must_parts``). Where reading it had to guess,
    the account says so with the file line."""
    keep = entry.priority
    whole = entry.sections or (keep == "must" and not record)
    if whole:  # all of it: the budget, not a read cap, cuts facts
        text, truncated = statedir.read_head(path, MAX_SECTION_BYTES)
    else:  # records and free text: their newest part is the end
        text, truncated = statedir.read_end(path, read_bytes(ctx))
    if truncated and not whole and _newest_at_top(text):  # by hand, newest first: its head
        text, truncated = statedir.read_head(path, read_bytes(ctx))
        text = text.rsplit("\n", 1)[0] if truncated else text
    if truncated and whole:
        block.complete = False  # the marker goes after what was read
    elif truncated:
        block.lead += [f"_(the end of a long file: read {block.shown} for the rest)_", ""]
        block.notes.append("only the end of the file was read (it is long)")
    if record and not entry.sections and (found := _json_record(text, block)) is not None:
        texts, where = found
        block.notes.append(f"read as {len(texts)} items of {where}")
        listed = [[f"- {t}"] for t in texts]
        least = entry.tail or DEFAULT_ENTRIES
        block.parts = (
            [list_part(keep, listed, least, what=what, path=block.shown)] if listed else []
        )
        return block
    lines = lines_of(text)
    if keep != "free" or record:
        _note_guesses(block, lines, entry.sections, 1 if whole or not truncated else 0, record)
    if len(entry.sections) == 1:
        found_body = outline.section_body(lines, entry.sections[0])
        if found_body is None:
            return _no_section(block, entry, entry.sections[0], warnings)
        lines = found_body
    elif entry.sections:
        lines = _sections(lines, entry.sections, block.shown, warnings)
    lines, examples = _without_examples(ctx, entry, markdown.without_comments(lines))
    lines = markdown.drop_empty_sections(markdown.single_blank(lines))
    body = markdown.strip_blank(markdown.nest(lines, block.title))
    if examples:
        count = f"{examples} example line{'' if examples == 1 else 's'}"
        block.notes.append(f"{count} of the template, never edited, left out")
        if not markdown.has_content(body):  # still the template: say so, not "(empty)"
            return note(
                block,
                entry,
                f"_(still the template: {count}, never edited; examples are not rules)_",
            )
        block.lead += [
            f"_({count} of the template, never edited, left out: examples are not rules)_",
            "",
        ]
    if record:
        reading = items.read(body, 0)
        if not reading.items:
            block.parts = []
            return block
        if reading.shape not in ("paragraphs", "lines"):  # those are guesses, noted already
            count = f"{len(reading.items)}{'+' if truncated else ''}"
            block.notes.append(f"read as {count} {reading.what}")
        least = entry.tail or DEFAULT_ENTRIES
        unread = None if truncated else 0
        block.parts = [
            record_part(keep, reading, least, what=what, path=block.shown, unread=unread)
        ]
    elif keep == "free":
        block.parts = [Part("free", lines=body, keep_end=True)]
    else:
        block.parts = must_parts(body, keep, block.shown)
    return block


def _no_section(block: Block, entry: LayoutFile, name: str, warnings: list[str]) -> Block:
    warnings.append(f"{block.shown} has no `## {name}` section")
    return note(block, entry, f"_(no `## {name}` section)_")


def _sections(lines: list[str], names: Sequence[str], shown: str, warnings: list[str]) -> list[str]:
    """The sections ``names`` of a Markdown file, in that order, each under
    ``### NAME``; a missing one is warned about, an empty one left out later."""
    out: list[str] = []
    for name, body in zip(names, outline.bodies(lines, names), strict=True):
        if body is None:
            warnings.append(f"{shown} has no `## {name}` section")
            body = [f"_(no `## {name}` section)_"]
        # its own headings below its name's: a `### 12. ...` entry stays inside it
        out += [f"### {name}", "", *markdown.nest(markdown.strip_blank(body), "", top=4), ""]
    return out


def _without_examples(
    ctx: BootstrapContext, entry: LayoutFile, lines: list[str]
) -> tuple[list[str], int]:
    """``lines`` without the template's example lines nobody edited, and how many."""
    examples = example_lines(ctx.state_dir, entry.path)
    kept = [ln for ln in lines if ln.rstrip() not in examples] if examples else lines
    return kept, len(lines) - len(kept)


def example_lines(state_dir: Path, rel: str) -> frozenset[str]:
    """The content lines of the template ``agentctl state init`` wrote for
    ``rel`` (none when the state dir records no layout): examples, not rules."""
    try:
        name = statedir.read_text(state_dir / LAYOUT_RECORD, 4096).strip()
        template = (templates(name) / rel).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return frozenset()
    return frozenset(
        ln.rstrip()
        for ln in markdown.without_comments(template.splitlines())
        if ln.strip() and not markdown.HEADING.match(ln) and not markdown.is_placeholder(ln)
    )


def _latest(
    ctx: BootstrapContext, entry: LayoutFile, path: Path, block: Block, warnings: list[str]
) -> Block | None:
    """The newest file (by name) of the directory ``path``: snapshots/."""
    if not path.is_dir():
        warnings.append(f"{block.shown} should be a directory")
        return note(block, entry, f"_(not a directory: `{block.shown}`)_")
    latest, count = statedir.latest_file(path)
    if latest is None:
        return None if entry.optional else note(block, entry, f"_(no files in `{block.shown}`)_")
    statedir.check_inside(ctx.state_dir, latest)
    block.lead = [f"_(latest of {count} files: `{shown(ctx.workdir, latest)}`)_", ""]
    block.shown = shown(ctx.workdir, latest)
    if latest.suffix == ".json":
        text, truncated = statedir.read_head(latest, MAX_SECTION_BYTES)
        block.parts = [Part(entry.priority, lines=text.splitlines(), fence="json")]
        block.complete = not truncated
        return block
    inner = replace(entry, kind="text", optional=False, keep=entry.priority)
    return _text(ctx, inner, latest, block, warnings)


_KINDS: dict[str, Callable[..., Block | None]] = {
    "text": _text,
    "entries": entries,
    "latest": _latest,
    "decision-log": decision_log,
    "task-state": task_state,
    "handoff": handoff,
}
