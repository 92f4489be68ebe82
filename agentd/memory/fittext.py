"""The text of a fitted bootstrap: each block's shown lines, its cut and
left-out markers, and the account of each file (``FileAccount``)."""

from __future__ import annotations

from agentd.memory.fitplan import CUT, LEFT_OUT, FileAccount, Fitted, Plan, Share, kept_lines
from agentd.memory.parts import Block, lines_cost
from agentd.tokens import estimate_tokens


def assemble(plan: Plan, must_over: float) -> Fitted:
    sections: list[tuple[str, FileAccount]] = []
    cut: list[str] = []
    left_out: list[str] = []
    for i, block in enumerate(plan.blocks):
        shares = [s for s in plan.shares if s.block == i]
        account = _account(block, shares)
        body: list[str] = []
        for s in shares:
            _append(body, _render(s, block.shown))
        if not block.complete and not any(s.cut for s in shares) and body:
            body.append(CUT.format(path=block.shown))  # a read cap: say there is more
        if not block.complete or any(s.cut or _short(s) for s in shares):
            cut.append(block.shown)
        if not any(line.strip() for line in body):
            if block.parts:
                left_out.append(block.shown)
                cut.append(block.shown)
                account.notes.append("left out: " + _why_left_out(shares))
                sections.append((None, account))
            continue
        while body and not body[0].strip():
            del body[0]
        text = "\n".join([f"## {block.title}", "", *block.lead, *body]).rstrip("\n")
        sections.append((text, account))
    if left_out:
        marker = LEFT_OUT.format(paths=", ".join(dict.fromkeys(left_out)))
        sections.append((marker, FileAccount("left-out", "fixed", estimate_tokens(marker))))
    return Fitted(sections, list(dict.fromkeys(cut)), must_over)


def _short(s: Share) -> bool:
    """A record showing fewer than its guaranteed items."""
    p = s.part
    return p.keep == "record" and s.count < min(p.least, len(p.items))


def _why_left_out(shares: list[Share]) -> str:
    reasons = [s.reason for s in shares if s.reason]
    if reasons:
        return reasons[0]
    if any(s.part.keep == "record" and s.part.items for s in shares):
        return "no room left after the must-keep facts"
    return "nothing left for free text"


def _append(body: list[str], lines: list[str]) -> None:
    """Add ``lines`` to ``body`` without doubling the blank line between them."""
    if lines and body and not body[-1].strip() and not lines[0].strip():
        lines = lines[1:]
    body.extend(lines)


def _render(s: Share, path: str) -> list[str]:
    p = s.part
    if s.count == 0:
        return []
    gap = [""] if p.gap else []
    if p.keep == "record":
        shown = [ln for item in p.items[len(p.items) - s.count :] for ln in item]
        return [*gap, *p.caption(s.count, p.total), *p.fenced(shown)]
    if not s.cut:
        return [*gap, *p.fenced(p.lines)]
    kept = p.fenced(kept_lines(s))
    marker = CUT.format(path=path)
    return [*gap, *([marker, *kept] if p.keep_end else [*kept, marker])]


def _account(block: Block, shares: list[Share]) -> FileAccount:
    keeps = "+".join(dict.fromkeys(p.keep for p in block.parts)) or "-"
    frame = lines_cost([f"## {block.title}", "", *block.lead])
    total = frame + sum(p.whole_cost() for p in block.parts)
    notes = list(block.notes)
    for s in shares:
        p = s.part
        if p.keep == "record" and p.items:
            due = min(p.least, len(p.items))
            of = f"{p.total}{'+' if p.unread is None else ''}"
            line = f"{p.what}: the newest {s.count} of {of} shown ({due} guaranteed)"
            if s.count < due:
                line += ": the budget went to must-keep facts first"
            notes.append(line)
        elif s.cut:
            notes.append(f"{p.keep} text cut: {s.reason}")
    if not block.complete:
        notes.append("only part of the file was read (it is large)")
    return FileAccount(block.shown, keeps, total, notes)
