"""Ending a session's process tree, with real processes (SPEC section 5)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import psutil
import pytest

from agentd.process import ending as ending_module
from agentd.process import table as proctable
from agentd.process.ending import EndResult, OnSignal, end_session_tree
from agentd.process.tree import (
    MARKER_VAR,
    find_session_processes,
    order_bottom_up,
    session_env_marker,
)
from tests.support import FAKE_AGENT, fake, gone, poll_for

REPO = Path(__file__).resolve().parents[2]


class Started(NamedTuple):
    proc: subprocess.Popen[bytes]
    marker: str
    pids_file: Path  # helpers (fake_agent child/orphan) append their pids here


Spawn = Callable[..., Started]


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Spawn]:
    """Start ``argv`` as a session leader carrying a fresh marker; kill all of it afterwards."""
    started: list[Started] = []

    def start(argv: list[str], unit: str = "u") -> Started:
        marker = session_env_marker(unit, len(started) + 1)
        pids_file = tmp_path / f"pids-{len(started)}"
        env = {**os.environ, MARKER_VAR: marker, "FAKE_PIDS": str(pids_file)}
        proc = subprocess.Popen(
            argv,
            env=env,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        started.append(Started(proc, marker, pids_file))
        return started[-1]

    yield start
    # Independent of the code under test: kill every pid we know of, reap our own.
    for s in started:
        for pid in [s.proc.pid, *_read_pids(s.pids_file)]:
            _kill_marked(pid, s.marker)
        s.proc.wait(timeout=10)


def _kill_marked(pid: int, marker: str) -> None:
    """SIGKILL ``pid`` if it still carries ``marker`` (so never a reused pid)."""
    try:
        if psutil.Process(pid).environ().get(MARKER_VAR) == marker:
            os.kill(pid, signal.SIGKILL)
    except (psutil.Error, ProcessLookupError):
        pass  # gone already (or a zombie)


def _read_pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _wait_pids(path: Path, n: int) -> list[int]:
    def probe() -> list[int] | None:
        pids = _read_pids(path)
        return pids if len(pids) >= n else None

    return poll_for(probe, what=f"{n} pids in {path.name}")


def _end(
    marker: str,
    *,
    leader: int | None,
    sid: int | None,
    grace: float,
    on_signal: OnSignal | None = None,
) -> EndResult:
    """end_session_tree with SIGTERM, run to completion on a fresh loop."""
    coro = end_session_tree(
        leader=leader, marker=marker, sid=sid, sig=signal.SIGTERM, grace=grace, on_signal=on_signal
    )
    return asyncio.run(coro)


def test_child_ignoring_sigterm_is_killed_after_grace(spawn: Spawn) -> None:
    leader, marker, pids_file = spawn(fake("child", "wait"))
    [child] = _wait_pids(pids_file, 1)  # written after the child ignores SIGTERM
    batches: list[tuple[int, list[int]]] = []

    result = _end(
        marker,
        leader=leader.pid,
        sid=leader.pid,
        grace=0.5,
        on_signal=lambda sig, pids: batches.append((sig, pids)),
    )

    assert leader.wait(timeout=10) == -signal.SIGTERM
    assert {leader.pid, child} <= set(result.signalled)
    assert child in result.killed and leader.pid not in result.killed
    assert result.survivors == []
    assert gone(child)
    assert batches[0][0] == signal.SIGTERM and set(batches[0][1]) == {leader.pid, child}
    assert any(sig == signal.SIGKILL and child in pids for sig, pids in batches)


def test_order_bottom_up_puts_children_before_parents(spawn: Spawn) -> None:
    leader, marker, pids_file = spawn(fake("child", "wait"))
    [child] = _wait_pids(pids_file, 1)

    found = find_session_processes(leader=leader.pid, marker=marker, sid=leader.pid)
    order = [p.pid for p in order_bottom_up(found)]

    assert set(order) == {leader.pid, child}
    assert order.index(child) < order.index(leader.pid)


def test_double_forked_setsid_orphan_is_found_by_marker_and_ended(spawn: Spawn) -> None:
    leader, marker, pids_file = spawn(fake("orphan"))  # the leader exits after the double fork
    assert leader.wait(timeout=10) == 0
    [orphan] = _wait_pids(pids_file, 1)
    assert os.getsid(orphan) not in (leader.pid, os.getsid(0))  # left the session...
    assert psutil.Process(orphan).ppid() != leader.pid  # ...and the tree

    # Neither the (reaped) leader nor its session can lead there: only the marker.
    found = find_session_processes(leader=None, marker=marker, sid=None)
    assert [p.pid for p in found] == [orphan]

    result = _end(marker, leader=None, sid=None, grace=0.3)

    assert result.killed == [orphan] and result.survivors == []
    assert gone(orphan)


def test_process_exiting_on_sigterm_is_not_sigkilled(spawn: Spawn) -> None:
    leader, marker, _ = spawn(fake("wait"))
    poll_for(lambda: find_session_processes(leader=None, marker=marker, sid=None), what="marker")

    result = _end(marker, leader=leader.pid, sid=leader.pid, grace=20.0)

    assert result.signalled == [leader.pid]
    assert result.killed == [] and result.survivors == []
    assert leader.wait(timeout=10) == -signal.SIGTERM


def test_stopped_process_gets_sigcont_and_acts_on_sigterm(spawn: Spawn) -> None:
    leader, marker, _ = spawn(fake("wait"))
    os.kill(leader.pid, signal.SIGSTOP)  # as ^Z in the pty would
    poll_for(lambda: psutil.Process(leader.pid).status() == psutil.STATUS_STOPPED, what="stop")

    result = _end(marker, leader=leader.pid, sid=leader.pid, grace=20.0)

    assert result.killed == [] and result.survivors == []
    assert leader.wait(timeout=10) == -signal.SIGTERM


def test_cancelled_ending_still_kills_what_it_found(spawn: Spawn) -> None:
    leader, marker, pids_file = spawn(fake("ignore-term", "child", "wait"))
    [child] = _wait_pids(pids_file, 1)

    async def cancel_midway() -> None:
        signalled = asyncio.Event()
        task = asyncio.create_task(
            end_session_tree(
                leader=leader.pid,
                marker=marker,
                sid=leader.pid,
                sig=signal.SIGTERM,
                grace=30.0,
                on_signal=lambda _sig, _pids: signalled.set(),
            )
        )
        await signalled.wait()  # SIGTERM sent, the grace wait begun: cancel there
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_midway())

    assert leader.wait(timeout=10) == -signal.SIGKILL
    poll_for(lambda: gone(child), what=f"child {child} gone")


# On SIGTERM the leader starts a child in a session of its own (posix_spawn with
# setsid) and only then dies. The child is born with SIGTERM blocked and unblocks
# it once it has noted its pid, so a signal sent early waits instead of killing it
# unnoted. It is found by a scan after the group's first signal (all but always),
# or, for the instant between the clone and its setsid, it is still in the group
# and the group's closing signal reaches it. (A fork that called setsid itself and
# then dropped any pending SIGTERM with SIG_IGN, to require the scan, also dropped
# the closing signal when a scan saw it in the group: SIGKILLed after grace.)
LATE_CHILD = r"""
import os, signal, sys, time
with open(os.environ["FAKE_PIDS"], "a") as f:
    f.write(f"{os.getpid()}\n")
os.write(int(sys.argv[1]), b"x")
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
time.sleep(60)
"""
FORK_WHILE_DYING = r"""
import os, signal, sys, time

def on_term(*_):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # one child, however many come
    r, w = os.pipe()
    os.set_inheritable(w, True)
    os.posix_spawn(
        sys.executable, [sys.executable, "-c", LATE_CHILD, str(w)], os.environ,
        setsid=True, setsigmask={signal.SIGTERM}, setsigdef={signal.SIGTERM},
    )
    os.read(r, 1)
    os._exit(0)

signal.signal(signal.SIGTERM, on_term)
with open(os.environ["FAKE_PIDS"], "a") as f:
    f.write(f"{os.getpid()}\n")
time.sleep(60)
"""


def test_child_forked_while_dying_is_found_and_signalled(spawn: Spawn) -> None:
    leader, marker, pids_file = spawn(
        [sys.executable, "-c", f"LATE_CHILD = {LATE_CHILD!r}\n{FORK_WHILE_DYING}"]
    )
    _wait_pids(pids_file, 1)  # the SIGTERM handler is installed

    result = _end(marker, leader=leader.pid, sid=leader.pid, grace=20.0)

    assert leader.wait(timeout=10) == 0
    [_, late_child] = _read_pids(pids_file)
    # Found by a scan after the group signal, and signalled: or, where it was still in
    # the group for the instant between posix_spawn's clone and its setsid, reached by
    # the group's closing signal before any scan saw it (pending until it unblocks).
    # Either way SIGTERM ended it: no SIGKILL, nothing left.
    assert result.killed == [] and result.survivors == []
    poll_for(lambda: gone(late_child), what=f"the late child {late_child} gone")


# On SIGTERM the leader forks a child (in its group, born after the group's first
# signal) and dies. The child notes its pid, waits for the test's go-ahead on a
# FIFO, leaves the group (setsid) and notes its pid again: the test gives the
# go-ahead right after the scan that saw it in the group, so the group's closing
# signal misses it.
LEAVES_AFTER_THE_SCAN = r"""
import os, signal, sys, time

def note(path):
    with open(path, "a") as f:
        f.write(f"{os.getpid()}\n")

def on_term(*_):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        note(os.environ["FAKE_PIDS"])
        with open(sys.argv[1], "rb") as go:
            go.read(1)
        os.setsid()
        note(sys.argv[2])
        time.sleep(60)
    os._exit(0)

signal.signal(signal.SIGTERM, on_term)
note(os.environ["FAKE_PIDS"])
time.sleep(60)
"""


def test_a_child_seen_in_the_group_that_leaves_it_before_the_group_signal_gets_sigterm(
    spawn: Spawn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted as signalled with its group, it must not be left to SIGKILL after grace."""
    go, left = tmp_path / "go", tmp_path / "left"
    os.mkfifo(go)
    leader, marker, pids_file = spawn(
        [sys.executable, "-c", LEAVES_AFTER_THE_SCAN, str(go), str(left)]
    )
    _wait_pids(pids_file, 1)  # the SIGTERM handler is installed
    scan = ending_module.find_session_processes
    scans = 0

    def scan_then_leave(**where: Any) -> list[psutil.Process]:
        nonlocal scans
        scans += 1
        if scans > 1:
            return scan(**where)
        [_, child] = _wait_pids(pids_file, 2)  # forked on the group's first signal
        found = scan(**where)
        assert child in [p.pid for p in found] and os.getpgid(child) == leader.pid
        go.write_bytes(b"x")  # it may leave the group now
        assert _wait_pids(left, 1) == [child]
        return found

    monkeypatch.setattr(ending_module, "find_session_processes", scan_then_leave)
    result = _end(marker, leader=leader.pid, sid=leader.pid, grace=5.0)

    assert leader.wait(timeout=10) == 0
    [_, child] = _read_pids(pids_file)
    assert child in result.signalled
    assert result.killed == [] and result.survivors == []  # SIGTERM, not SIGKILL after grace
    assert gone(child)


# Three levels: the leader forks a middle process that leaves the session
# (setsid) and drops the marker (re-exec without it), then forks a grandchild.
# Neither the middle nor the grandchild is in the session or carries the
# marker: only the walk down from the leader, two levels deep, finds the
# grandchild. Each notes its pid (leader, middle, grandchild in that order).
# The leader ignores SIGTERM: were it to die of the group's signal before the
# scan, the middle would be the init's child, found by nothing (see the
# report of issue 14: a race of killpg-first with such trees).
THREE_LEVELS = r"""
import os, signal, sys, time

def note(pid):
    with open(os.environ["FAKE_PIDS"], "a") as f:
        f.write(f"{pid}\n")

if sys.argv[1:] == ["middle"]:
    r, w = os.pipe()
    if os.fork() == 0:
        note(os.getpid())
        os.write(w, b"x")
        time.sleep(60)
        os._exit(0)
    os.read(r, 1)
    time.sleep(60)
    sys.exit(0)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
note(os.getpid())
r, w = os.pipe()
if os.fork() == 0:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # an ignored signal stays so across exec
    os.setsid()
    env = {k: v for k, v in os.environ.items() if k != "AGENTD_SESSION_ID"}
    note(os.getpid())
    os.execve(sys.executable, [sys.executable, "-c", CODE, "middle"], env)
time.sleep(60)
"""


def test_a_grandchild_under_a_middle_that_left_the_session_and_the_marker_is_found(
    spawn: Spawn,
) -> None:
    leader, marker, pids_file = spawn(
        [sys.executable, "-c", f"CODE = {THREE_LEVELS!r}\n{THREE_LEVELS}"]
    )
    [_, middle, grandchild] = _wait_pids(pids_file, 3)
    assert MARKER_VAR not in psutil.Process(middle).environ()
    assert os.getsid(grandchild) == middle != leader.pid
    batches: list[tuple[int, list[int]]] = []

    found = find_session_processes(leader=leader.pid, marker=marker, sid=leader.pid)
    assert {p.pid for p in found} == {leader.pid, middle, grandchild}

    result = _end(
        marker,
        leader=leader.pid,
        sid=leader.pid,
        grace=0.3,
        on_signal=lambda sig, pids: batches.append((sig, pids)),
    )
    # One batch reaches all three levels: the grandchild is not left to a re-scan.
    assert batches[0][0] == signal.SIGTERM
    assert {leader.pid, middle, grandchild} <= set(batches[0][1])
    assert result.survivors == [] and result.killed == [leader.pid]
    assert leader.wait(timeout=10) == -signal.SIGKILL
    assert gone(middle) and gone(grandchild)


def test_the_group_hears_the_signal_before_the_first_scan(
    spawn: Spawn,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """The agent hears the decision at once: killpg comes before the (slow) /proc scan."""
    heard = tmp_path / "heard"
    leader, marker, pids_file = spawn([sys.executable, "-c", HEARS_TERM, str(heard)])
    _wait_pids(pids_file, 1)  # its SIGTERM handler is installed
    scan = find_session_processes
    before_scan: list[bool] = []

    def scan_after_hearing(**kw: object) -> list[psutil.Process]:
        if not before_scan:  # the first scan: has the leader heard SIGTERM yet?
            # (30 s: a loaded machine may leave the leader without the CPU for seconds)
            before_scan.append(bool(poll_for(heard.exists, timeout=30, what="SIGTERM heard")))
        return scan(**kw)  # type: ignore[arg-type]

    monkeypatch.setattr("agentd.process.ending.find_session_processes", scan_after_hearing)
    _end(marker, leader=leader.pid, sid=leader.pid, grace=5.0)
    assert before_scan == [True]
    assert leader.wait(timeout=10) == 0


# Notes its pid, then exits 0 on SIGTERM after creating the file argv[1].
HEARS_TERM = r"""
import os, signal, sys, time

def on_term(*_):
    open(sys.argv[1], "w").close()
    os._exit(0)

signal.signal(signal.SIGTERM, on_term)
with open(os.environ["FAKE_PIDS"], "a") as f:
    f.write(f"{os.getpid()}\n")
time.sleep(60)
"""


def test_processes_of_another_marker_are_not_touched(spawn: Spawn) -> None:
    mine, my_marker, _ = spawn(fake("wait"), unit="a")
    other, other_marker, _ = spawn(fake("wait"), unit="b")

    found = find_session_processes(leader=mine.pid, marker=my_marker, sid=mine.pid)
    result = _end(my_marker, leader=mine.pid, sid=mine.pid, grace=5.0)

    assert [p.pid for p in found] == [mine.pid]
    assert other.pid not in result.signalled + result.killed
    assert mine.wait(timeout=10) == -signal.SIGTERM
    assert other.poll() is None and psutil.Process(other.pid).is_running()
    assert [p.pid for p in find_session_processes(leader=None, marker=other_marker, sid=None)] == [
        other.pid
    ]


@pytest.mark.skipif(not proctable.LINUX_PROC, reason="the /proc fast path is Linux-only")
def test_proc_scan_agrees_with_psutil(spawn: Spawn) -> None:
    leader, _, pids_file = spawn(fake("child", "wait"))
    [child] = _wait_pids(pids_file, 1)
    fast, slow = proctable._scan_proc(), proctable._scan_psutil()
    for pid in (os.getpid(), leader.pid, child):
        assert fast[pid][:3] == slow[pid][:3]  # ppid, pgid, sid
        assert fast[pid].zombie == slow[pid].zombie
    assert fast[child].ppid == leader.pid and fast[child].sid == leader.pid
    assert fast[child].born >= fast[leader.pid].born  # type: ignore[operator]


@pytest.fixture
def marked() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A process carrying a marker that session_env_marker did not make."""
    marker = f"{os.environ['AGENTD_MARKER_PREFIX']}old:7:{os.getpid()}"
    proc = subprocess.Popen(
        fake("wait"),
        env={**os.environ, MARKER_VAR: marker},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
    )
    yield proc, marker
    proc.kill()
    proc.wait(timeout=10)


def test_a_marker_made_elsewhere_is_found_by_reading_every_environ(
    marked: tuple[subprocess.Popen[bytes], str],
) -> None:
    # After a daemon restart the marker comes from history: its time is unknown.
    proc, marker = marked
    assert proctable.carriers_since(marker) is None
    found = poll_for(
        lambda: find_session_processes(leader=None, marker=marker, sid=None),
        what="the marked process",
    )
    assert [p.pid for p in found] == [proc.pid]


@pytest.mark.skipif(not proctable.LINUX_PROC, reason="start times come from /proc")
def test_processes_started_before_a_marker_was_made_are_not_read(
    marked: tuple[subprocess.Popen[bytes], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, marker = marked
    poll_for(lambda: find_session_processes(leader=None, marker=marker, sid=None), what="marked")
    # Pretend the marker was made a second after now: nothing older can carry it.
    later = proctable.boot_ticks() + proctable.CLK_TCK  # type: ignore[operator]
    monkeypatch.setitem(proctable._BORN, marker, later)
    monkeypatch.setattr(proctable, "BORN_SLACK_S", 0.0)
    assert find_session_processes(leader=None, marker=marker, sid=None) == []


def test_nothing_to_end_returns_an_empty_result() -> None:
    result = _end(session_env_marker("none", 1), leader=None, sid=None, grace=5.0)
    assert (result.signalled, result.killed, result.survivors) == ([], [], [])


def test_never_finds_itself_or_its_own_session() -> None:
    me = os.getpid()
    assert find_session_processes(leader=me, marker="", sid=None) == []
    with pytest.raises(ValueError, match="agentd's own"):
        find_session_processes(leader=None, marker="", sid=os.getsid(0))


def test_session_env_marker_is_unique_and_carries_the_prefix() -> None:
    a, b = session_env_marker("unit", 3), session_env_marker("unit", 3)
    assert a != b
    assert a.startswith(f"{os.environ['AGENTD_MARKER_PREFIX']}unit:3:")


# Run in a child interpreter so the pytest process itself never becomes a subreaper.
REAP_ORPHAN = r"""
import json, os, signal, subprocess, sys, time
import psutil
from agentd.process.reaper import Reaper, enable_subreaper, is_subreaper

fake_agent, pids_file = sys.argv[1], sys.argv[2]

def zombie(pid):
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False

out = {"me": os.getpid(), "enabled": enable_subreaper(), "is_subreaper": is_subreaper()}
env = {**os.environ, "FAKE_PIDS": pids_file}
leader = subprocess.Popen([sys.executable, fake_agent, "orphan"], env=env)
leader.wait(timeout=20)
orphan = int(open(pids_file).read().split()[0])
held = psutil.Process(orphan)  # killed at the end only if it is still this process
try:
    out["orphan"], out["orphan_ppid"] = orphan, held.ppid()
    owned = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    os.kill(orphan, signal.SIGKILL)
    deadline = time.monotonic() + 20
    while not (zombie(orphan) and zombie(owned.pid)) and time.monotonic() < deadline:
        time.sleep(0.01)
    out["reaped"] = Reaper(owned=lambda pid: pid == owned.pid).reap()
    out["owned_rc"] = owned.wait(timeout=10)  # 0, not 3, if the reaper had stolen it
    out["again"] = Reaper(owned=lambda pid: False).reap()
finally:
    try:
        held.kill()  # reaped above: its number may be another process's now
    except psutil.NoSuchProcess:
        pass
print(json.dumps(out))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="child subreaper is Linux-only")
def test_subreaper_reaps_an_adopted_orphan_and_leaves_owned_children(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-c", REAP_ORPHAN, FAKE_AGENT, str(tmp_path / "pids")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)

    assert out["enabled"] and out["is_subreaper"]
    assert out["orphan_ppid"] == out["me"]  # adopted by the subreaper, not init
    [[pid, status]] = out["reaped"]
    assert pid == out["orphan"] and os.waitstatus_to_exitcode(status) == -signal.SIGKILL
    assert out["owned_rc"] == 3
    assert out["again"] == []


def test_a_session_number_another_process_holds_now_is_not_ours(tmp_path: Path) -> None:
    """The leader was reaped and its pid handed to another session's leader (a wrap of
    pid_max: 32768 on many machines): neither the scan by session nor the group's
    signal may take that session for ours."""
    env = {k: v for k, v in os.environ.items() if k != MARKER_VAR}
    other = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        env=env,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        ours = session_env_marker("u", 1)  # no process carries it
        assert find_session_processes(leader=None, marker=ours, sid=other.pid) == []
        result = _end(ours, leader=None, sid=other.pid, grace=0.5)
        assert result.signalled == [] and result.killed == []
        assert other.poll() is None  # alive: nothing reached it
        # the same number with our marker on its holder is the session's
        mine = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"],
            env={**env, MARKER_VAR: ours},
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
        try:
            found = find_session_processes(leader=None, marker=ours, sid=mine.pid)
            assert [p.pid for p in found] == [mine.pid]
        finally:
            mine.kill()
            mine.wait(timeout=10)
    finally:
        other.kill()
        other.wait(timeout=10)
