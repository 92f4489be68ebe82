"""End every process a session started.

The session's process group gets the signal first, at once (one
``killpg``; the sid is the leader's pid, so also its group's id), because a scan
takes time and the agent should hear the decision in well under a millisecond.
Then, as circus/psutil do: snapshot, signal the rest bottom-up (children before
parents, so no parent can respawn a killed child), poll until ``grace`` (every
few ms at first, backing off to 0.1 s), then SIGKILL what is left, re-scanning
for processes forked while dying. Nothing here waits for or reaps a process:
the leader belongs to ptyprocess and orphans to the reaper, so "gone" means
"not running or zombie". Nothing here blocks the event loop either: waits are
``asyncio.sleep``. The processes are found by ``agentd.process.tree``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

from agentd.process import table as proctable
from agentd.process.tree import (
    find_session_processes,
    order_bottom_up,
    refuse_own_session,
    session_number_is_ours,
)

RESCAN_EVERY = 0.5  # s between re-scans while waiting: catch children forked while dying
KILL_ROUND = 1.0  # s to wait for SIGKILLed processes before scanning and killing again
KILL_BUDGET = 5.0  # s of SIGKILL rounds before giving up and reporting survivors
FIRST_POLL = 0.002  # s: the first look after signalling; doubles up to ``poll``

OnSignal = Callable[[int, list[int]], None]


@dataclass
class EndResult:
    """What ending a session's tree did; ``survivors`` is empty on success."""

    signalled: list[int]  # got the stop signal
    killed: list[int]  # got SIGKILL (after grace, or found while killing)
    survivors: list[int]  # still running when we gave up (D state, other uid...)
    duration_s: float


def kill_now(
    *, leader: int | None, marker: str, sid: int | None, cgroup: Path | None = None
) -> list[int]:
    """SIGKILL the session's processes bottom-up at once, no grace; the pids killed."""
    procs = order_bottom_up(
        find_session_processes(leader=leader, marker=marker, sid=sid, cgroup=cgroup)
    )
    return [proc.pid for proc in procs if _send(proc, signal.SIGKILL)]


async def end_session_tree(
    *,
    leader: int | None,
    marker: str,
    sid: int | None,
    sig: int,
    grace: float,
    poll: float = 0.1,
    on_signal: OnSignal | None = None,
    exclude: Collection[int] = (),
    cgroup: Path | None = None,
) -> EndResult:
    """Send ``sig`` to every process of the session, SIGKILL what is left after ``grace``.

    ``on_signal(sig, pids)`` is called for each batch signalled; it must not
    raise. If this coroutine is cancelled (or fails) midway, everything found
    so far is SIGKILLed before the exception propagates: a session's processes
    must never outlive it. ``cgroup``: the session's own, whose members are
    the session's too (``agentd.process.cgroup``).
    """
    refuse_own_session(sid)
    started = time.monotonic()
    ending = _Ending(
        leader=leader, marker=marker, sid=sid, exclude=exclude, on_signal=on_signal, cgroup=cgroup
    )
    try:
        # The group at once, before the scan: the agent hears the decision now.
        ending.signal_group_first(sig)
        ending.send(ending.scan_new(), sig, ending.signalled)
        gone = await ending.wait_gone(sig, deadline=started + grace, poll=poll)
        survivors = [] if gone else await ending.kill_all(poll)
    except BaseException:  # cancellation included: kill without waiting, then propagate
        ending.kill_now()
        raise
    return EndResult(
        signalled=ending.signalled,
        killed=ending.killed,
        survivors=survivors,
        duration_s=time.monotonic() - started,
    )


class _Ending:
    """The state of one end_session_tree call: what we track and whom we signalled."""

    def __init__(
        self,
        *,
        leader: int | None,
        marker: str,
        sid: int | None,
        exclude: Collection[int],
        on_signal: OnSignal | None,
        cgroup: Path | None = None,
    ) -> None:
        self._cgroup = cgroup
        # The leader as a process (pid and start time): its pid is passed on while that
        # process is unreaped, and no longer once its owner reaps it during the wait.
        self._leader_proc = _unreaped(leader)
        self._marker = marker
        self._sid = sid
        self._exclude = exclude
        self._on_signal = on_signal
        self._tracked: dict[int, psutil.Process] = {}
        self._tracked_any = False  # did any scan find a process of the session?
        self._group_alive = False  # did the first signal reach anyone in the group?
        self._group_sig: int | None = None  # what signal_group_first sent the group
        self.signalled: list[int] = []
        self.killed: list[int] = []

    def scan_new(self) -> list[psutil.Process]:
        """Re-scan; track and return the processes not seen before."""
        fresh = []
        found = find_session_processes(
            leader=self._leader,
            marker=self._marker,
            sid=self._sid,
            exclude=self._exclude,
            cgroup=self._cgroup,
        )
        for proc in found:
            # psutil compares (pid, create time): a reused pid is a new process.
            if self._tracked.get(proc.pid) != proc:
                self._tracked[proc.pid] = proc
                self._tracked_any = True
                fresh.append(proc)
        return fresh

    @property
    def _leader(self) -> int | None:
        """The leader's pid while it is unreaped (alive or a zombie), else None."""
        proc = self._leader_proc
        if proc is not None and not proc.is_running():  # reaped; its pid may be reused
            self._leader_proc = proc = None
        return None if proc is None else proc.pid

    def alive(self) -> list[psutil.Process]:
        """Tracked processes still running; forget the rest."""
        self._tracked = {pid: p for pid, p in self._tracked.items() if _is_alive(p)}
        return list(self._tracked.values())

    def signal_group_first(self, sig: int) -> None:
        """``sig`` (and SIGCONT) to the session's group before any scan."""
        if self._signal_group(sig):
            self._group_alive = True
            self._group_sig = sig
            if sig not in (signal.SIGKILL, signal.SIGCONT):
                self._signal_group(signal.SIGCONT)

    def send(self, procs: Iterable[psutil.Process], sig: int, record: list[int]) -> None:
        """Signal ``procs`` bottom-up and the session's group; note who got it.

        Members of the group that ``signal_group_first`` already sent ``sig``
        are not signalled one by one again (only the closing ``killpg``, which
        catches processes forked into the group since, reaches them twice).
        """
        ordered = order_bottom_up(procs)
        grouped = self._group_sig == sig and self._sid is not None
        in_group = [proc for proc in ordered if grouped and _pgid(proc) == self._sid]
        via_group = {proc.pid for proc in in_group}
        sent = [proc.pid for proc in ordered if proc.pid in via_group or _send(proc, sig)]
        leader = self._leader
        if grouped and leader is not None and leader == self._sid and leader not in sent:
            sent.append(leader)  # it leads the group: it got sig, maybe died of it since
        self._group_sig = None  # later batches are new processes: signal each
        self._signal_group(sig)
        # One forked after the first killpg and seen in the group may have left it
        # (setsid) before this killpg: it got neither. By pid, then: a second sig
        # to one that left just after the killpg, rather than none and SIGKILL later.
        for proc in in_group:
            if proctable.os_id(os.getpgid, proc.pid) != self._sid:
                _send(proc, sig)
        if sig not in (signal.SIGKILL, signal.SIGCONT):
            # As systemd does: a stopped process (^Z in the pty) would keep ``sig``
            # pending until grace runs out and it gets SIGKILL; SIGCONT lets it act.
            for proc in ordered:
                _send(proc, signal.SIGCONT)
            self._signal_group(signal.SIGCONT)
        record.extend(pid for pid in sent if pid not in record)
        if sent and self._on_signal is not None:
            self._on_signal(sig, sent)

    async def wait_gone(self, sig: int, *, deadline: float, poll: float) -> bool:
        """Poll until every process is gone (True) or ``deadline`` passes (False)."""
        next_scan = time.monotonic() + RESCAN_EVERY
        step = min(FIRST_POLL, poll)  # most agents exit within milliseconds of SIGTERM
        while True:
            if not self.alive():
                if not self._tracked_any and not self._group_alive:
                    return True  # the group was empty and the scan found none: none can fork
                # All gone, unless one forked while dying: look once more before saying so.
                fresh = self.scan_new()
                if not fresh:
                    return True
                self.send(fresh, sig, self.signalled)
            now = time.monotonic()
            if now >= deadline:
                return False
            if now >= next_scan:
                self.send(self.scan_new(), sig, self.signalled)
                next_scan = now + RESCAN_EVERY
            await asyncio.sleep(max(0.0, min(step, deadline - now)))
            step = min(step * 2, poll)

    async def kill_all(self, poll: float) -> list[int]:
        """SIGKILL rounds until nothing is found; the pids left after KILL_BUDGET."""
        budget_end = time.monotonic() + KILL_BUDGET
        while True:
            self.scan_new()
            targets = self.alive()
            now = time.monotonic()
            if not targets:
                return []
            if now >= budget_end:
                return sorted(p.pid for p in targets)
            self.send(targets, signal.SIGKILL, self.killed)
            await self._wait_alive_gone(until=min(now + KILL_ROUND, budget_end), poll=poll)

    def kill_now(self) -> None:
        """Best-effort SIGKILL of everything tracked, without waiting or callbacks."""
        sent = [p.pid for p in order_bottom_up(self.alive()) if _send(p, signal.SIGKILL)]
        self.killed.extend(pid for pid in sent if pid not in self.killed)
        self._signal_group(signal.SIGKILL)

    async def _wait_alive_gone(self, *, until: float, poll: float) -> None:
        while self.alive() and (left := until - time.monotonic()) > 0:
            await asyncio.sleep(min(poll, left))

    def _signal_group(self, sig: int) -> bool:
        # Also catches a process forked into the group between scan and signal.
        # The sid is the leader's pid, hence also its group's id; the kernel does
        # not hand that number to a new process while any member still lives.
        if self._sid is None or not session_number_is_ours(
            self._sid, leader=self._leader, marker=self._marker
        ):
            return False
        try:
            os.killpg(self._sid, sig)
        except (ProcessLookupError, PermissionError):
            # ESRCH: the group is empty; EPERM: only others' processes are left in it.
            return False
        return True


def _pgid(proc: psutil.Process) -> int | None:
    info = getattr(proc, "info", None)
    if isinstance(info, dict) and info.get("pgid") is not None:
        return int(info["pgid"])
    return proctable.os_id(os.getpgid, proc.pid)


def _unreaped(pid: int | None) -> psutil.Process | None:
    try:
        return None if pid is None else psutil.Process(pid)
    except psutil.Error:  # reaped already
        return None


def _send(proc: psutil.Process, sig: int) -> bool:
    """Signal ``proc`` unless it exited or its pid was reused; True if sent."""
    try:
        proc.send_signal(sig)  # checks the create time first: no stray kill on pid reuse
    except psutil.NoSuchProcess:  # exited between scan and kill (zombies included)
        return False
    except psutil.AccessDenied:  # not ours to signal; it will show up as a survivor
        return False
    return True


def _is_alive(proc: psutil.Process) -> bool:
    """Running and not a zombie; a zombie is gone, its owner reaps it."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # cannot tell: assume it still runs rather than report it gone
