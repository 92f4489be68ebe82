"""RestartPolicy.decide from tables: pure, no clock, no processes."""

from __future__ import annotations

import signal

import pytest

from agentd.config.sections import Limits, RestartSpec
from agentd.supervisor.policy import RestartPolicy, SessionEnd


def policy(**restart: object) -> RestartPolicy:
    limits = {k: restart.pop(k) for k in list(restart) if k in Limits.model_fields}
    return RestartPolicy(RestartSpec(**restart), Limits(**limits))


def end(n: int = 1, *, t0: float = 0.0, up: float = 60.0, **kw: object) -> SessionEnd:
    return SessionEnd(session=n, started_at=t0, ended_at=t0 + up, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "next_", "reason", "failure"),
    [
        ({"exit_code": 42}, "start", "exit:42", False),
        ({"exit_code": 0}, "done", "exit:0", False),
        ({"exit_code": 1}, "backoff", "exit:1", True),
        ({"signal": signal.SIGKILL}, "backoff", "signal:KILL", True),
        ({"trigger": "sentinel:compaction", "signal": 15}, "start", "sentinel:compaction", False),
        ({"trigger": "timeout", "signal": 15}, "start", "timeout", False),
        ({"trigger": "idle"}, "start", "idle", False),
        ({"trigger": "context"}, "start", "context", False),
        ({"trigger": "manual"}, "start", "manual", False),
        ({"trigger": "manual", "action": "stop"}, "stopped", "manual", False),
        ({"trigger": "sentinel:done", "action": "stop"}, "stopped", "sentinel:done", False),
        (
            {"trigger": "sentinel:limit", "action": "pause", "pause_until": 99.0},
            "paused",
            "sentinel:limit",
            False,
        ),
        ({"spawn_error": "[Errno 2] No such file"}, "failed", "spawn-error", True),
        (
            {"spawn_error": "[Errno 11] try again", "spawn_retry": True},
            "backoff",
            "spawn-error",
            True,
        ),
        # exit 0 after a sentinel asked for a restart is a hand-over, not "done"
        ({"trigger": "sentinel:compaction", "exit_code": 0}, "start", "sentinel:compaction", False),
        # the state says the mission is complete: done, whatever ended the session
        ({"exit_code": 143, "complete": "all ported"}, "done", "complete", False),
        ({"exit_code": 0, "complete": "all ported"}, "done", "complete", False),
        ({"signal": signal.SIGTERM, "complete": "x"}, "done", "complete", False),
        ({"trigger": "sentinel:compaction", "complete": "x"}, "done", "complete", False),
        (
            {"trigger": "sentinel:limit", "action": "pause", "complete": "x"},
            "done",
            "complete",
            False,
        ),
        ({"trigger": "manual", "action": "stop", "complete": "x"}, "stopped", "manual", False),
    ],
)
def test_classification(kw: dict[str, object], next_: str, reason: str, failure: bool) -> None:
    d = policy().decide(end(**kw), [], now=60.0)
    assert (d.next, d.reason, d.failure) == (next_, reason, failure)


def test_complete_says_why_and_is_no_failure_in_a_burst() -> None:
    d = policy(burst=0).decide(end(exit_code=1, complete="ported all 12 modules"), [], now=60.0)
    assert (d.next, d.outcome, d.detail) == (
        "done",
        "done",
        "mission complete: ported all 12 modules",
    )
    assert not policy().is_failure(end(exit_code=1, complete="x"))


def test_short_handoff_counts_as_failure_and_backs_off() -> None:
    d = policy(min_uptime=10).decide(end(exit_code=42, up=2.0), [], now=2.0)
    assert d.next == "backoff" and d.failure and d.delay == 1.0
    assert "min_uptime" in d.detail


def test_short_success_is_still_done() -> None:
    assert policy(min_uptime=10).decide(end(exit_code=0, up=0.1), [], now=1).next == "done"


def test_backoff_doubles_and_caps() -> None:
    p = policy(delay=1, max_delay=5, burst=100)
    history: list[SessionEnd] = []
    delays = []
    for i in range(6):
        e = end(i + 1, t0=i * 10.0, up=1.0, exit_code=1)
        d = p.decide(e, history, now=e.ended_at)
        delays.append(d.delay)
        history.append(e)
    assert delays == [1, 2, 4, 5, 5, 5]


def test_success_resets_the_backoff() -> None:
    p = policy(delay=1, burst=100)
    history = [end(1, exit_code=1), end(2, exit_code=42, t0=100), end(3, exit_code=1, t0=200)]
    d = p.decide(end(4, exit_code=1, t0=300), history, now=360)
    assert d.delay == 2  # one failure before this one in a row, not three


@pytest.mark.parametrize("burst", [1, 3, 5])
def test_the_burst_boundary_is_n_failures_allowed_and_n_plus_1_failed(burst: int) -> None:
    p = policy(burst=burst, window=600, delay=1, max_delay=1)
    history: list[SessionEnd] = []
    for n in range(1, burst + 2):
        e = end(n, t0=n * 10.0, up=1, exit_code=1)
        d = p.decide(e, history, now=e.ended_at)
        history.append(e)
        # failures 1..N back off; failure N+1 within the window is one too many
        assert d.next == ("failed" if n == burst + 1 else "backoff"), (n, d)
    assert f"{burst + 1} failures" in d.detail


def test_burst_within_window_fails() -> None:
    p = policy(burst=3, window=600)
    history = [end(i, t0=i * 10.0, up=1, exit_code=1) for i in range(1, 4)]
    d = p.decide(end(4, t0=40, up=1, exit_code=1), history, now=41)
    assert d.next == "failed" and "4 failures" in d.detail


def test_failures_outside_window_do_not_count() -> None:
    p = policy(burst=3, window=60)
    history = [end(i, t0=i * 10.0, up=1, exit_code=1) for i in range(1, 4)]
    d = p.decide(end(4, t0=1000, up=1, exit_code=1), history, now=1001)
    assert d.next == "backoff"


def test_on_failure_off_fails_at_once() -> None:
    d = policy(on_failure=False).decide(end(exit_code=3), [], now=60)
    assert d.next == "failed"


def test_max_sessions_stops_restarting() -> None:
    p = policy(max_sessions=2)
    assert p.decide(end(1, exit_code=42), [], now=60).next == "start"
    d = p.decide(end(2, exit_code=42), [end(1, exit_code=42)], now=120)
    assert d.next == "failed" and "max_sessions" in d.detail


def test_stall_after_unchanged_sessions() -> None:
    p = policy(stall_sessions=3)
    hist = [end(1, exit_code=42, state_changed=False), end(2, exit_code=42, state_changed=False)]
    d = p.decide(end(3, exit_code=42, state_changed=False), hist, now=200)
    assert d.next == "stalled"
    assert p.decide(end(3, exit_code=42, state_changed=True), hist, now=200).next == "start"


def test_manual_restart_with_reason_is_not_a_failure() -> None:
    d = policy(min_uptime=10).decide(end(trigger="manual:deploy", up=0.5), [], now=1)
    assert d.next == "start" and not d.failure


@pytest.mark.parametrize(
    ("trigger", "outcome"),
    [
        ("sentinel:compaction", "context"),
        ("sentinel:context-limit", "context"),
        ("sentinel:handoff", "handoff"),
        ("context", "context"),
        ("idle", "idle"),
    ],
)
def test_outcomes(trigger: str, outcome: str) -> None:
    assert policy().decide(end(trigger=trigger), [], now=60).outcome == outcome


def test_a_command_that_cannot_be_executed_fails_at_once_with_the_os_error() -> None:
    d = policy(burst=100).decide(
        end(spawn_error="cannot start 'x': [Errno 8] Exec format error", up=0.0), [], now=1
    )
    assert d.next == "failed" and d.delay == 0 and "Exec format error" in d.detail


def test_the_brake_holds_with_min_uptime_0() -> None:
    """Sessions that each end at once are a loop, whatever min_uptime says: the third
    quick one in a row backs off, the delays grow, and the burst ends it."""
    p = policy(min_uptime=0, delay=1, max_delay=60, burst=3, window=600)
    history: list[SessionEnd] = []
    nexts, delays = [], []
    for i in range(8):
        e = end(i + 1, t0=i * 2.0, up=0.05, trigger="sentinel:empty")
        d = p.decide(e, history, now=e.ended_at)
        nexts.append(d.next)
        delays.append(d.delay)
        history.append(e)
        if d.next == "failed":
            break
    assert nexts == ["start", "start", "backoff", "backoff", "backoff", "failed"]
    assert delays[2:5] == [1, 2, 4]
    assert (
        "in a row ended within 1s"
        in p.decide(end(9, up=0.1, exit_code=42), history[-2:], now=20).detail
    )


def test_quick_ends_with_a_slow_one_between_are_no_loop() -> None:
    p = policy(min_uptime=0)
    history = [end(1, up=0.1, exit_code=42), end(2, up=5.0, exit_code=42, t0=1)]
    assert p.decide(end(3, up=0.1, exit_code=42, t0=7), history, now=8).next == "start"
