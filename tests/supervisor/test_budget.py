"""Daily budgets from the history, as tables (pure)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from agentd.config.sections import Budget
from agentd.supervisor.budget import Usage, next_midnight, reached, usage_today

NOW = time.time()


def at(days_ago: float) -> str:
    """A record's time ``days_ago`` before NOW (not before the clock when the test runs:
    across midnight the two are different days)."""
    return (datetime.fromtimestamp(NOW).astimezone() - timedelta(days=days_ago)).isoformat()


def test_usage_counts_today_only() -> None:
    records = [
        {"kind": "start", "session": 1, "at": at(2)},
        {"kind": "end", "session": 1, "at": at(2), "duration_s": 500, "tokens": 9000},
        {"kind": "start", "session": 2, "at": at(0)},
        {"kind": "end", "session": 2, "at": at(0), "duration_s": 30.5, "tokens": 120},
        {"kind": "outcome", "session": 2, "at": at(0)},
        {"kind": "start", "session": 3, "at": "not a time"},
    ]
    assert usage_today(records, NOW) == Usage(
        sessions=1, runtime_s=30.5, tokens=120, all_tokens=120, estimated=1
    )  # no usage records: the screen's estimate


def test_reached_names_the_first_budget() -> None:
    budget = Budget(
        max_sessions_per_day=3, max_runtime_per_day="1h", max_output_tokens_per_day=1000
    )
    assert reached(budget, Usage(2, 100.0, 10)) is None
    assert reached(budget, Usage(3, 100.0, 10)) == "max_sessions_per_day"
    assert reached(budget, Usage(1, 3600.0, 10)) == "max_runtime_per_day"
    assert reached(budget, Usage(1, 1.0, 1000)) == "max_output_tokens_per_day"
    assert reached(Budget(), Usage(10**6, 1e9, 10**9)) is None  # 0 = no budget


def test_next_midnight_is_the_start_of_tomorrow() -> None:
    midnight = datetime.fromtimestamp(next_midnight(NOW))
    assert (midnight.hour, midnight.minute, midnight.second) == (0, 0, 0)
    assert 0 < midnight.timestamp() - NOW <= 86400 + 3600  # DST days are longer
