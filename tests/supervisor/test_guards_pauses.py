"""Pauses that outlive a daemon, daily budgets mid-session, a lifecycle that cannot
be written, and reclaim that never touches a session another agentd supervises.

In-process (``Supervisor`` on a live loop, as ``test_service`` does), with a
history written as a previous agentd would have left it.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil

from agentd.config.unitfile import load_unit
from agentd.events import EventLog
from agentd.paths import Paths
from agentd.supervisor.api import Supervisor
from agentd.supervisor.records.sessions import SessionRecords
from agentd.supervisor.states import State
from agentd.times import iso
from tests.support import agentd_popen, fake, noted_pid, poll_for, run_with, states, write_unit

STOP = {"grace": "300ms"}


def left_by_an_old_daemon(home: Path, unit: str, *records: dict[str, Any]) -> None:
    """``logs/UNIT/history.jsonl`` as a previous agentd wrote it."""
    path = home / "logs" / unit / "history.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def a_paused_session(until: float) -> tuple[dict[str, Any], ...]:
    """Session 1 hit a usage limit and paused the unit until ``until``."""
    now = time.time()
    return (
        {"kind": "start", "session": 1, "at": iso(now - 120), "reason": "start"},
        {
            "kind": "end",
            "session": 1,
            "at": iso(now - 60),
            "reason": "sentinel:limit",
            "duration_s": 60.0,
        },
        {
            "kind": "outcome",
            "session": 1,
            "outcome": "usage-limited",
            "next": "paused",
            "detail": None,
            "reset_at": iso(until),
        },
    )


# --- a pause a previous agentd left ---------------------------------------------------------


def test_the_daemon_start_keeps_a_pause_an_old_daemon_left(home: Path) -> None:
    until = time.time() + 3600
    left_by_an_old_daemon(home, "p", *a_paused_session(until))

    async def body(sup: Supervisor) -> None:
        sup.start("p", resume_pause=True)  # as the daemon's autostart does
        svc = sup.get("p")
        await svc.wait(lambda s: s == State.PAUSED)
        assert svc.paused_until is not None and abs(svc.paused_until - until) < 2

    seen = run_with(home, "p", {"command": fake("wait"), "stop": STOP}, body)
    assert not [e for e in seen if e["event"] == "session.start"]


def test_an_explicit_start_does_not_honour_an_old_daemons_pause(home: Path) -> None:
    left_by_an_old_daemon(home, "p", *a_paused_session(time.time() + 3600))

    async def body(sup: Supervisor) -> None:
        sup.start("p")  # `agentctl start p`: a person wants it now
        svc = sup.get("p")
        await svc.wait(lambda s: s == State.RUNNING)
        assert svc.paused_until is None

    seen = run_with(home, "p", {"command": fake("wait"), "stop": STOP}, body)
    assert "paused" not in states(seen)


def test_a_pause_that_expired_meanwhile_starts_at_once_never_paused(home: Path) -> None:
    left_by_an_old_daemon(home, "p", *a_paused_session(time.time() - 30))

    async def body(sup: Supervisor) -> None:
        sup.start("p", resume_pause=True)
        await sup.get("p").wait(lambda s: s == State.RUNNING)

    seen = run_with(home, "p", {"command": fake("wait"), "stop": STOP}, body)
    assert states(seen)[:2] == ["starting", "running"] and "paused" not in states(seen)


# --- a daily runtime budget, counted across the day's sessions -------------------------------


def test_the_runtime_budget_ends_a_session_when_the_days_total_reaches_it(home: Path) -> None:
    """3599 s of the 3600 s budget were used by an earlier session today: the
    next one is ended about a second in, not an hour."""
    now = time.time()
    left_by_an_old_daemon(
        home,
        "rt",
        {"kind": "start", "session": 1, "at": iso(now - 5), "reason": "start"},
        {
            "kind": "end",
            "session": 1,
            "at": iso(now - 4),
            "reason": "exit:42",
            "duration_s": 3599.0,
        },
    )

    async def body(sup: Supervisor) -> None:
        svc = sup.get("rt")
        svc.start()
        await svc.wait(lambda s: s == State.RUNNING)
        await svc.wait(lambda s: s == State.PAUSED)  # run_with bounds this wait (20 s)
        assert svc.state_reason == "budget:max_runtime_per_day"

    seen = run_with(
        home,
        "rt",
        {"command": fake("wait"), "stop": STOP, "budget": {"max_runtime_per_day": "1h"}},
        body,
    )
    [spent] = [e for e in seen if e["event"] == "unit.budget"]
    assert spent["budget"] == "max_runtime_per_day"
    [ended] = [e for e in seen if e["event"] == "session.exit"]
    assert ended["reason"] == "budget:max_runtime_per_day"


# --- a lifecycle that cannot be written is reported --------------------------------------


def test_a_lifecycle_that_cannot_be_written_makes_the_daemon_degraded(home: Path) -> None:
    (home / "lifecycle").write_text("a file where agentd keeps a directory\n")
    failing: list[list[dict[str, Any]]] = []

    async def body(sup: Supervisor) -> None:
        svc = sup.get("lc")
        svc.start()
        await svc.wait(lambda s: s == State.DONE)  # a remembered state: written, and failed
        failing.append(sup.degraded())

    seen = run_with(home, "lc", {"command": fake("exit:0")}, body)
    assert [s["what"] for s in failing[0]] == ["lifecycle:lc"]
    assert failing[0][0]["path"] == str(home / "lifecycle" / "lc.json")
    [said] = [e for e in seen if e["event"] == "daemon.degraded"]
    assert said["what"] == "lifecycle:lc"


# --- reclaim: never a session that another agentd supervises ---------------------------------


def test_a_daemon_loading_a_unit_that_agentd_run_supervises_leaves_its_session_alone(
    home: Path, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    unit_file = write_unit(
        home,
        "u",
        {"command": fake("child", "wait"), "env": {"FAKE_PIDS": str(pids)}, "stop": STOP},
    )
    run = agentd_popen(home, "run", "u", stderr=subprocess.DEVNULL)
    try:
        child = poll_for(lambda: noted_pid(pids), what="the session's child")
        paths = Paths.resolve(home)
        poll_for(lambda: SessionRecords(paths.run_sessions).read("u"), what="the session's record")
        refused: list[str | None] = []

        async def main() -> None:
            log = EventLog(paths.events_file)
            sup = Supervisor(paths, log)
            sup.attach()
            try:
                sup.add(load_unit(unit_file))
                svc = sup.get("u")
                await asyncio.wait_for(svc.reclaim(), 20)
                refused.append(svc.start())
            finally:
                await sup.shutdown()
            # a daemon whose file for u is broken ends orphans, not u's live session
            other = Supervisor(paths, log)
            other.attach()
            other.reclaim_orphans()
            await other.shutdown()
            log.close()

        asyncio.run(main())
        assert psutil.Process(child).status() != psutil.STATUS_ZOMBIE  # still alive
        assert run.poll() is None
        assert refused[0] is not None and "already supervised by another agentd" in refused[0]
    finally:
        run.send_signal(signal.SIGTERM)
        run.wait(30)
    poll_for(lambda: not psutil.pid_exists(child), what="agentd run to end its session")
