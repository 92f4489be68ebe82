"""Every way back to a session counts toward the brake on quick ends: a usage-limit
reset time already in the past is a restart at once, and braked like one (issue 27)."""

from __future__ import annotations

from pathlib import Path

from agentd.config.sections import Limits, RestartSpec
from agentd.supervisor.policy import QUICK_IN_A_ROW, RestartPolicy, SessionEnd
from tests.support import agentd, events, fake, records, write_unit


def policy(**restart: object) -> RestartPolicy:
    return RestartPolicy(RestartSpec(**restart), Limits())  # type: ignore[arg-type]


def paused(n: int, *, left: float, up: float = 0.05) -> SessionEnd:
    """Session ``n`` ended at once by a pause sentinel whose reset is ``left`` s away."""
    return SessionEnd(
        session=n,
        started_at=10.0 * n,
        ended_at=10.0 * n + up,
        trigger="sentinel:limit",  # type: ignore[arg-type]
        action="pause",
        pause_until=1000.0 + left,
        pause_left=left,
    )


def test_a_reset_in_the_past_is_a_quick_restart_and_the_brake_holds() -> None:
    rule = policy(min_uptime=0, burst=3, delay=1, max_delay=60)
    ends: list[SessionEnd] = []
    seen = []
    for n in range(1, 10):
        decision = rule.decide(paused(n, left=-3600.0), ends, now=10.0 * n + 0.05)
        seen.append(decision.next)
        if decision.next != "start":
            break
        ends.append(paused(n, left=-3600.0))
    # the first ones start again at once, the QUICK_IN_A_ROW-th backs off: a loop, not a pause
    assert seen == ["start"] * (QUICK_IN_A_ROW - 1) + ["backoff"]


def test_min_uptime_holds_for_a_pause_that_waits_for_nothing() -> None:
    decision = policy(min_uptime=10).decide(paused(1, left=0.0), [], now=10.05)
    assert (decision.next, decision.failure) == ("backoff", True)
    assert decision.reason == "sentinel:limit"


def test_a_real_pause_is_still_a_pause() -> None:
    quick = [paused(n, left=3600.0) for n in range(1, 6)]
    decision = policy(min_uptime=10).decide(paused(6, left=3600.0), quick, now=60.05)
    assert (decision.next, decision.failure, decision.until) == ("paused", False, 4600.0)


def test_a_stale_epoch_from_the_claude_code_preset_ends_failed(home: Path) -> None:
    """The shipped preset's `usage limit reached|EPOCH` with an epoch long gone: before,
    227 sessions in 20 s, forever; now the brake ends the unit after a few."""
    write_unit(
        home,
        "stale",
        {
            "preset": "claude-code",
            "command": fake("out:Claude AI usage limit reached|1000000000", "wait"),
            "inject": {"mode": "none"},
            "restart": {"delay": "50ms", "max_delay": "100ms", "burst": 2, "window": "10m"},
        },
    )
    done = agentd(home, "run", "stale", timeout=30)
    assert done.returncode == 1, done.stderr
    starts = [r for r in records(home / "logs" / "stale" / "history.jsonl") if r["kind"] == "start"]
    assert 2 <= len(starts) <= 2 + QUICK_IN_A_ROW, len(starts)
    last = events(home, "unit.state")[-1]
    assert (last["to"], last["reason"]) == ("failed", "sentinel:usage-limit-epoch")
