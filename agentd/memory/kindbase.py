"""What every kind of layout file shares in the bootstrap: where a file is shown,
how much of it is read, and a block that only says a note (missing, empty)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from agentd.memory import markdown
from agentd.memory.layout import LayoutFile
from agentd.memory.parts import Block, Part

if TYPE_CHECKING:
    from agentd.memory.context import BootstrapContext

DEFAULT_LOG_TAIL = 10
DEFAULT_ENTRIES = 10
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
    return min(max(64 << 10, ctx.budget_tokens * 16), MAX_SECTION_BYTES)


def empty_optional(entry: LayoutFile, block: Block) -> Block | None:
    """An optional file with nothing in it is not worth a heading; a required
    one says it is empty."""
    lines = [ln for p in block.parts for ln in p.lines] + [
        ln for p in block.parts for item in p.items for ln in item]
    if not markdown.has_content(lines):
        if entry.optional:
            return None
        return note(block, entry, "_(empty)_")
    return block


def note(block: Block, entry: LayoutFile, text: str) -> Block:
    """``block`` saying only ``text`` (missing, empty): a fact, whatever the file's priority."""
    block.parts = [Part("must", lines=[text])]
    return block
