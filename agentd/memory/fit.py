"""Fit rendered state files into a token budget, by priority (SPEC 4, bootstrap step 2).

Each layout file is a ``Block`` of ``Part``s, and each part is must-keep, a
record or free text (``agentd.memory.layout.Keep``). The text keeps the
layout's order; the budget is spent by priority:

1. **must**: every must-keep part, whole. If they alone exceed the budget they
   share it evenly - a long file is cut before a short one loses a line
   (water-filling) - each cut one is marked, and nothing of lower priority is
   shown (``Fitted.must_over`` says by how much, for a warning).
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

This module decides how much of each part is shown; ``fitplan`` holds that
plan, ``fittext`` writes the text from it.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentd.memory.fitplan import (
    MIN_BODY_TOKENS,
    FileAccount,
    Fitted,
    Plan,
    Share,
    cut_cost,
    marker_cost,
)
from agentd.memory.fittext import assemble
from agentd.memory.layout import Keep
from agentd.memory.parts import Block, Part, line_cost, lines_cost

__all__ = ["FileAccount", "Fitted", "fit", "must_cost"]


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
    return sum(min(plan.frame(i) + sum(s.part.whole_cost() for s in g), plan.limit(i))
               for i, g in groups.items())  # fmt: skip


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
            why = ("must-keep files alone exceed the budget" if keep == "must"
                   else "free text gets only what is left")  # fmt: skip
        else:
            why = f"over its max_tokens ({plan.blocks[i].max_tokens})"
        frame = plan.frame(i)
        if allowance < need[i] and allowance - frame < MIN_BODY_TOKENS:
            for s in group:
                s.reason = why
            continue
        plan.pay(i, frame)
        left = allowance - frame
        for s in group:
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
                cost = lines_cost(items[len(items) - s.count - 1])
                if s.count == 0:  # the first item brings its caption (and the heading)
                    cost += plan.frame(s.block) + lines_cost(s.part.caption(0, s.part.total))
                    cost += s.part.fence_cost() + (0.5 if s.part.gap else 0.0)
                if cost > min(plan.room, plan.limit(s.block)):
                    stopped.add(k)  # a record shows an unbroken run of its newest items
                    continue
                plan.pay(s.block, cost)
                s.count += 1
                progress = True
