"""`agentd run` inside a job (a Kubernetes pod, a Slurm batch script): its exit status,
the lifecycle `interrupted` after a signal and the next run carrying on, a `done` unit
not run again, the termination message, the state-dir lock fencing a second copy."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentd import exitcodes
from agentd.cli.agentd import termination
from agentd.supervisor.records.history import History
from agentd.supervisor.records.lifecycle import Lifecycle
from agentd.supervisor.states import State
from tests.support import Served, agentd, events, fake, poll_for, records, write_unit

QUICK = {"min_uptime": "0s", "delay": "50ms", "max_delay": "200ms"}


def _lifecycle(home: Path, unit: str) -> dict[str, object]:
    return dict(json.loads((home / "lifecycle" / f"{unit}.json").read_text()))


def _popen(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentd.cli", *args],
        env=dict(os.environ, AGENTD_HOME=str(home), **(env or {})),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _end(proc: subprocess.Popen[str], timeout: float = 20) -> str:
    try:
        _, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return err


def _ending(path: Path) -> dict[str, object]:
    lines = path.read_text().splitlines()
    assert len(lines) == 1, lines  # one line, the last run's (replaced, not appended)
    return dict(json.loads(lines[0]))


@pytest.mark.slow
def test_sigterm_interrupts_and_the_next_run_carries_on(home: Path, tmp_path: Path) -> None:
    """An eviction: SIGTERM mid-session -> graceful stop, lifecycle `interrupted`, exit 75;
    the next run resumes at the saved step, its session numbers carrying on."""
    rec, end = tmp_path / "rec.jsonl", tmp_path / "termination-log"
    step = '{"schema_version": 1, "mission": "m", "next_action": "STEP-%d"}'
    write_unit(
        home,
        "ev",
        {
            "command": fake(
                f"record:{rec}",
                f"if-session:1:state:{step % 2}",
                "if-session:1:exit:42",
                f"if-session:2:state:{step % 3}",
                "if-session:2:out:waiting",
                "if-session:2:wait",
                "exit:0",
            ),
            "restart": QUICK,
        },
    )
    env = {"AGENTD_TERMINATION_LOG": str(end)}
    proc = _popen(home, "run", "ev", env=env)
    try:
        state = home / "work" / ".agent" / "state.json"
        poll_for(lambda: state.exists() and "STEP-3" in state.read_text(), what="session 2's step")
        proc.send_signal(signal.SIGTERM)
    finally:
        err = _end(proc)
    assert proc.returncode == exitcodes.INTERRUPTED, err
    assert "ev interrupted after 2 session(s)" in err and "run it again to carry on" in err
    kept = _lifecycle(home, "ev")
    assert kept["state"] == "interrupted" and kept["reason"] == "interrupted:SIGTERM", kept
    assert _ending(end) == {
        "unit": "ev",
        "state": "interrupted",
        "reason": "interrupted:SIGTERM",
        "sessions": 2,
        "restarts": 1,
        "exit_code": 75,
    }
    ended = [r for r in records(home / "logs" / "ev" / "history.jsonl") if r["kind"] == "end"]
    assert ended[-1]["reason"] == "interrupted:SIGTERM"

    res = agentd(home, "run", "ev", env=env)  # the replacement pod
    assert res.returncode == 0, res.stderr
    third = records(rec)[2]
    assert third["session"] == "3" and third["reason"] == "interrupted:SIGTERM"
    assert "STEP-3" in third["bootstrap"]  # resumed at the step session 2 saved
    assert _lifecycle(home, "ev")["state"] == "done"
    assert _ending(end)["state"] == "done" and _ending(end)["exit_code"] == 0


@pytest.mark.slow
def test_a_done_unit_is_not_run_again_unless_again(home: Path, tmp_path: Path) -> None:
    rec, end = tmp_path / "rec.jsonl", tmp_path / "end"
    write_unit(home, "fin", {"command": fake(f"record:{rec}", "exit:0")})
    env = {"AGENTD_TERMINATION_LOG": str(end)}
    assert agentd(home, "run", "fin", env=env).returncode == 0
    starts = len(events(home, "session.start"))

    res = agentd(home, "run", "fin", env=env)  # a pod recreated after the unit finished
    assert res.returncode == 0, res.stderr
    assert "fin is done already" in res.stderr and "--again" in res.stderr
    assert len(records(rec)) == 1 and len(events(home, "session.start")) == starts
    assert _ending(end) == {
        "unit": "fin",
        "state": "done",
        "reason": "exit:0",
        "sessions": 1,
        "restarts": 0,
        "exit_code": 0,
    }

    res = agentd(home, "run", "--again", "fin", env=env)
    assert res.returncode == 0, res.stderr
    assert [r["session"] for r in records(rec)] == ["1", "2"]


@pytest.mark.parametrize(
    ("unit", "code", "state", "reason"),
    [
        ({"command": fake("exit:3"), "restart": {"on_failure": False}}, 1, "failed", "exit:3"),
        (
            {"command": fake("exit:42"), "restart": QUICK, "limits": {"stall_sessions": 2}},
            1,
            "stalled",
            "exit:42",
        ),
        ({"command": ["/nonexistent/agent-cli"]}, 78, "failed", "spawn-error"),
    ],
    ids=["failed", "stalled", "command-cannot-run"],
)
def test_the_exit_status_and_the_termination_message_say_how_it_ended(
    home: Path, tmp_path: Path, unit: dict[str, object], code: int, state: str, reason: str
) -> None:
    end = tmp_path / "end"
    write_unit(home, "u", unit)
    res = agentd(home, "run", "u", env={"AGENTD_TERMINATION_LOG": str(end)})
    assert res.returncode == code, res.stderr
    got = _ending(end)
    assert (got["unit"], got["state"], got["exit_code"]) == ("u", state, code), got
    assert str(got["reason"]).startswith(reason), got


@pytest.mark.slow
def test_a_unit_that_does_not_load_exits_78_saying_why(home: Path, tmp_path: Path) -> None:
    end = tmp_path / "end"
    path = write_unit(home, "bad", {"command": fake("exit:0"), "restart": {"dealy": "1s"}})
    res = agentd(home, "run", "bad", env={"AGENTD_TERMINATION_LOG": str(end)})
    assert res.returncode == exitcodes.CONFIG
    assert "restart.dealy: unknown key" in res.stderr
    got = _ending(end)
    assert (got["unit"], got["state"], got["exit_code"]) == ("bad", "invalid", 78)
    assert "restart.dealy" in str(got["message"]) and str(path) in str(got["message"])
    missing = agentd(home, "run", "nosuch", env={"AGENTD_TERMINATION_LOG": str(end)})
    assert missing.returncode == 78 and "no unit named nosuch" in missing.stderr


@pytest.mark.slow
def test_a_signal_while_waiting_between_sessions_interrupts_too(home: Path) -> None:
    """In backoff (or a pause) no session runs: the unit is interrupted at once."""
    write_unit(
        home,
        "wait",
        {"command": fake("exit:3"), "restart": {"min_uptime": "0s", "delay": "1h", "burst": 9}},
    )
    proc = _popen(home, "run", "wait")
    try:
        poll_for(
            lambda: [e for e in events(home, "unit.state") if e["to"] == "backoff"],
            what="the backoff",
        )
        proc.send_signal(signal.SIGHUP)
    finally:
        err = _end(proc)
    assert proc.returncode == 75, err
    kept = _lifecycle(home, "wait")
    assert (kept["state"], kept["reason"]) == ("interrupted", "interrupted:SIGHUP")


@pytest.mark.slow
def test_carrying_on_after_an_interruption_keeps_a_usage_limit_pause(
    home: Path, tmp_path: Path
) -> None:
    """Evicted while paused until a usage limit resets: the next pod waits for the reset
    too, instead of starting a session that hits the limit again."""
    rec = tmp_path / "rec.jsonl"
    until = int(time.time()) + 3600
    write_unit(
        home,
        "lim",
        {
            "command": fake(
                f"record:{rec}", f"out:usage limit reached, resets at {until}.", "wait"
            ),
            "sentinels": [
                {"name": "limit", "action": "pause", "match": r"resets at (?P<until>\d+)"}
            ],
            "stop": {"grace": "1s"},
        },
    )
    for run in (1, 2):
        proc = _popen(home, "run", "lim")
        try:
            poll_for(
                lambda r=run: [e for e in events(home, "unit.state") if e["to"] == "paused"][
                    r - 1 :
                ],
                what=f"run {run} paused",
            )
            proc.send_signal(signal.SIGTERM)
        finally:
            err = _end(proc)
        assert proc.returncode == 75, err
    assert len(records(rec)) == 1  # no session in the second run: it went on waiting
    paused = [e for e in events(home, "unit.state") if e["to"] == "paused"]
    assert paused[-1]["detail"] == "paused before agentd restarted"


@pytest.mark.slow
def test_an_interrupted_unit_starts_again_with_the_daemon(dhome: Path, serve: list[Served]) -> None:
    """`interrupted` is not a person's stop: the daemon starts the unit as it would one
    it left running (a `stopped` unit stays stopped: tests/daemon/test_lifecycle.py)."""
    rec = dhome / "rec.jsonl"
    write_unit(dhome, "ev", {"command": fake(f"record:{rec}", "wait"), "stop": {"grace": "1s"}})
    proc = _popen(dhome, "run", "ev")
    try:
        poll_for(lambda: records(rec), what="session 1")
        proc.send_signal(signal.SIGTERM)
    finally:
        _end(proc)
    assert proc.returncode == 75
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: len(records(rec)) == 2, what="session 2 under the daemon")
    second = records(rec)[1]
    assert second["session"] == "2" and second["reason"] == "interrupted:SIGTERM"
    assert d.status("ev")["state"] == "running"


@pytest.mark.slow
def test_the_state_dir_lock_refuses_a_second_copy_from_another_home(tmp_path: Path) -> None:
    """Two pods (or Slurm jobs) on one shared volume: each its own AGENTD_HOME, one state
    dir. The second copy is refused while the first lives, and runs once it is gone."""
    work = tmp_path / "shared-work"
    work.mkdir()
    rec = tmp_path / "rec.jsonl"
    homes = [tmp_path / "a", tmp_path / "b"]
    for h in homes:
        write_unit(h, "twin", {"command": fake(f"record:{rec}", "wait"), "workdir": str(work)})
    first = _popen(homes[0], "run", "twin")
    try:
        poll_for(lambda: records(rec), what="the first copy's session")
        second = agentd(homes[1], "run", "twin")
        assert second.returncode == 1
        said = f"its state dir {work / '.agent'} is in use by another agentd running it"
        assert said in second.stderr, second.stderr
        assert f"pid {first.pid}" in second.stderr, second.stderr
        assert len(records(rec)) == 1 and first.poll() is None  # the first goes on
        lock = (work / ".agent" / ".agentd.lock").read_text()
        assert lock.split() == [str(first.pid), "twin", os.uname().nodename]
    finally:
        first.send_signal(signal.SIGTERM)
        _end(first)
    again = _popen(homes[1], "run", "twin")
    try:
        poll_for(lambda: len(records(rec)) == 2, what="the second copy's session")
    finally:
        again.send_signal(signal.SIGTERM)
        _end(again)
    assert again.returncode == 75


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root")
def test_a_copy_on_another_host_is_named_by_its_host(home: Path, tmp_path: Path) -> None:
    """The refusal names the holder's host (a UTS namespace stands in for a second host:
    the kernel and its flock are the same, so this shows the message, not NFS locking)."""
    rec = tmp_path / "rec.jsonl"
    write_unit(home, "far", {"command": fake(f"record:{rec}", "wait")})
    other = tmp_path / "other"
    write_unit(other, "far", {"command": fake("exit:0"), "workdir": str(home / "work")})
    first = _popen(home, "run", "far")
    try:
        poll_for(lambda: records(rec), what="the first copy's session")
        script = f"hostname node-b && exec {sys.executable} -m agentd.cli run far"
        second = subprocess.run(
            ["unshare", "--uts", "sh", "-c", script],
            env=dict(os.environ, AGENTD_HOME=str(other)),
            capture_output=True,
            text=True,
            timeout=30,
        )
        if "unshare failed" in second.stderr:
            pytest.skip(f"no UTS namespace here: {second.stderr.strip()}")
        assert second.returncode == 1, second.stderr
        assert f"pid {first.pid} on host {os.uname().nodename}" in second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        _end(first)


def test_history_records_are_fsynced_as_they_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pod evicted with 0 s of grace: what was appended must be on the disk already."""
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    history = History(tmp_path / "logs" / "u" / "history.jsonl")
    history.append({"kind": "start", "session": 1})
    history.append({"kind": "end", "session": 1})
    path = str(history.path)
    assert synced.count(path) == 2  # each record
    assert str(history.path.parent) in synced  # the new file's name, once

    synced.clear()
    life = Lifecycle(tmp_path / "lifecycle" / "u.json")
    life.update(restarts=1)  # the restart count alone, at a session's start
    life.update(state=State.INTERRUPTED, reason="interrupted:SIGTERM", since=time.time())
    assert sum(1 for p in synced if p.startswith(str(tmp_path / "lifecycle") + "/.u.json")) == 2


class FsyncedPaths(list[str]):
    """Stands in for ``os.fsync``: notes the path of each fd it is given, then fsyncs it."""

    def __init__(self, real: Callable[[int], None]) -> None:
        super().__init__()
        self._real = real

    def __call__(self, fd: int) -> None:
        self.append(os.readlink(f"/proc/self/fd/{fd}"))
        self._real(fd)


def test_a_session_end_is_fsynced_with_its_outcome_or_by_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``end`` of a session and its ``outcome`` come within milliseconds, on the way
    to the next session: one fsync makes both durable. Each is written at once (a
    ``kill -9`` of agentd loses neither)."""
    history = History(tmp_path / "logs" / "u" / "history.jsonl")
    history.append({"kind": "start", "session": 1})
    synced = FsyncedPaths(os.fsync)
    monkeypatch.setattr(os, "fsync", synced)
    history.append({"kind": "end", "session": 1}, durable=False)
    assert synced == [] and [r["kind"] for r in history.recent()] == ["start", "end"]
    history.append({"kind": "outcome", "session": 1})
    assert synced == [str(history.path)]
    history.sync()  # nothing left to make durable
    assert synced == [str(history.path)]
    history.append({"kind": "end", "session": 2}, durable=False)
    history.sync()
    assert synced == [str(history.path)] * 2


def test_the_termination_message_goes_where_asked_or_nowhere(tmp_path: Path) -> None:
    ending = termination.Ending("u", "failed", "exit:3", 4, 3, 1, "x" * 5000)
    path = tmp_path / "t"
    assert termination.target({"AGENTD_TERMINATION_LOG": str(path)}) == path
    if not os.access("/dev/termination-log", os.W_OK):  # not in a Kubernetes container
        assert termination.target({}) is None
        assert termination.write(ending, {}) is None
    path.write_text("an older, longer message\n" * 10)
    assert termination.write(ending, {"AGENTD_TERMINATION_LOG": str(path)}) is None
    line = path.read_text()
    assert line.count("\n") == 1 and len(line.encode()) < termination.LIMIT
    assert json.loads(line)["message"].endswith("…")
    problem = termination.write(ending, {"AGENTD_TERMINATION_LOG": str(tmp_path / "no" / "t")})
    assert problem is not None and "cannot write the termination message" in problem
