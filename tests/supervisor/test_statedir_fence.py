"""The state dir's own lock (``STATE_DIR/.agentd.lock``): what fences a second copy of a
unit run from another AGENTD_HOME or host on a shared volume (a pod rescheduled while
the first lives, a Slurm job started twice), and when it is and is not held."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentd.fileio import Held, hold, release
from tests.support import agentd, events, fake, poll_for, records, write_unit


def _popen(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentd.cli", *args],
        env=dict(os.environ, AGENTD_HOME=str(home)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _end(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return err


def _held_by(lock: Path) -> str | None:
    """The pid that holds ``lock`` (an flock, as another agentd would try it), or None."""
    try:
        fd = hold(lock)
    except Held as held:
        return held.pid
    release(fd)
    return None


@pytest.mark.slow
def test_the_lock_stays_while_the_unit_waits_between_sessions(tmp_path: Path) -> None:
    """A copy in backoff (or paused on a usage limit, for hours) has not let the state dir
    go: its history sits beside it on the shared volume, and it will run again. A second
    copy from another home is refused then too, not only while a session runs."""
    work = tmp_path / "work"
    work.mkdir()
    rec = tmp_path / "rec.jsonl"
    homes = [tmp_path / "a", tmp_path / "b"]
    quick_fail = {"min_uptime": "0s", "delay": "1h", "burst": 9}
    first_unit = {"command": fake(f"record:{rec}", "exit:3"), "restart": quick_fail}
    write_unit(homes[0], "u", {**first_unit, "workdir": str(work)})
    write_unit(homes[1], "u", {"command": fake(f"record:{rec}", "wait"), "workdir": str(work)})
    first = _popen(homes[0], "run", "u")
    try:
        poll_for(
            lambda: [e for e in events(homes[0], "unit.state") if e["to"] == "backoff"],
            what="the first copy in backoff",
        )
        assert _held_by(work / ".agent" / ".agentd.lock") == str(first.pid)
        second = agentd(homes[1], "run", "u")
        assert second.returncode == 1, second.stderr
        assert "is in use by another agentd running it" in second.stderr
        assert len(records(rec)) == 1  # the second ran no session
    finally:
        err = _end(first)
    assert first.returncode == 75, err
    assert _held_by(work / ".agent" / ".agentd.lock") is None  # gone with the run


@pytest.mark.slow
def test_the_lock_is_made_in_the_state_dir_its_first_session_made(home: Path) -> None:
    """No state dir before the first session (a git worktree, a fresh volume): the start
    makes none (``git worktree add`` wants an empty place); the session's dir gets the
    lock, with the holder's pid, unit and host."""
    rec = home / "rec.jsonl"
    write_unit(home, "new", {"command": fake(f"record:{rec}", "wait")})
    state = home / "work" / ".agent"
    assert not state.exists()
    proc = _popen(home, "run", "new")
    try:
        poll_for(lambda: records(rec), what="the first session")
        note = (state / ".agentd.lock").read_text().split()
        assert note == [str(proc.pid), "new", os.uname().nodename]
        assert _held_by(state / ".agentd.lock") == str(proc.pid)
    finally:
        _end(proc)


@pytest.mark.slow
def test_a_state_dir_that_cannot_be_locked_runs_saying_it_is_not_fenced(home: Path) -> None:
    """A filesystem without locks (NFS mounted nolock), a lock that cannot be created: the
    unit runs (its home's lock still keeps this home's units apart), and says once that a
    second agentd elsewhere would not be kept out."""
    rec = home / "rec.jsonl"
    write_unit(
        home,
        "open",
        {
            "command": fake(f"record:{rec}", "exit:3"),
            "restart": {"min_uptime": "0s", "delay": "10ms", "burst": 9},
        },
    )
    state = home / "work" / ".agent"
    state.mkdir(parents=True)
    (state / ".agentd.lock").mkdir()  # opening it for writing fails (EISDIR), even as root
    proc = _popen(home, "run", "open")
    try:
        poll_for(lambda: len(records(rec)) >= 3, what="three sessions")
    finally:
        _end(proc)
    warned = [e for e in events(home, "state.error") if "cannot lock" in e["error"]]
    assert len(warned) == 1, warned  # once, not at every session
    assert "is not kept out" in warned[0]["error"] and warned[0]["level"] == "warning"


@pytest.mark.slow
def test_a_lock_held_elsewhere_is_refused_naming_its_holder_and_host(home: Path) -> None:
    """Another agentd (pid 99999 on node-b) holds the state dir: a run is refused at its
    start, naming it; once that one lets go, the unit runs."""
    rec = home / "rec.jsonl"
    write_unit(home, "late", {"command": fake(f"record:{rec}", "wait")})
    state = home / "work" / ".agent"
    state.mkdir(parents=True)
    other = os.open(state / ".agentd.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.write(other, b"99999 late node-b\n")
        fcntl.flock(other, fcntl.LOCK_EX)
        res = agentd(home, "run", "late")
        assert res.returncode == 1
        assert "in use by another agentd running it (pid 99999 on host node-b)" in res.stderr
        assert not rec.exists()
    finally:
        os.close(other)
    proc = _popen(home, "run", "late")
    try:
        poll_for(lambda: records(rec), what="the session once the other let go")
    finally:
        _end(proc)


def test_the_lock_of_a_state_dir_made_later_is_taken_at_its_session(tmp_path: Path) -> None:
    """``claim`` before the dir exists holds the home's lock only; ``claim_dir`` (before
    each session) takes the dir's once it is there, and refuses while another holds it."""
    from agentd.config.unitfile import load_unit
    from agentd.supervisor.records.locks import StateDirLock

    work = tmp_path / "w"
    work.mkdir()
    unit = load_unit(write_unit(tmp_path, "u", {"command": ["true"], "workdir": str(work)}))
    lock = StateDirLock(tmp_path / "run")
    assert lock.claim(unit) is None
    assert not unit.state_dir.exists()  # the claim made nothing
    unit.state_dir.mkdir()
    other = os.open(unit.state_dir / ".agentd.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.write(other, b"4242 v node-c\n")
        fcntl.flock(other, fcntl.LOCK_EX)
        refused = lock.claim_dir(unit)
        assert refused and "for unit v (pid 4242 on host node-c)" in refused
    finally:
        os.close(other)
    assert lock.claim_dir(unit) is None
    assert _held_by(unit.state_dir / ".agentd.lock") == str(os.getpid())
    lock.release_dir()
    assert _held_by(unit.state_dir / ".agentd.lock") is None
    lock.release()
