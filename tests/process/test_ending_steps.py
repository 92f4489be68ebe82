"""Ending a session's tree, step by step, against a fake process table.

The real-process tests (``test_tree.py``, ``test_guards_grace.py``) show that
the processes end; these show in what order, with which signals, and when,
where a real kernel gives no handle on it: the clock is a counter that the
waits advance, and every signal sent is recorded. Nothing here sleeps or
starts a process.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest

from agentd.process import ending
from agentd.process.ending import EndResult, end_session_tree, kill_now

T0 = 1000.0  # the fake monotonic clock at the start
SID = 40_000  # the session (and group) the fake leader leads
TERM, KILL, CONT, STOP = signal.SIGTERM, signal.SIGKILL, signal.SIGCONT, signal.SIGSTOP


@dataclass(eq=False)
class Proc:
    """One fake process: how it answers signals, and what it was sent."""

    world: World
    pid: int
    ppid: int
    pgid: int
    on_term: str | float = "exit"  # "exit", "ignore", or seconds it takes to exit
    born: int = 0  # with pid, its identity (psutil: the create time)
    stopped: bool = False
    dead: bool = False  # a zombie: exited, not reaped
    unkillable: int = 0  # SIGKILLs it shrugs off (a process in D state)
    denied: bool = False  # another uid's: may not be signalled
    status_denied: bool = False  # its status cannot be read
    reaped: bool = False  # once dead, gone from the table (not a zombie)
    stale: bool = False  # in the snapshot even once dead (it exited after the scan)
    pending: list[int] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.info = {"ppid": self.ppid, "pgid": self.pgid}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Proc) and (self.pid, self.born) == (other.pid, other.born)

    def __hash__(self) -> int:
        return hash((self.pid, self.born))

    # psutil.Process's interface, as ending.py uses it
    def send_signal(self, sig: int) -> None:
        if self.dead:
            raise psutil.NoSuchProcess(self.pid)
        if self.denied:
            raise psutil.AccessDenied(self.pid)
        self.world.sent.append((self.world.t, self.pid, sig))
        self.deliver(sig)

    def is_running(self) -> bool:
        return not (self.dead and self.reaped)  # a zombie is running to psutil

    def status(self) -> str:
        if self.dead and self.reaped:
            raise psutil.NoSuchProcess(self.pid)
        if self.status_denied:
            raise psutil.AccessDenied(self.pid)
        if self.dead:
            return psutil.STATUS_ZOMBIE
        return psutil.STATUS_STOPPED if self.stopped else psutil.STATUS_SLEEPING

    # what the fake kernel does with a signal
    def deliver(self, sig: int) -> None:
        if self.dead:
            return
        if sig == KILL:
            if self.unkillable:
                self.unkillable -= 1
            else:
                self.die()
        elif sig == STOP:
            self.stopped = True
        elif sig == CONT:
            self.stopped = False
            pending, self.pending = self.pending, []
            for s in pending:
                self.deliver(s)
        elif self.stopped:
            self.pending.append(sig)
        elif sig == TERM:
            if self.on_term == "exit":
                self.die()
            elif isinstance(self.on_term, float):
                self.world.later(self.on_term, self.die)

    def die(self) -> None:
        self.dead = True
        self.world.deaths.append((self.world.t, self.pid))


class World:
    """The fake process table, clock and kernel that ending.py talks to."""

    def __init__(self) -> None:
        self.now = T0
        self.procs: list[Proc] = []
        self.sent: list[tuple[float, int, int]] = []  # (time, pid, signal), one by one
        self.groups: list[tuple[float, int, int]] = []  # (time, pgid, signal): killpg
        self.killpgs: list[tuple[float, int, int]] = []  # the same, tried on no one too
        self.deaths: list[tuple[float, int]] = []
        self.sleeps: list[float] = []
        self.scans: list[dict[str, Any]] = []
        self.events: list[tuple[float, Callable[[], object]]] = []
        self.on_scan: Callable[[int], None] = lambda n: None
        self.cancel_at_sleep: int | None = None
        self.batches: list[tuple[int, list[int]]] = []  # what on_signal was told
        self.number_taken = False  # the session's number is another process's now

    # ending._unreaped: the leader as a process, while it is unreaped
    def unreaped(self, pid: int | None) -> Proc | None:
        if pid is None:
            return None
        for p in self.procs:
            if p.pid == pid:
                return p if p.is_running() else None
        return Proc(self, pid, 1, SID)  # one the test does not model: taken as unreaped

    # tree.session_number_is_ours
    def number_is_ours(
        self, sid: int, *, leader: int | None, marker: str, exists: bool | None = None
    ) -> bool:
        return leader is not None or not self.number_taken

    def add(self, pid: int, *, ppid: int = 1, pgid: int = SID, **kw: Any) -> Proc:
        proc = Proc(self, pid, ppid, pgid, **kw)
        self.procs.append(proc)
        return proc

    @property
    def t(self) -> float:
        """Seconds since the start."""
        return self.now - T0

    def later(self, delay: float, what: Callable[[], object]) -> None:
        self.events.append((self.now + delay, what))

    # time.monotonic and asyncio.sleep
    def monotonic(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)
        if self.cancel_at_sleep == len(self.sleeps):
            raise asyncio.CancelledError
        self.now += delay
        for event in [e for e in self.events if e[0] <= self.now]:
            self.events.remove(event)
            event[1]()

    # os.killpg, os.getpgid
    def killpg(self, pgid: int, sig: int) -> None:
        self.killpgs.append((self.t, pgid, sig))
        members = [p for p in self.procs if p.pgid == pgid and not p.dead]
        if not members:
            raise ProcessLookupError(pgid)
        if all(p.denied for p in members):
            raise PermissionError(pgid)
        self.groups.append((self.t, pgid, sig))
        for p in members:
            if not p.denied:
                p.deliver(sig)

    def getpgid(self, pid: int) -> int:
        for p in self.procs:
            if p.pid == pid and not p.dead:
                return p.pgid
        raise ProcessLookupError(pid)

    # agentd.process.tree.find_session_processes
    def scan(self, **kw: Any) -> list[Proc]:
        self.scans.append(kw)
        self.on_scan(len(self.scans))
        shown = [p for p in self.procs if not p.dead or p.stale]
        return [p for p in shown if p.pid not in kw.get("exclude", ())]

    # what the tests look at
    def signals_to(self, pid: int) -> list[int]:
        return [s for _, p, s in self.sent if p == pid]

    def first(self, sig: int, pid: int) -> float:
        return min(t for t, p, s in self.sent if p == pid and s == sig)


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    w = World()
    monkeypatch.setattr(ending, "find_session_processes", w.scan)
    monkeypatch.setattr(ending, "_unreaped", w.unreaped)
    monkeypatch.setattr(ending, "session_number_is_ours", w.number_is_ours)
    monkeypatch.setattr(ending, "time", SimpleNamespace(monotonic=w.monotonic))
    monkeypatch.setattr(ending, "asyncio", SimpleNamespace(sleep=w.sleep))
    monkeypatch.setattr(ending, "os", SimpleNamespace(killpg=w.killpg, getpgid=w.getpgid))
    yield w


def end(
    world: World,
    *,
    sig: int = TERM,
    grace: float = 10.0,
    leader: int | None = SID,
    sid: int | None = SID,
    **kw: Any,
) -> EndResult:
    """end_session_tree run to its end; its batches of signals in ``world.batches``."""

    def on_signal(s: int, pids: list[int]) -> None:
        world.batches.append((s, list(pids)))

    coro = end_session_tree(
        leader=leader, marker="m", sid=sid, sig=sig, grace=grace, on_signal=on_signal, **kw
    )
    return asyncio.run(coro)


# -- the signal ---------------------------------------------------------------------


def test_the_group_hears_the_signal_first_then_sigcont_then_the_scan(world: World) -> None:
    world.add(SID, on_term="ignore")
    seen: list[list[tuple[float, int, int]]] = []
    world.on_scan = lambda n: seen.append(list(world.groups))
    end(world, grace=0.3)
    assert seen[0] == [(0.0, SID, TERM), (0.0, SID, CONT)]  # before the first scan


def test_group_members_are_not_signalled_again_one_by_one(world: World) -> None:
    world.add(SID, on_term="ignore")
    world.add(SID + 1, ppid=SID, on_term="ignore")  # in the group
    world.add(SID + 2, ppid=SID, pgid=SID + 2, on_term="ignore")  # its own group (setsid)
    result = end(world, grace=0.3)
    terms = [(p, s) for _, p, s in world.sent if s == TERM]
    assert terms == [(SID + 2, TERM)]  # the group had it from killpg
    assert world.batches[0] == (TERM, [SID + 1, SID + 2, SID])  # children first
    assert result.signalled == [SID + 1, SID + 2, SID]
    # the first killpg, and the closing one after the scan (for a process forked since)
    assert [g for g in world.groups if g[2] == TERM] == [(0.0, SID, TERM)] * 2


def test_a_member_whose_group_is_not_in_the_snapshot_is_asked_for_it(world: World) -> None:
    world.add(SID, on_term="ignore")
    member = world.add(SID + 1, ppid=SID, on_term="ignore")
    member.info = {"ppid": SID}  # a psutil.Process without the snapshot's pgid
    other = world.add(SID + 7, ppid=SID, pgid=SID + 7, on_term="ignore")
    other.info = {"ppid": SID, "pgid": None}
    end(world, grace=0.3)
    assert TERM not in world.signals_to(SID + 1)  # os.getpgid: the group's, it had killpg
    assert world.signals_to(SID + 7)[0] == TERM  # another group: sent its own


def test_a_member_gone_before_its_group_is_read_is_not_reported(world: World) -> None:
    world.add(SID, on_term="ignore")
    stale = world.add(SID + 1, ppid=SID, pgid=SID + 1, stale=True)
    stale.info = {"ppid": SID}
    stale.die()  # between the snapshot and the signal: getpgid fails, the signal too
    result = end(world, grace=0.3)
    assert result.signalled == [SID]


def test_a_leader_that_died_of_the_group_signal_is_reported_signalled(world: World) -> None:
    world.add(SID)  # exits on SIGTERM, before the scan finds it
    result = end(world)
    assert result.signalled == [SID] and result.killed == [] and result.survivors == []
    assert world.batches == [(TERM, [SID])]
    assert world.sleeps == [] and len(world.scans) == 2  # one look more: none forked dying


def test_the_leader_is_not_added_when_it_does_not_lead_the_group(world: World) -> None:
    world.add(SID + 1)  # the group's only member dies at once of killpg
    result = end(world, leader=SID + 9)  # a leader that is not the group's
    assert result.signalled == [] and world.batches == []
    assert world.groups[0] == (0.0, SID, TERM)


def test_each_process_gets_sigcont_after_the_signal_so_a_stopped_one_acts(world: World) -> None:
    world.add(SID, stopped=True)  # ^Z in the pty
    world.add(SID + 3, ppid=SID, pgid=SID + 3, stopped=True)  # stopped, in its own group
    result = end(world)
    assert result.killed == [] and result.survivors == []
    assert world.signals_to(SID + 3) == [TERM, CONT]
    assert [g[2] for g in world.groups[:2]] == [TERM, CONT]
    assert {pid for _, pid in world.deaths} == {SID, SID + 3}
    assert max(t for t, _ in world.deaths) == 0.0  # at once, not after the grace


def test_a_sigkill_stop_gets_no_sigcont(world: World) -> None:
    world.add(SID, on_term="ignore")
    world.add(SID + 3, ppid=SID, pgid=SID + 3, on_term="ignore")
    end(world, sig=KILL, grace=0.05)
    assert world.groups == [(0.0, SID, KILL)]
    assert world.signals_to(SID + 3) == [KILL]


def test_a_sigcont_stop_is_not_followed_by_another(world: World) -> None:
    world.add(SID, on_term="ignore")
    world.add(SID + 3, ppid=SID, pgid=SID + 3, on_term="ignore")
    end(world, sig=CONT, grace=0.05)
    assert [g for g in world.groups if g[2] == CONT] == [(0.0, SID, CONT)] * 2
    assert world.signals_to(SID + 3) == [CONT, KILL]


def test_a_hup_stop_signal_also_gets_its_sigcont(world: World) -> None:
    world.add(SID, on_term="ignore")
    world.add(SID + 3, ppid=SID, pgid=SID + 3, on_term="ignore")
    end(world, sig=signal.SIGHUP, grace=0.05)
    assert world.signals_to(SID + 3)[:2] == [signal.SIGHUP, CONT]
    assert [g[2] for g in world.groups[:4]] == [signal.SIGHUP, CONT, signal.SIGHUP, CONT]


def test_the_scan_gets_the_session_and_what_to_leave_alone(world: World) -> None:
    world.add(SID + 4, pgid=SID + 4)  # excluded: never signalled
    world.add(SID)
    cgroup = Path("/sys/fs/cgroup/x")
    result = end(world, exclude={SID + 4}, cgroup=cgroup)
    assert world.scans[0] == {
        "leader": SID,
        "marker": "m",
        "sid": SID,
        "exclude": {SID + 4},
        "cgroup": cgroup,
    }
    assert SID + 4 not in result.signalled and world.signals_to(SID + 4) == []


def test_a_process_found_again_is_not_signalled_again(world: World) -> None:
    world.add(SID + 1, pgid=SID + 1, on_term="ignore")
    end(world, leader=None, grace=2.0)  # re-scans at 0.5, 1 and 1.5 s find it again
    assert 4 <= len(world.scans) <= 6  # those, the first, and the kill's (not one a poll)
    assert world.signals_to(SID + 1) == [TERM, CONT, KILL]


# -- the wait -------------------------------------------------------------------------


def test_the_first_looks_come_within_milliseconds_then_back_off_to_poll(world: World) -> None:
    world.add(SID, on_term=0.04)  # exits 40 ms after SIGTERM
    result = end(world, poll=0.02)
    assert world.sleeps == [0.002, 0.004, 0.008, 0.016, 0.02]
    assert result.duration_s == pytest.approx(0.05) and result.killed == []


def test_an_exit_at_once_ends_the_wait_at_the_first_look(world: World) -> None:
    world.add(SID + 1, pgid=SID + 1)  # found by the scan, gone on its SIGTERM
    result = end(world)
    assert world.sleeps == [] and result.signalled == [SID + 1]
    assert len(world.scans) == 2  # one look more (none forked while dying), and done


def test_no_session_and_no_process_is_one_scan_and_done(world: World) -> None:
    result = end(world, leader=None, sid=None)
    assert (result.signalled, result.killed, result.survivors) == ([], [], [])
    assert len(world.scans) == 1 and world.killpgs == [] and world.sleeps == []


def test_nothing_to_end_returns_without_waiting(world: World) -> None:
    result = end(world, leader=None)
    assert (result.signalled, result.killed, result.survivors) == ([], [], [])
    assert world.sleeps == [] and len(world.scans) == 1 and result.duration_s == 0.0


def test_one_that_ignores_the_signal_is_killed_when_the_grace_has_passed(world: World) -> None:
    world.add(SID, on_term="ignore")
    result = end(world, grace=0.5)
    assert world.first(KILL, SID) == pytest.approx(0.5)  # the whole grace, not more
    assert sum(world.sleeps) == pytest.approx(0.5)
    assert world.sleeps[:7] == [0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.1]
    assert max(world.sleeps) == 0.1  # backing off to 0.1 s by default
    assert result.killed == [SID] and result.survivors == [] and result.signalled == [SID]
    assert world.batches == [(TERM, [SID]), (KILL, [SID])]
    assert result.duration_s == pytest.approx(0.5)


def test_a_slow_clean_exit_within_the_grace_is_never_killed(world: World) -> None:
    world.add(SID, on_term=0.45)
    result = end(world, grace=0.5)
    assert result.killed == [] and KILL not in world.signals_to(SID)
    assert [g for g in world.groups if g[2] == KILL] == []


def test_a_grace_of_zero_kills_at_once(world: World) -> None:
    world.add(SID, on_term="ignore")
    result = end(world, grace=0.0)
    assert world.first(KILL, SID) == 0.0 and result.killed == [SID]


def test_a_child_forked_during_the_wait_is_found_by_the_periodic_rescan(world: World) -> None:
    world.add(SID, on_term="ignore")
    world.later(0.1, lambda: world.add(SID + 8, ppid=SID, pgid=SID + 8, on_term=0.01))
    result = end(world, grace=3.0)
    assert SID + 8 in result.signalled
    assert 0.5 <= world.first(TERM, SID + 8) < 0.6  # the re-scan every half second
    assert world.batches[1] == (TERM, [SID + 8])


def test_a_child_forked_while_dying_is_signalled_before_all_is_called_gone(world: World) -> None:
    def fork_and_die() -> None:
        world.add(SID + 9, ppid=1, pgid=SID + 9)
        leader.die()

    leader = world.add(SID, on_term="ignore")
    world.later(0.01, fork_and_die)
    result = end(world)
    assert result.signalled == [SID, SID + 9] and result.killed == []
    assert world.signals_to(SID + 9) == [TERM]  # (gone before its SIGCONT)
    assert world.t < 0.1


def test_a_zombie_is_gone(world: World) -> None:
    world.add(SID, on_term=0.001)
    result = end(world)
    assert result.survivors == [] and result.killed == [] and len(world.sleeps) == 1


def test_a_reaped_process_is_gone(world: World) -> None:
    world.add(SID + 1, pgid=SID + 1, on_term=0.001, reaped=True)
    result = end(world)
    assert result.survivors == [] and result.killed == [] and len(world.sleeps) == 1


def test_a_process_whose_status_cannot_be_read_counts_as_running(world: World) -> None:
    world.add(SID + 1, pgid=SID + 1, status_denied=True, on_term="ignore", unkillable=99)
    result = end(world, grace=0.2)
    assert result.survivors == [SID + 1]


# -- the kill ---------------------------------------------------------------------------


def test_kill_rounds_repeat_until_it_dies(world: World) -> None:
    world.add(SID, on_term="ignore", unkillable=4)  # 4 SIGKILLs shrugged off (D state)
    result = end(world, grace=0.5)
    kills = [t for t, p, s in world.sent if p == SID and s == KILL]
    assert result.survivors == [] and result.killed == [SID]
    assert kills == pytest.approx([0.5, 1.5, 2.5])  # a round a second
    assert world.batches == [(TERM, [SID])] + [(KILL, [SID])] * 3


def test_one_that_never_dies_is_a_survivor_after_the_kill_budget(world: World) -> None:
    world.add(SID, on_term="ignore", unkillable=10**6)
    world.add(SID + 2, pgid=SID + 2, ppid=SID, on_term="ignore", unkillable=10**6)
    result = end(world, grace=0.5)
    assert result.survivors == [SID, SID + 2]
    kills = [t for t, p, s in world.sent if p == SID + 2 and s == KILL]
    assert kills == pytest.approx([0.5, 1.5, 2.5, 3.5, 4.5])  # 5 s of rounds
    assert world.t == pytest.approx(5.5)
    assert max(world.sleeps) == 0.1
    assert result.killed == [SID + 2, SID]


def test_kill_waits_poll_between_looks(world: World) -> None:
    world.add(SID + 1, pgid=SID + 1, on_term="ignore", unkillable=1)
    end(world, leader=None, grace=0.0, poll=0.25)
    assert world.sleeps == [0.25] * 4


def test_a_process_it_may_not_signal_is_a_survivor(world: World) -> None:
    world.add(SID + 1, pgid=SID + 1, denied=True, on_term="ignore")
    result = end(world, grace=0.2)
    assert result.signalled == [] and result.killed == [] and result.survivors == [SID + 1]


def test_a_group_of_only_foreign_processes_is_no_error(world: World) -> None:
    world.add(SID, denied=True, on_term="ignore")
    result = end(world, grace=0.2)
    assert result.survivors == [SID] and world.groups == []


def test_kill_now_sigkills_bottom_up(world: World) -> None:
    world.add(SID)
    world.add(SID + 1, ppid=SID)
    world.add(SID + 2, ppid=SID + 1, denied=True)
    cgroup = Path("/sys/fs/cgroup/s")
    assert kill_now(leader=SID, marker="m", sid=SID, cgroup=cgroup) == [SID + 1, SID]
    assert [(p, s) for _, p, s in world.sent] == [(SID + 1, KILL), (SID, KILL)]
    assert world.scans == [{"leader": SID, "marker": "m", "sid": SID, "cgroup": cgroup}]


def test_cancelled_midway_kills_everything_found_at_once(world: World) -> None:
    world.add(SID, on_term="ignore")
    world.add(SID + 1, ppid=SID, pgid=SID + 1, on_term="ignore")
    world.add(SID + 2, ppid=SID + 1, pgid=SID + 2, on_term="ignore", denied=True)
    world.cancel_at_sleep = 3
    with pytest.raises(asyncio.CancelledError):
        end(world)
    assert [p for _, p, s in world.sent if s == KILL] == [SID + 1, SID]  # bottom-up
    assert world.killpgs[-1] == (world.t, SID, KILL)
    assert [b for b in world.batches if b[0] == KILL] == []  # no callbacks there
    assert len(world.sleeps) == 3  # no wait


def test_a_failure_midway_kills_too(world: World) -> None:
    world.add(SID, on_term="ignore")

    def broken(sig: int, pids: list[int]) -> None:
        raise RuntimeError("on_signal broke")

    coro = end_session_tree(leader=SID, marker="m", sid=SID, sig=TERM, grace=5.0, on_signal=broken)
    with pytest.raises(RuntimeError):
        asyncio.run(coro)
    assert world.signals_to(SID) == [CONT, KILL]  # SIGTERM came through killpg


def test_it_refuses_to_end_its_own_session(world: World) -> None:
    with pytest.raises(ValueError, match="agentd's own"):
        end(world, sid=os.getsid(0))
    assert world.groups == [] and world.scans == []


def test_a_member_that_died_of_the_group_signal_is_reported_signalled(world: World) -> None:
    world.add(SID, on_term="ignore")
    # in the snapshot (its group as the scan saw it), though the killpg before it ended it
    world.add(SID + 1, ppid=SID, stale=True)
    result = end(world, grace=0.2)
    assert result.signalled == [SID + 1, SID]
    assert TERM not in world.signals_to(SID + 1)


def test_a_process_without_a_snapshot_is_asked_for_its_group(world: World) -> None:
    world.add(SID, on_term="ignore")
    bare = world.add(SID + 1, ppid=SID, on_term="ignore")
    del bare.info  # a psutil.Process made from a pid, not by a scan: no `info` at all
    bare.ppid = lambda: SID  # type: ignore[assignment]  # (so its parent is asked too)
    end(world, grace=0.2)
    assert TERM not in world.signals_to(SID + 1)  # os.getpgid: the group's, it had killpg


def test_one_in_no_group_forking_while_dying_is_followed_too(world: World) -> None:
    def fork_and_die() -> None:
        world.add(SID + 9, ppid=1, pgid=SID + 9)
        dying.die()

    dying = world.add(SID + 1, pgid=SID + 1, on_term="ignore")  # the group SID is empty
    world.later(0.01, fork_and_die)
    result = end(world, leader=None)
    assert result.signalled == [SID + 1, SID + 9] and result.killed == []


# -- a session's number once its leader is reaped -------------------------------------


def test_a_leader_reaped_during_the_wait_is_no_longer_a_root_of_the_scans(world: World) -> None:
    """Its pid may be another process's after that: the tree walk must not start there."""
    leader = world.add(SID, on_term=0.3)  # exits 0.3 s after SIGTERM, reaped at once
    world.add(SID + 1, ppid=SID, pgid=SID + 1, on_term="ignore")  # keeps the wait going

    def reaped() -> None:
        leader.reaped = True

    world.later(0.3, reaped)
    end(world, grace=2.0)
    assert [scan["leader"] for scan in world.scans[:2]] == [SID, None]  # the first, then 0.5 s


def test_no_group_signal_once_the_session_number_is_another_process(world: World) -> None:
    """The leader was reaped and its number handed out again: killpg would hit a group
    that is not ours; the session's processes found by their marker are signalled one
    by one."""
    world.number_taken = True
    world.add(SID + 1, pgid=SID + 1)  # found by the marker
    result = end(world, leader=None)
    assert world.killpgs == []  # not even tried (the scan's side: test_tree.py)
    assert result.signalled == [SID + 1] and world.signals_to(SID + 1) == [TERM]
