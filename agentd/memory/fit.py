"""Fit rendered state files into a token budget (SPEC 4, bootstrap step 2).

Earlier blocks take what they need first. A block that does not fit whole is
cut at a line boundary with the marker
``[... cut for the token budget: read PATH for the rest]`` (tails keep their
newest lines and lose their oldest); blocks that do not fit at all are named
on one ``[left out for the token budget: ...]`` line. Once a block had to be
cut for the budget, later blocks are left out rather than shown as scraps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agentd.tokens import estimate_tokens

MIN_BODY_TOKENS = 8  # less room than this: leave the file out rather than show a stub
LEFT_OUT = "[left out for the token budget: read {paths}]"
CUT = "[... cut for the token budget: read {path} for the rest]"


@dataclass
class Block:
    """One layout file, rendered but not yet fitted to the budget."""

    title: str
    shown: str  # the path as the agent should type it (relative to the workdir)
    body: list[str]  # the lines that may be cut
    lead: list[str] = field(default_factory=list)  # notes shown whenever the file is
    fence: str | None = None  # wrap body in a ``` fence (raw JSON, log lines)
    keep_end: bool = False  # tails: cut the oldest lines, keep the newest
    complete: bool = True  # False: the body is already partial (read cap), always mark
    max_tokens: int | None = None


def fit(blocks: Sequence[Block | None], budget: int) -> tuple[list[str], list[str]]:
    """The rendered sections of ``blocks`` within ``budget`` tokens, and the
    paths that were cut or left out."""
    sections: list[str] = []
    cut: list[str] = []
    left_out: list[str] = []
    remaining = budget
    for block in blocks:
        if block is None:
            continue
        full = assemble(block, block.body, marker=None)
        cost = estimate_tokens(full) + 1  # +1: the blank line before the next section
        limit = min(remaining, block.max_tokens or remaining)
        if block.complete and cost <= limit:
            sections.append(full)
            remaining -= cost
            continue
        partial = cut_block(block, limit)
        cut.append(block.shown)
        if partial is None:
            left_out.append(block.shown)
        else:
            sections.append(partial)
        if cost > remaining:
            remaining = 0  # the budget ran out here
        elif partial is not None:  # cut by its own max_tokens or a read cap
            remaining -= estimate_tokens(partial) + 1
    if left_out:
        sections.append(LEFT_OUT.format(paths=", ".join(dict.fromkeys(left_out))))
    return sections, list(dict.fromkeys(cut))


def assemble(block: Block, body: list[str], marker: str | None) -> str:
    lines = [f"## {block.title}", "", *block.lead]
    if block.fence is not None:
        body = [f"```{block.fence}", *body, "```"]
    if marker and block.keep_end:
        lines.append(marker)
    lines.extend(body)
    if marker and not block.keep_end:
        lines.append(marker)
    return "\n".join(lines).rstrip("\n")


def cut_block(block: Block, limit: int) -> str | None:
    """``block`` with as many body lines as fit in ``limit`` tokens, or None
    when not even a useful part of it fits."""
    marker = CUT.format(path=block.shown)
    room = limit - estimate_tokens(assemble(block, [], marker)) - 1
    if room < MIN_BODY_TOKENS:
        return None
    order = list(reversed(block.body)) if block.keep_end else block.body
    kept: list[str] = []
    for line in order:
        cost = estimate_tokens(line) + 1  # +1: its newline, rounded up
        if cost > room:
            if not kept:  # one huge line: better part of it than nothing
                kept.append(take_tokens(line, room, from_end=block.keep_end))
            break
        kept.append(line)
        room -= cost
    if block.keep_end:
        kept.reverse()
    return assemble(block, kept, marker)


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
