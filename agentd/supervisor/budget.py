"""Budgets that span restarts (docs/units.md, ``budget``): sessions, runtime and output per day.

A day is the local calendar day. Usage comes from the unit's history: each
``start`` record counts a session, each ``end`` record brings its
``duration_s`` and estimated output ``tokens`` to the day it ended on.
Reaching a budget pauses the unit until the next local midnight (state
``paused``, event ``unit.budget``) instead of burning on. Pure: values in,
values out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agentd.config.sections import Budget


@dataclass(frozen=True)
class Usage:
    sessions: int = 0
    runtime_s: float = 0.0
    tokens: int = 0


def next_midnight(now: float) -> float:
    day = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0)
    return (day + timedelta(days=1)).timestamp()


def _day_of(record: Mapping[str, Any]) -> str | None:
    try:
        at = datetime.fromisoformat(str(record.get("at", "")).replace("Z", "+00:00"))
    except ValueError:
        return None
    return at.astimezone().date().isoformat()


def usage_today(records: Iterable[Mapping[str, Any]], now: float) -> Usage:
    today = datetime.fromtimestamp(now).date().isoformat()
    sessions, runtime, tokens = 0, 0.0, 0
    for record in records:
        if _day_of(record) != today:
            continue
        if record.get("kind") == "start":
            sessions += 1
        elif record.get("kind") == "end":
            runtime += float(record.get("duration_s") or 0.0)
            tokens += int(record.get("tokens") or 0)
    return Usage(sessions, runtime, tokens)


def reached(budget: Budget, usage: Usage) -> str | None:
    """The first budget ``usage`` has reached, by its key name; None if none."""
    if budget.max_sessions_per_day and usage.sessions >= budget.max_sessions_per_day:
        return "max_sessions_per_day"
    if budget.max_runtime_per_day and usage.runtime_s >= budget.max_runtime_per_day:
        return "max_runtime_per_day"
    if budget.max_output_tokens_per_day and usage.tokens >= budget.max_output_tokens_per_day:
        return "max_output_tokens_per_day"
    return None


def any_set(budget: Budget) -> bool:
    return bool(
        budget.max_sessions_per_day
        or budget.max_runtime_per_day
        or budget.max_output_tokens_per_day
    )
