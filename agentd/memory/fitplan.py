"""The plan of a bootstrap's fit: how much of each part is shown, and what it
costs (shared by ``fit``, which decides, and ``fittext``, which writes it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agentd.memory.layout import Keep
from agentd.memory.parts import Block, Part, line_cost, lines_cost, take_tokens

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
        return {"name": self.name, "keep": self.keep, "tokens": self.tokens,
                "total": round(self.total), "notes": self.notes}  # fmt: skip


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
