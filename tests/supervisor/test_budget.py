"""Daily budgets from the history, as tables (pure)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from agentd.config.sections import Budget
from agentd.supervisor.budget import (
    Usage,
    any_set,
    next_midnight,
    reached,
    usage_today,
    with_session,
)

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


def local(*args: int) -> float:
    return datetime(*args).timestamp()  # type: ignore[arg-type]


def test_recorded_usage_counts_its_output_every_token_and_the_cost() -> None:
    usage = {
        "source": "claude",
        "input_tokens": 1000,
        "output_tokens": 200,
        "cache_read_tokens": 30,
        "cache_write_tokens": 4,
        "cost_usd": 0.25,
    }
    records = [
        {"kind": "start", "at": at(0)},
        {"kind": "end", "at": at(0), "duration_s": 60, "usage": usage, "tokens": 999},
        {"kind": "start", "at": at(0)},
        {"kind": "end", "at": at(0), "duration_s": 1.5, "usage": usage},
    ]
    day = usage_today(records, NOW)
    assert day == Usage(
        sessions=2, runtime_s=61.5, tokens=400, all_tokens=2468, cost_usd=0.5, estimated=0
    )  # the records, not the screen's estimate


def test_an_estimate_comes_from_the_end_record_or_the_estimated_usage() -> None:
    estimate = {"source": "estimate", "output_tokens": 70}
    assert with_session(Usage(), {"usage": estimate}) == Usage(
        tokens=70, all_tokens=70, estimated=1
    )
    assert with_session(Usage(), {"usage": estimate, "tokens": 5}).tokens == 5
    running = with_session(Usage(tokens=10, all_tokens=20, estimated=2), {"tokens": 3})
    assert running == Usage(tokens=13, all_tokens=23, estimated=3)


def test_figures_that_are_not_counts_count_as_nothing() -> None:
    for bad in (-5, True, "12", 1.5, None, 0):
        day = with_session(Usage(), {"tokens": bad, "duration_s": bad})
        assert (day.tokens, day.all_tokens, day.cost_usd) == (0, 0, 0.0), bad
    for bad_duration in (-5, True, "12", None):
        assert with_session(Usage(), {"duration_s": bad_duration}).runtime_s == 0.0
    assert with_session(Usage(), {"duration_s": 2}).runtime_s == 2.0
    assert with_session(Usage(), {"tokens": 1}).tokens == 1
    assert with_session(Usage(), {"duration_s": 0.25}).runtime_s == 0.25


def test_a_utc_time_counts_on_its_local_day() -> None:
    now = local(2026, 6, 15, 12, 0)
    utc = datetime.fromtimestamp(now).astimezone(UTC)
    z = utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    yesterday = (datetime.fromtimestamp(now) - timedelta(days=1)).astimezone().isoformat()
    records = [
        {"kind": "start", "at": z},
        {"kind": "start", "at": yesterday},
        {"kind": "start"},  # no time: no day
    ]
    assert usage_today(records, now).sessions == 1


@pytest.mark.parametrize(
    ("name", "limit", "usage"),
    [
        ("max_sessions_per_day", 2, Usage(sessions=2)),
        ("max_runtime_per_day", "10s", Usage(runtime_s=10.0)),
        ("max_output_tokens_per_day", 100, Usage(tokens=100)),
        ("max_tokens_per_day", 5000, Usage(all_tokens=5000, tokens=1)),
        ("max_cost_per_day", 1.5, Usage(cost_usd=1.5)),
    ],
)
def test_each_budget_is_reached_at_its_limit_and_not_before(
    name: str, limit: object, usage: Usage
) -> None:
    budget = Budget.model_validate({name: limit})
    assert any_set(budget)
    assert reached(budget, usage) == name
    below = {
        "max_sessions_per_day": Usage(sessions=1),
        "max_runtime_per_day": Usage(runtime_s=9.9),
        "max_output_tokens_per_day": Usage(tokens=99, all_tokens=10**6),
        "max_tokens_per_day": Usage(all_tokens=4999, tokens=10**6),
        "max_cost_per_day": Usage(cost_usd=1.49),
    }[name]
    assert reached(budget, below) is None
    assert not any_set(Budget())


def test_the_next_midnight_of_a_day_and_of_midnight_itself() -> None:
    assert next_midnight(local(2026, 3, 10, 15, 30, 5) + 0.25) == local(2026, 3, 11)
    assert next_midnight(local(2026, 3, 10)) == local(2026, 3, 11)
    assert next_midnight(local(2026, 12, 31, 23, 59, 59)) == local(2027, 1, 1)
