"""Fit rendered state files into a token budget, by priority (the bootstrap's second part).

Each layout file is a ``Block`` of ``Part``s, and each part is must-keep, a
record or free text (``agentd.memory.layout.Keep``). The text keeps the
layout's order; the budget is spent by priority:

1. **must**: every must-keep part, whole. If they alone exceed the budget they
   share it evenly - a long file is cut before a short one loses a line
   (water-filling) - each cut one is marked, and nothing of lower priority is
   shown (``Fitted.must_over`` says by how much, for a warning). Inside a
   file, the parts that say what to do now (``Part.now``: current task, next
   step, blockers, handoff) get its share first, the rest what is left.
2. **record**: the newest ``least`` items of every record, then more of the
   newest, one item per record in turn while they fit. A record shows an
   unbroken run of its newest items, with a caption counting the rest.
3. **free**: what is left, shared evenly, each part keeping its newest end.

A block's heading and lead are paid with its first part; ``max_tokens`` caps a
block. Blocks with nothing shown are named on one ``[left out for the token
budget: ...]`` line. Costs are fractional token estimates per line
(``line_cost``), which add up to ``estimate_tokens`` of the whole text within
rounding, so the budget is not wasted on per-line rounding.

``Fitted.sections`` pairs each rendered section with its ``FileAccount``: what
``agentctl state show --explain`` and the ``session.bootstrap`` event report.

Here: the plan (``Plan``, a ``Share`` per part), the decision (``fit``) and the
text written from the plan (``assemble``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agentd.memory.bootstrap.parts import Block, Part, line_cost, lines_cost, take_tokens
from agentd.memory.layout import Keep
from agentd.tokens import estimate_tokens

MIN_BODY_TOKENS = 8  # less room than this: leave the part out rather than show a stub
LEFT_OUT = "[left out for the token budget: read {paths}]"
CUT = "[... cut for the token budget: read {path} for the rest]"


@dataclass
class FileAccount:
    """What happened to one file (or fixed part) of the bootstrap."""

    name: str  # the path shown, or "header", "warnings", ...
    keep: str  # must, record, free, must+record, ... or "fixed"
    total: float  # tokens of all of it that was read (a long log: its end), shown whole
    notes: list[str] = field(default_factory=list)
    tokens: int = 0  # tokens shown, filled in from the final text

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "keep": self.keep,
            "tokens": self.tokens,
            "total": round(self.total),
            "notes": self.notes,
        }


@dataclass
class Fitted:
    sections: list[tuple[str | None, FileAccount]]  # in layout order; None: left out
    cut: list[str]  # paths not shown in full for the budget
    must_over: float = 0.0  # tokens the must-keep parts needed beyond the budget


@dataclass
class Share:
    """The plan for one part: lines (must/free) or newest items (record) shown."""

    block: int
    part: Part
    count: int = 0  # lines or items shown; -1: a part of one huge line
    cut: bool = False  # a must/free part cut short
    room: float = 0.0  # count -1: the tokens that part of the line may take
    reason: str = ""


class Plan:
    def __init__(self, blocks: Sequence[Block], budget: float) -> None:
        self.blocks = blocks
        self.room = budget
        self.spent = [0.0] * len(blocks)
        self.paid = [False] * len(blocks)
        self.shares = [Share(i, p) for i, b in enumerate(blocks) for p in b.parts]

    def frame(self, i: int) -> float:
        """Block ``i``'s heading and lead, if not paid yet (+0.5: the blank line after it)."""
        b = self.blocks[i]
        return 0.0 if self.paid[i] else lines_cost([f"## {b.title}", "", *b.lead]) + 0.5

    def limit(self, i: int) -> float:
        """What block ``i`` may still take by its own ``max_tokens``."""
        most = self.blocks[i].max_tokens
        return float("inf") if most is None else most - self.spent[i]

    def pay(self, i: int, cost: float) -> None:
        self.paid[i] = True
        self.spent[i] += cost
        self.room -= cost

    def of(self, keep: Keep) -> list[Share]:
        return [s for s in self.shares if s.part.keep == keep]


def marker_cost(part: Part) -> float:
    return line_cost(CUT.format(path="x" * 40)) + (0.5 if part.gap else 0.0)


def kept_lines(s: Share) -> list[str]:
    lines = s.part.lines
    if s.count == -1:  # one huge line: better part of it than nothing
        line = lines[-1] if s.part.keep_end else lines[0]
        return [take_tokens(line, int(s.room), from_end=s.part.keep_end)]
    return lines[len(lines) - s.count :] if s.part.keep_end else lines[: s.count]


def cut_cost(s: Share) -> float:
    if s.count == 0:
        return 0.0
    return lines_cost(kept_lines(s)) + marker_cost(s.part) + s.part.fence_cost()


# -- the text written from the plan: each block's shown lines, its cut and left-out
# markers, and the account of each file (``FileAccount``) -------------------------


def assemble(plan: Plan, must_over: float) -> Fitted:
    sections: list[tuple[str | None, FileAccount]] = []
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


# -- the decision -------------------------------------------------------------------


def fit(blocks: Sequence[Block], budget: float) -> Fitted:
    """``blocks`` rendered within ``budget`` tokens (see the module docstring)."""
    plan = Plan(blocks, budget)
    must_over = _spread(plan, plan.of("must"), "must")
    if must_over <= 0:
        _records(plan)
        _spread(plan, plan.of("free"), "free")
    return assemble(plan, must_over)


def must_cost(blocks: Sequence[Block]) -> float:
    """What the must-keep parts of ``blocks`` cost whole (with their headings),
    each block at most its ``max_tokens``."""
    plan = Plan(blocks, 0.0)
    groups = _by_block(plan.of("must"))
    return sum(
        min(plan.frame(i) + sum(s.part.whole_cost() for s in g), plan.limit(i))
        for i, g in groups.items()
    )


def _by_block(shares: list[Share]) -> dict[int, list[Share]]:
    groups: dict[int, list[Share]] = {}
    for s in shares:
        if s.part.lines:
            groups.setdefault(s.block, []).append(s)
    return groups


def _spread(plan: Plan, shares: list[Share], keep: Keep) -> float:
    """Give the must or free ``shares`` their whole cost, or an even share of the
    room by block (water-filling); returns how much more they needed."""
    groups = _by_block(shares)
    need = {i: plan.frame(i) + sum(s.part.whole_cost() for s in g) for i, g in groups.items()}
    capped = {i: min(n, plan.limit(i)) for i, n in need.items()}
    over = sum(capped.values()) - plan.room
    level = _level(list(capped.values()), plan.room) if over > 0 else float("inf")
    for i, group in groups.items():
        allowance = min(capped[i], level)
        if allowance < capped[i]:
            why = (
                "must-keep files alone exceed the budget"
                if keep == "must"
                else "free text gets only what is left"
            )
        else:
            why = f"over its max_tokens ({plan.blocks[i].max_tokens})"
        frame = plan.frame(i)
        if allowance < need[i] and allowance - frame < MIN_BODY_TOKENS:
            for s in group:
                s.reason = why
            continue
        plan.pay(i, frame)
        left = allowance - frame
        # what to do now first, then the rest in file order (it is rendered in file order)
        for s in sorted(group, key=lambda s: not s.part.now):
            cost = s.part.whole_cost()
            if cost <= left:
                s.count = len(s.part.lines)
            else:
                s.count, s.room = _lines_fitting(s.part, left)
                s.cut, s.reason = s.count != 0, why
                cost = cut_cost(s)
            left -= cost
            plan.pay(i, cost)
    return max(over, 0.0) if keep == "must" else 0.0


def _level(needs: list[float], room: float) -> float:
    """The largest share L with sum(min(n, L)) <= room."""
    left, count = room, len(needs)
    for n in sorted(needs):
        if n * count > left:
            return max(left, 0.0) / count
        left -= n
        count -= 1
    return max(needs, default=0.0)


def _lines_fitting(part: Part, room: float) -> tuple[int, float]:
    """(lines of ``part`` that fit ``room`` with the marker, from its start or
    end; -1 for a part of one huge line, and the room that part may take)."""
    room -= marker_cost(part) + part.fence_cost()
    if room < MIN_BODY_TOKENS:
        return 0, 0.0
    count = 0
    for line in reversed(part.lines) if part.keep_end else part.lines:
        cost = line_cost(line)
        if cost > room:
            break
        room -= cost
        count += 1
    return (count, 0.0) if count else (-1, room)


def _records(plan: Plan) -> None:
    """The newest ``least`` items of every record, then more, one item each in turn."""
    shares = plan.of("record")
    stopped: set[int] = set()
    for bounded in (True, False):
        progress = True
        while progress:
            progress = False
            for k, s in enumerate(shares):
                items = s.part.items
                if k in stopped or s.count >= len(items) or (bounded and s.count >= s.part.least):
                    continue
                cost = lines_cost(items[len(items) - s.count - 1]) + _caption_change(s)
                if s.count == 0:  # the first item brings the heading (and the fence)
                    cost += plan.frame(s.block) + s.part.fence_cost() + (0.5 if s.part.gap else 0.0)
                if cost > min(plan.room, plan.limit(s.block)):
                    stopped.add(k)  # a record shows an unbroken run of its newest items
                    continue
                plan.pay(s.block, cost)
                s.count += 1
                progress = True


def _caption_change(s: Share) -> float:
    """What the caption of record ``s`` costs more with one item more shown (its
    count can gain a digit, or the caption go when all are shown)."""
    p = s.part
    before = lines_cost(p.caption(s.count, p.total)) if s.count else 0.0
    return lines_cost(p.caption(s.count + 1, p.total)) - before
