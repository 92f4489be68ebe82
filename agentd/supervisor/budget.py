"""Budgets that span restarts (docs/units.md, ``budget``): sessions, runtime, tokens
and money per day.

A day is the local calendar day. Usage comes from the unit's history: each
``start`` record counts a session, each ``end`` record brings its
``duration_s`` and its ``usage`` (``agentd.supervisor.usage``: the tokens and
cost its CLI recorded; for a session without records, the output tokens
estimated from the screen, ``tokens``) to the day it ended on. Reaching a
budget pauses the unit until the next local midnight (state ``paused``, event
``unit.budget``) instead of burning on; ``with_session`` adds the running
session's figures so it can be handed over when it crosses one. Pure: values
in, values out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from agentd.config.sections import Budget
from agentd.spent import cost_of, is_real, output_of, tokens_of


@dataclass(frozen=True)
class Usage:
    sessions: int = 0
    runtime_s: float = 0.0
    tokens: int = 0  # output tokens: as recorded, else estimated from the screen
    all_tokens: int = 0  # every token sent and received (an estimate: its output)
    cost_usd: float = 0.0  # what the CLI reported or the prices give (0 when neither)
    estimated: int = 0  # sessions counted from the screen estimate (no usage records)

    def used(self, name: str) -> float:
        """The figure budget ``name`` is compared with."""
        return {
            "max_sessions_per_day": float(self.sessions),
            "max_runtime_per_day": self.runtime_s,
            "max_output_tokens_per_day": float(self.tokens),
            "max_tokens_per_day": float(self.all_tokens),
            "max_cost_per_day": self.cost_usd,
        }[name]


def next_midnight(now: float) -> float:
    day = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0)
    return (day + timedelta(days=1)).timestamp()


def _day_of(record: Mapping[str, Any]) -> str | None:
    try:
        at = datetime.fromisoformat(str(record.get("at", "")))  # 3.11 reads a "Z" itself
    except ValueError:
        return None
    return at.astimezone().date().isoformat()


def with_session(day: Usage, end: Mapping[str, Any]) -> Usage:
    """``day`` plus what one session spent (its ``end`` record, or one with only a
    ``usage`` record: a running session's)."""
    usage = end.get("usage")
    if is_real(usage):
        output, every, cost = output_of(usage), tokens_of(usage), cost_of(usage)
    else:
        estimated = end.get("tokens")
        if estimated is None and isinstance(usage, Mapping):
            estimated = usage.get("output_tokens")
        output = every = _count(estimated)
        cost = 0.0
        day = replace(day, estimated=day.estimated + 1)
    return replace(
        day,
        runtime_s=day.runtime_s + _seconds(end.get("duration_s")),
        tokens=day.tokens + output,
        all_tokens=day.all_tokens + every,
        cost_usd=day.cost_usd + cost,
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return max(float(value), 0.0)


def usage_today(records: Iterable[Mapping[str, Any]], now: float) -> Usage:
    today = datetime.fromtimestamp(now).date().isoformat()
    day = Usage()
    for record in records:
        if _day_of(record) != today:
            continue
        if record.get("kind") == "start":
            day = replace(day, sessions=day.sessions + 1)
        elif record.get("kind") == "end":
            day = with_session(day, record)
    return day


BUDGETS = (
    "max_sessions_per_day",
    "max_runtime_per_day",
    "max_output_tokens_per_day",
    "max_tokens_per_day",
    "max_cost_per_day",
)


def reached(budget: Budget, usage: Usage) -> str | None:
    """The first budget ``usage`` has reached, by its key name; None if none."""
    for name in BUDGETS:
        limit = getattr(budget, name)
        if limit and usage.used(name) >= limit:
            return name
    return None


def any_set(budget: Budget) -> bool:
    return any(getattr(budget, name) for name in BUDGETS)
