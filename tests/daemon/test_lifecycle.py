"""A unit's life across daemon restarts: a unit that finished or that a person
stopped stays so until someone starts it; enable/disable as systemctl's; the
restart count goes on."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentd.supervisor.records.lifecycle import Lifecycle, Remembered, read
from agentd.supervisor.states import State
from tests.support import Served, fake, poll_for, records, write_unit

STOP = {"grace": "300ms"}


def _restart(d: Served, home: Path, serve: list[Served], sig: int = signal.SIGTERM) -> Served:
    assert d.stop(sig) == (0 if sig == signal.SIGTERM else -signal.SIGKILL)  # killed: by it
    again = Served(home)
    serve.append(again.ready())
    return again


@pytest.mark.slow
def test_a_done_and_a_stopped_unit_stay_so_across_a_daemon_restart(
    dhome: Path, serve: list[Served]
) -> None:
    rec_done, rec_run = dhome / "done.jsonl", dhome / "run.jsonl"
    write_unit(
        dhome, "fin", {"command": fake(f"record:{rec_done}", "exit:0"), "state": {"dir": ".fin"}}
    )
    write_unit(dhome, "held", {"command": fake("wait"), "stop": STOP, "state": {"dir": ".held"}})
    write_unit(dhome, "runs", {"command": fake(f"record:{rec_run}", "wait"), "stop": STOP})
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: d.status("fin")["state"] == "done", what="fin done")
    poll_for(lambda: d.status("held")["state"] == "running", what="held running")
    d.result("stop", units=["held"])  # a person stops it
    before = {n: d.status(n) for n in ("fin", "held")}
    poll_for(lambda: records(rec_run), what="runs running")

    for runs, sig in enumerate((signal.SIGTERM, signal.SIGKILL), start=2):  # clean, crash
        d = _restart(d, dhome, serve, sig)
        for name in ("fin", "held"):
            now = d.status(name)
            assert now["state"] == before[name]["state"], name
            assert now["since"] == before[name]["since"] and now["session"] == 1, name
        poll_for(lambda n=runs: len(records(rec_run)) == n, what="runs running again")
    assert len(records(rec_done)) == 1  # the finished work did not run again

    d.result("start", units=["fin"])  # someone starts it: it runs again
    poll_for(lambda: len(records(rec_done)) == 2, what="fin's second run")
    poll_for(lambda: d.status("fin")["state"] == "done", what="fin done again")
    assert d.status("fin")["session"] == 2


@pytest.mark.slow
def test_enable_and_disable_decide_what_starts_with_the_daemon(
    dhome: Path, serve: list[Served]
) -> None:
    write_unit(
        dhome,
        "off",
        {"command": fake("wait"), "autostart": False, "stop": STOP, "state": {"dir": ".off"}},
    )
    write_unit(dhome, "on", {"command": fake("wait"), "stop": STOP})
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: d.status("on")["state"] == "running", what="on running")
    assert d.status("off")["enabled"] is False and d.status("on")["enabled"] is True
    [off] = d.result("enable", units=["off"])
    assert off["enabled"] and off["state"] == "stopped"  # enabled, not started
    [on] = d.result("disable", units=["on"])
    assert not on["enabled"] and on["state"] == "running"  # disabled, not stopped

    d = _restart(d, dhome, serve)
    poll_for(lambda: d.status("off")["state"] == "running", what="the enabled unit to start")
    assert d.status("on")["state"] == "stopped"
    d.result("start", units=["on"])  # a disabled unit starts when asked, and stays disabled
    poll_for(lambda: d.status("on")["state"] == "running", what="on started")
    assert d.status("on")["enabled"] is False

    [stopped] = d.result("disable", units=["off"], now=True)
    assert stopped["state"] == "stopped" and not stopped["enabled"]
    [started] = d.result("enable", units=["off"], now=True)
    assert started["state"] == "running" and started["enabled"]
    assert d.call("enable", units=["nope"])["code"] == 4


@pytest.mark.slow
def test_the_restart_count_survives_a_daemon_restart(dhome: Path, serve: list[Served]) -> None:
    write_unit(dhome, "r", {"command": fake("wait"), "stop": STOP})
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: d.status("r")["state"] == "running", what="r running")
    for _ in range(2):
        d.result("restart", units=["r"])
    assert d.status("r")["restarts"] == 2
    d = _restart(d, dhome, serve)
    poll_for(lambda: d.status("r")["state"] == "running", what="r running again")
    assert d.status("r")["restarts"] == 2 and d.status("r")["session"] == 4


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "[]",
        '{"enabled": "yes", "restarts": -1, "state": "running"}',
        '{"state": "done", "since": "not a time"}',
        '{"restarts": true}',
    ],
)
def test_a_lifecycle_file_that_cannot_be_understood_remembers_nothing(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "u.json"
    path.write_text(text)
    assert read(path) == Remembered()


def test_lifecycle_writes_only_changes_and_reads_them_back(tmp_path: Path) -> None:
    path = tmp_path / "lifecycle" / "u.json"
    life = Lifecycle(path)
    life.update(restarts=0)
    assert not path.exists()  # nothing changed: nothing written
    life.update(enabled=False, state=State.DONE, reason="exit:0", since=1_700_000_000.0, restarts=3)
    assert json.loads(path.read_text())["state"] == "done"
    assert read(path) == Remembered(
        enabled=False, state=State.DONE, reason="exit:0", since=1_700_000_000.0, restarts=3
    )
    assert path.stat().st_mode & 0o777 == 0o600


def test_the_restart_count_is_written_beside_the_loop_and_a_state_after_it_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The restart count, at each session's start: its durable write (fsync) is done
    by another thread, so the loop goes on to the next session meanwhile; a change of
    state written on the loop at once still ends up in the file."""
    path = tmp_path / "lifecycle" / "u.json"
    life = Lifecycle(path)
    syncing: list[int] = []  # the threads that fsync'd
    real = os.fsync

    def fsync(fd: int) -> None:
        syncing.append(threading.get_ident())
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)

    async def session_start() -> int:
        life.update(restarts=1)
        await asyncio.to_thread(
            poll_for, lambda: read(path).restarts == 1, what="the restart count"
        )
        life.update(restarts=2, state=State.DONE, reason="exit:0", since=1_700_000_000.0)
        return threading.get_ident()

    loop_thread = asyncio.run(session_start())
    assert syncing and syncing[0] != loop_thread
    assert read(path).restarts == 2 and read(path).state == State.DONE


@pytest.mark.slow
def test_a_missing_command_is_failed_after_one_attempt_with_the_os_error(
    dhome: Path, serve: list[Served]
) -> None:
    write_unit(
        dhome,
        "gone",
        {"command": ["/nonexistent/agent-cli"], "restart": {"delay": "50ms", "burst": 5}},
    )
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: d.status("gone")["state"] == "failed", what="gone failed")
    status = d.status("gone")
    assert status["session"] == 1 and status["last_reason"] == "spawn-error"
    assert "[Errno 2] No such file or directory" in status["detail"]
    ctl = subprocess.run(
        [sys.executable, "-m", "agentd.cli.agentctl", "history", "gone", "--json"],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, AGENTD_HOME=str(dhome)),
    )
    [row] = json.loads(ctl.stdout)
    assert row["reason"] == "spawn-error" and row["outcome"] == "crashed"
    assert "[Errno 2] No such file or directory" in row["error"]
    table = subprocess.run(
        [sys.executable, "-m", "agentd.cli.agentctl", "status"],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, AGENTD_HOME=str(dhome)),
    ).stdout
    assert "No such file or directory" in table


@pytest.mark.slow
def test_two_units_that_share_a_state_dir_refuse_to_run_at_once(
    dhome: Path, serve: list[Served]
) -> None:
    shared = {"command": fake("wait"), "state": {"dir": ".agent"}, "stop": STOP, "autostart": False}
    write_unit(dhome, "one", shared)
    write_unit(dhome, "two", shared)
    d = Served(dhome)
    serve.append(d.ready())
    d.result("start", units=["one"])
    refused = d.call("start", units=["two"])
    assert refused["code"] == 1 and "is in use by unit one" in refused["error"]
    assert d.status("two")["state"] == "conflict"  # and it waits for the dir
    assert "is in use by unit one" in d.status("two")["detail"]  # status says why
    table = subprocess.run(
        [sys.executable, "-m", "agentd.cli.agentctl", "status", "two"],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, AGENTD_HOME=str(dhome)),
    ).stdout
    assert "is in use by unit one" in table
    d.result("stop", units=["one"])  # the state dir is free again
    [two] = d.result("start", units=["two"])
    assert two["state"] == "running" and "detail" not in two
