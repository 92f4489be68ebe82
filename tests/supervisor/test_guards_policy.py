"""The whole decision the restart policy returns, and the edges of its counts.

``agentctl history`` shows a session's outcome, ``agentctl status`` the detail
of a failure, and the service waits ``delay`` and until ``until``: so each is
pinned here for every kind of end, not only ``next``. The edges: "shorter than
``min_uptime``" and "within ``window``" as the docs say them, the quick-end
brake's run of three, the stall count, and which earlier ends count towards a
burst (a success, a stop, a pause, a refused completion: none does).
"""

from __future__ import annotations

from typing import Any

import pytest

from agentd.config.sections import Limits, RestartSpec
from agentd.memory.bootstrap.refusal import Refusal
from agentd.reasons import Outcome
from agentd.supervisor.policy import Decision, RestartPolicy, SessionEnd

# monotonic clocks are far from zero: a sum where a difference belongs shows
T0 = 100_000.0


def policy(**restart: Any) -> RestartPolicy:
    limits = {k: restart.pop(k) for k in list(restart) if k in Limits.model_fields}
    return RestartPolicy(RestartSpec(**restart), Limits(**limits))


def end(n: int = 1, *, at: float = 0.0, up: float = 60.0, **kw: Any) -> SessionEnd:
    """Session ``n``, started ``at`` seconds after ``T0``, ``up`` seconds long."""
    return SessionEnd(session=n, started_at=T0 + at, ended_at=T0 + at + up, **kw)


@pytest.mark.parametrize(
    ("restart", "kw", "expected"),
    [
        (
            {},
            {"trigger": "manual", "action": "stop"},
            Decision("stopped", "manual", outcome=Outcome.STOPPED),
        ),
        ({}, {"exit_code": 0}, Decision("done", "exit:0", outcome=Outcome.DONE)),
        (
            {},
            {"trigger": "sentinel:limit", "action": "pause", "pause_until": T0 + 3600},
            Decision("paused", "sentinel:limit", until=T0 + 3600, outcome=Outcome.USAGE_LIMITED),
        ),
        ({}, {"trigger": "manual"}, Decision("start", "manual", outcome=Outcome.MANUAL)),
        ({}, {"exit_code": 42}, Decision("start", "exit:42", outcome=Outcome.HANDOFF)),
        ({}, {"trigger": "timeout"}, Decision("start", "timeout", outcome=Outcome.TIMEOUT)),
        (
            {"delay": 2},
            {"exit_code": 1},
            Decision("backoff", "exit:1", delay=2.0, failure=True, outcome=Outcome.CRASHED),
        ),
        (
            {"on_failure": False},
            {"exit_code": 3},
            Decision("failed", "exit:3", failure=True, detail="on_failure is off"),
        ),
        (
            {"on_failure": False, "min_uptime": 10},
            {"exit_code": 42, "up": 2.0},
            Decision("failed", "exit:42", failure=True, detail="ran 2.0s, less than min_uptime"),
        ),
        (
            {"max_sessions": 2},
            {"n": 2, "exit_code": 42},
            Decision(
                "failed", "exit:42", outcome=Outcome.HANDOFF, detail="max_sessions reached (2)"
            ),
        ),
        (
            {"max_sessions": 2},
            {"n": 2, "exit_code": 1},
            Decision(
                "failed",
                "exit:1",
                failure=True,
                outcome=Outcome.CRASHED,
                detail="max_sessions reached (2)",
            ),
        ),
        (
            {"stall_sessions": 1},
            {"exit_code": 42, "state_changed": False},
            Decision(
                "stalled",
                "exit:42",
                outcome=Outcome.STALLED,
                detail="1 sessions in a row left the state dir unchanged",
            ),
        ),
        (
            {"stall_sessions": 1},
            {"exit_code": 1, "state_changed": False},
            Decision(
                "stalled",
                "exit:1",
                failure=True,
                outcome=Outcome.STALLED,
                detail="1 sessions in a row left the state dir unchanged",
            ),
        ),
    ],
)
def test_each_kind_of_end_decides_next_reason_delay_outcome_and_detail(
    restart: dict[str, Any], kw: dict[str, Any], expected: Decision
) -> None:
    e = end(**kw)  # the table's dicts are shared by every run of the test: never changed
    assert policy(**restart).decide(e, [], now=e.ended_at) == expected


def test_a_refused_completion_starts_afresh_saying_why_then_fails_at_attempts() -> None:
    def refusal(attempt: int) -> Refusal:
        return Refusal(4, "pytest -q", "exited with code 1", "1 failed", attempt, 2)

    first = policy().decide(end(4, exit_code=0, refusal=refusal(1)), [], now=T0 + 60)
    assert first == Decision(
        "start",
        "verify-failed",
        outcome=Outcome.VERIFY_FAILED,
        detail="refusal 1 of 2: the check `pytest -q` exited with code 1",
    )
    last = policy().decide(end(5, exit_code=0, refusal=refusal(2)), [], now=T0 + 60)
    assert last == Decision(
        "failed",
        "verify-failed",
        outcome=Outcome.VERIFY_FAILED,
        detail="the completion was refused 2 times (complete.attempts 2); "
        "the last time the check `pytest -q` exited with code 1",
    )
    capped = policy(max_sessions=4).decide(end(4, refusal=refusal(1)), [], now=T0 + 60)
    assert capped == Decision(
        "failed",
        "verify-failed",
        outcome=Outcome.VERIFY_FAILED,
        detail="max_sessions reached (4); the check `pytest -q` exited with code 1",
    )


# --- the edges --------------------------------------------------------------------------------


def test_a_hand_over_exactly_min_uptime_long_is_not_shorter_than_it() -> None:
    p = policy(min_uptime=10)
    assert p.decide(end(exit_code=42, up=10.0), [], now=T0 + 10).next == "start"
    assert p.decide(end(exit_code=42, up=9.9), [], now=T0 + 10).next == "backoff"


def test_a_failure_exactly_window_ago_still_counts_towards_the_burst() -> None:
    p = policy(burst=1, window=60, delay=1)
    earlier = end(1, at=0, up=1, exit_code=1)  # ended at T0 + 1
    at_edge = p.decide(end(2, at=30, up=31, exit_code=1), [earlier], now=T0 + 61)
    assert at_edge.next == "failed" and at_edge.detail == "2 failures within 60s (burst 1)"
    past_it = p.decide(end(2, at=30, up=31.5, exit_code=1), [earlier], now=T0 + 61.5)
    assert past_it.next == "backoff"


def test_three_quick_ends_in_a_row_are_a_loop_even_after_a_slow_one_before_them() -> None:
    p = policy(min_uptime=0, burst=100)
    history = [end(1, up=0.1, exit_code=42), end(2, at=1, up=30, exit_code=42)]
    history += [end(3, at=40, up=0.1, exit_code=42), end(4, at=41, up=0.1, exit_code=42)]
    d = p.decide(end(5, at=42, up=0.1, exit_code=42), history, now=T0 + 43)
    assert d.next == "backoff" and d.detail == "3 sessions in a row ended within 1s"


def test_a_session_of_exactly_quick_end_is_not_quick() -> None:
    p = policy(min_uptime=0)
    history = [end(1, up=1.0, exit_code=42), end(2, at=2, up=1.0, exit_code=42)]
    assert p.decide(end(3, at=4, up=1.0, exit_code=42), history, now=T0 + 5).next == "start"


def test_quick_ends_below_a_small_min_uptime_are_named_as_the_loop_they_are() -> None:
    p = policy(min_uptime=0.5, burst=100)
    history = [end(1, up=0.5, exit_code=42), end(2, at=1, up=0.5, exit_code=42)]
    d = p.decide(end(3, at=2, up=0.5, exit_code=42), history, now=T0 + 3)
    assert d.next == "backoff" and d.detail == "3 sessions in a row ended within 1s"


def test_the_stall_count_starts_after_the_last_session_that_changed_the_state() -> None:
    p = policy(stall_sessions=3)
    changed = end(1, exit_code=42)
    one = end(2, at=100, exit_code=42, state_changed=False)
    two = end(3, at=200, exit_code=42, state_changed=False)
    not_yet = p.decide(two, [changed, one], now=T0 + 300)
    assert not_yet == Decision("start", "exit:42", outcome=Outcome.HANDOFF)
    third = end(4, at=300, exit_code=42, state_changed=False)
    stalled = p.decide(third, [changed, one, two], now=T0 + 400)
    assert stalled.next == "stalled"
    assert stalled.detail == "3 sessions in a row left the state dir unchanged"


@pytest.mark.parametrize(
    "earlier",
    [
        {"exit_code": 0},
        {"trigger": "sentinel:done", "action": "stop"},
        {"trigger": "sentinel:limit", "action": "pause", "pause_until": T0 + 10},
        {"exit_code": 0, "refusal": Refusal(1, "make check", "exited with code 2", "", 1, 3)},
    ],
    ids=["a success", "a sentinel stop", "a pause", "a refused completion"],
)
def test_quick_ends_that_were_no_failures_do_not_count_towards_a_later_burst(
    earlier: dict[str, Any],
) -> None:
    p = policy(burst=1, window=600, min_uptime=10)
    history = [end(1, up=0.2, **earlier)]
    d = p.decide(end(2, at=5, up=0.5, exit_code=1), history, now=T0 + 6)
    assert d.next == "backoff", d


def test_a_burst_past_its_limit_fails_even_when_the_sessions_also_stalled() -> None:
    p = policy(burst=1, window=600, stall_sessions=2)
    history = [end(1, exit_code=1, state_changed=False)]
    d = p.decide(end(2, at=100, exit_code=1, state_changed=False), history, now=T0 + 200)
    assert d == Decision(
        "failed", "exit:1", failure=True, detail="2 failures within 600s (burst 1)"
    )
