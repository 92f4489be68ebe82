"""The supervisor in-process: state machine arcs that need a live loop."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from agentd.config.unitfile import load_unit
from agentd.supervisor.api import Supervisor
from agentd.supervisor.briefing import Briefing
from agentd.supervisor.states import State
from tests.support import (
    agentd_popen,
    events,
    fake,
    noted_pid,
    poll_for,
    records,
    run_with,
    states,
    write_unit,
)


def test_stop_during_backoff_cancels_the_restart(home: Path) -> None:
    async def body(sup: Supervisor) -> None:
        svc = sup.get("b")
        svc.start()
        await svc.wait(lambda s: s == State.BACKOFF)
        restart = svc._timer  # the backoff's deadline: the restart it would start
        assert restart is not None
        await sup.stop("b")
        assert svc.state == State.STOPPED
        # Past that deadline (its timer, had it not been cancelled, ran before this
        # sleep's, which is due later on the same loop): nothing started.
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, restart.when() - loop.time()))
        await asyncio.sleep(0)
        assert restart.cancelled() and svc.state == State.STOPPED

    seen = run_with(home, "b", {"command": fake("exit:1"), "restart": {"delay": "100ms"}}, body)
    assert states(seen) == ["starting", "running", "stopping", "backoff", "stopped"]


def test_manual_restart_is_immediate_and_not_a_failure(home: Path, tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"

    async def body(sup: Supervisor) -> None:
        svc = sup.get("r")
        svc.start()
        await svc.wait(lambda s: s == State.RUNNING)
        # session 1 has recorded itself, whole (else the restart could come first)
        await asyncio.to_thread(
            poll_for,
            lambda: rec.exists() and rec.read_text().endswith("\n"),
            what="session 1's record",
        )
        sup.restart("r", "deploy")
        await svc.wait(lambda s: s == State.DONE)

    seen = run_with(
        home,
        "r",
        {
            "command": fake(f"record:{rec}", "if-session:2:exit:0", "wait"),
            "restart": {"min_uptime": "1h"},  # a short session would be a failure, but not manual
        },
        body,
    )
    assert [r["reason"] for r in records(rec)] == ["start", "manual:deploy"]
    assert "backoff" not in states(seen)


def test_pause_sentinel_waits_until_the_reset_time(home: Path, tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"

    async def body(sup: Supervisor) -> None:
        svc = sup.get("p")
        svc.start()
        await svc.wait(lambda s: s == State.PAUSED)
        status = sup.status(["p"])[0]
        assert status["state"] == "paused" and status["paused_until"]
        await svc.wait(lambda s: s == State.DONE)

    seen = run_with(
        home,
        "p",
        {
            "command": fake(
                f"record:{rec}",
                "if-session:2:exit:0",
                # 2 s ahead of when it is written, not of when the test began: a
                # loaded machine may start the agent later than that
                "soon:2:usage limit reached, resets at <epoch>.",
                "wait",
            ),
            "sentinels": [
                {
                    "name": "limit",
                    "action": "pause",
                    "match": r"usage limit reached, resets at (?P<until>\d+)",
                }
            ],
        },
        body,
    )
    got = records(rec)
    assert [r["reason"] for r in got] == ["start", "sentinel:limit"]
    assert states(seen)[:5] == ["starting", "running", "stopping", "paused", "starting"]


def test_notify_command_runs_on_done(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "notified"

    async def body(sup: Supervisor) -> None:
        svc = sup.get("n")
        svc.start()
        await svc.wait(lambda s: s == State.DONE)
        # logged when the command has ended, so its file is written whole
        await asyncio.to_thread(poll_for, lambda: events(home, "unit.notify"), what="unit.notify")

    run_with(
        home,
        "n",
        {
            "command": fake("exit:0"),
            "notify": {
                "command": [
                    sys.executable,
                    "-c",
                    f"open({str(out)!r}, 'w').write('{{unit}} {{event}} {{session}}')",
                ],
                "on": ["done"],
            },
        },
        body,
    )
    assert out.read_text() == "n done 1"
    assert any(
        e.get("notify_event") == "done" and e.get("code") == 0 for e in events(home, "unit.notify")
    )


@pytest.mark.slow
def test_a_session_left_by_a_killed_agentd_is_ended_at_next_start(
    home: Path, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    write_unit(
        home,
        "k",
        {
            "command": fake("orphan", "if-session:2:exit:0", "wait"),
            "env": {"FAKE_PIDS": str(pids)},
            "stop": {"grace": "300ms"},
        },
    )
    proc = agentd_popen(home, "run", "k", stderr=subprocess.DEVNULL)
    try:
        orphan = poll_for(lambda: noted_pid(pids), what="the orphan's pid")
        leader = records(home / "logs" / "k" / "history.jsonl")[0]["pid"]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert psutil.pid_exists(orphan)  # agentd died hard: its session lives on
    pids.unlink()
    from tests.support import agentd

    res = agentd(home, "run", "k")
    assert res.returncode == 0, res.stderr
    poll_for(
        lambda: not psutil.pid_exists(leader) or psutil.Process(leader).status() == "zombie",
        what="the old leader to be gone",
    )
    assert not psutil.pid_exists(orphan) or psutil.Process(orphan).status() == "zombie"
    killed = events(home, "session.orphan_killed")
    assert killed and orphan in killed[0]["pids"] and killed[0]["session"] == 1
    hist = records(home / "logs" / "k" / "history.jsonl")
    assert {"kind": "end", "session": 1, "reason": "agentd-lost"}.items() <= hist[1].items()
    assert hist[2]["session"] == 2  # numbering carries on


def test_daily_session_budget_pauses_until_midnight(home: Path) -> None:
    async def body(sup: Supervisor) -> None:
        svc = sup.get("bud")
        svc.start()
        await svc.wait(lambda s: s == State.PAUSED)
        status = sup.status(["bud"])[0]
        assert status["last_reason"] == "exit:42" and status["paused_until"]
        assert svc.state_reason == "budget:max_sessions_per_day"
        await sup.stop("bud")
        assert svc.state == State.STOPPED

    seen = run_with(
        home,
        "bud",
        {
            "command": fake("exit:42"),
            "restart": {"min_uptime": "0s"},
            "budget": {"max_sessions_per_day": 2},
        },
        body,
    )
    assert sum(1 for e in seen if e["event"] == "session.start") == 2
    [spent] = [e for e in seen if e["event"] == "unit.budget"]
    assert spent["budget"] == "max_sessions_per_day" and spent["used"] == 2
    assert spent["limit"] == 2 and spent["until"]


def test_daily_output_budget_pauses_mid_session(home: Path) -> None:
    async def body(sup: Supervisor) -> None:
        svc = sup.get("out")
        svc.start()
        await svc.wait(lambda s: s == State.PAUSED)
        assert svc.state_reason.startswith("budget:max_output_tokens_per_day")

    seen = run_with(
        home,
        "out",
        {
            "command": fake("spam:500", "wait"),
            "budget": {"max_output_tokens_per_day": 2000},
        },
        body,
    )
    [spent] = [e for e in seen if e["event"] == "unit.budget"]
    assert spent["budget"] == "max_output_tokens_per_day" and spent["used"] >= 2000
    exits = [e for e in seen if e["event"] == "session.exit"]
    assert exits[0]["reason"] == "budget:max_output_tokens_per_day"


def test_sessions_that_leave_the_state_dir_unchanged_stall_and_count_as_restarts(
    home: Path,
    tmp_path: Path,
) -> None:
    """Stall detection through a real service: the state dir's fingerprint is
    taken around each session; session 1 writes state, 2 and 3 do not."""
    rec = tmp_path / "rec.jsonl"

    async def body(sup: Supervisor) -> None:
        svc = sup.get("st")
        svc.start()
        await svc.wait(lambda s: s in (State.STALLED, State.DONE, State.FAILED))
        status = sup.status(["st"])[0]
        assert (status["state"], status["session"], status["restarts"]) == ("stalled", 3, 2)

    seen = run_with(
        home,
        "st",
        {
            "command": fake(f"record:{rec}", 'if-session:1:state:{"schema_version": 1}', "exit:42"),
            "restart": {"min_uptime": "0s", "max_sessions": 5},
            "limits": {"stall_sessions": 2},
        },
        body,
    )
    assert [r["session"] for r in records(rec)] == ["1", "2", "3"]
    assert states(seen)[-1] == "stalled"


def test_a_resize_reaches_the_running_session_and_the_ones_after_it(home: Path) -> None:
    async def body(sup: Supervisor) -> None:
        svc = sup.get("w")
        svc.resize(100, 30)  # nothing runs: the first session starts at that size
        svc.start()
        await svc.wait(lambda s: s == State.RUNNING)
        log = svc.transcript.path
        await asyncio.to_thread(
            poll_for, lambda: "SIZE:100x30" in log.read_text(), what="session 1's size"
        )
        svc.resize(90, 25)
        await svc.wait(lambda s: s == State.DONE)
        text = log.read_text()
        assert "WINCH:90x25" in text and text.count("SIZE:90x25") == 1  # session 2's
        assert (svc.unit.pty.cols, svc.unit.pty.rows) == (90, 25)
        drawn = svc.screen().draw()
        assert drawn.session == 2 and (drawn.cols, len(drawn.rows)) == (90, 25)

    run_with(
        home,
        "w",
        {
            "command": fake("size", "if-session:1:winch", "if-session:1:exit:42", "exit:0"),
            "inject": {"mode": "none"},
            "restart": {"min_uptime": 0},
        },
        body,
    )


def test_a_reload_keeps_the_size_unless_the_file_changes_its_pty(home: Path) -> None:
    path = home / "units" / "w.yaml"

    def size(svc: Any) -> tuple[int, int]:
        return svc.unit.pty.cols, svc.unit.pty.rows

    async def body(sup: Supervisor) -> None:
        svc = sup.get("w")
        sup.resize("w", 100, 30)
        assert (await sup.reconcile({"w": load_unit(path)})).changed == []  # the same file
        assert size(svc) == (100, 30)
        write_unit(home, "w", {"command": fake("wait"), "env": {"X": "1"}})  # not its pty
        assert (await sup.reconcile({"w": load_unit(path)})).changed == ["w"]
        assert size(svc) == (100, 30) and svc.definition.env == {"X": "1"}
        write_unit(home, "w", {"command": fake("wait"), "pty": {"cols": 90, "rows": 20}})
        assert (await sup.reconcile({"w": load_unit(path)})).changed == ["w"]
        assert size(svc) == (90, 20)  # the file's new pty wins over the attached size

    run_with(home, "w", {"command": fake("wait")}, body)


def test_the_quick_end_brake_counts_the_agents_run_not_agentds_work_around_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent that exits 42 at once, on a machine where agentd's own work for each
    session (here the bootstrap) takes over a second: the third quick end in a row is a
    failure all the same. Counted from before the bootstrap, no session looked quick and
    the agent was restarted without end (a slow machine, not a slow agent)."""
    prepare = Briefing.prepare

    async def slow_prepare(self: Briefing, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(1.1)  # QUICK_END is 1 s: alone, more than a quick end
        return await prepare(self, *args, **kwargs)

    monkeypatch.setattr(Briefing, "prepare", slow_prepare)

    async def body(sup: Supervisor) -> None:
        svc = sup.get("q")
        svc.start()
        await svc.wait(lambda s: s == State.BACKOFF)
        assert svc.session_no == 3
        await sup.stop("q")

    seen = run_with(
        home,
        "q",
        {
            # a shell, not the fake agent: it ends in milliseconds however busy the cores
            "command": ["/bin/sh", "-c", "exit 42"],
            "restart": {"min_uptime": 0, "delay": "1h", "burst": 9},
        },
        body,
    )
    assert [e["reason"] for e in seen if e["event"] == "session.exit"] == ["exit:42"] * 3
