"""Find and end every process a session started (SPEC section 5).

A session's processes are found three ways, because each alone misses some:

- the leader and its descendants (the ordinary tree);
- every process in the leader's session (``getsid() == sid``), which catches
  processes whose parent already exited and that were re-parented;
- every process of our uid whose inherited environment carries the session's
  marker ``AGENTD_SESSION_ID=<marker>``, plus their descendants, which catches
  double-forked ``setsid`` daemons that left both the tree and the session.

Ending follows circus/psutil: snapshot first, then signal bottom-up (children
before parents, so no parent can respawn a killed child), poll every 0.1 s until
``grace``, then SIGKILL what is left, re-scanning for processes forked while
dying. Nothing here waits for or reaps a process: the leader belongs to
ptyprocess and orphans to the reaper, so "gone" means "not running or zombie".
Nothing here blocks the event loop either: waits are ``asyncio.sleep``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

import psutil

MARKER_VAR = "AGENTD_SESSION_ID"

RESCAN_EVERY = 0.5  # s between re-scans while waiting: catch children forked while dying
KILL_ROUND = 1.0  # s to wait for SIGKILLed processes before scanning and killing again
KILL_BUDGET = 5.0  # s of SIGKILL rounds before giving up and reporting survivors

# One /proc pass reads these for every process; environ is read only for our uid.
_SCAN_ATTRS = ["pid", "ppid", "uids", "status"]

OnSignal = Callable[[int, list[int]], None]


@dataclass
class EndResult:
    """What ending a session's tree did; ``survivors`` is empty on success."""

    signalled: list[int]  # got the stop signal
    killed: list[int]  # got SIGKILL (after grace, or found while killing)
    survivors: list[int]  # still running when we gave up (D state, other uid...)
    duration_s: float


def session_env_marker(unit: str, session: int) -> str:
    """A marker unique to one session, for ``AGENTD_SESSION_ID``.

    ``AGENTD_MARKER_PREFIX`` is prepended so that the test suite (which sets it
    to ``t<pytest pid>-``) can find any process that escaped a test.
    """
    prefix = os.environ.get("AGENTD_MARKER_PREFIX", "")
    return f"{prefix}{unit}:{session}:{secrets.token_hex(6)}"


def find_session_processes(
    *,
    leader: int | None,
    marker: str,
    sid: int | None,
    exclude: Collection[int] = (),
) -> list[psutil.Process]:
    """A snapshot of the session's live processes (zombies and vanished ones skipped).

    Pass ``leader`` only while it is unreaped (alive or a zombie), so its pid
    cannot have been reused; once ptyprocess has reaped it pass None: ``sid``
    and ``marker`` still find the rest. ``marker=""`` skips the environ scan.

    Never contains this process, its ancestors or ``exclude``. Raises
    ValueError if ``sid`` is our own session or group: ending it would take
    down the daemon's siblings.
    """
    _refuse_own_session(sid)
    table = {p.pid: p for p in psutil.process_iter(_SCAN_ATTRS)}
    roots = _roots(table, leader=leader, marker=marker, sid=sid)
    members = _with_descendants(roots, _children_map(table))
    members -= _protected(table, exclude)
    return [table[pid] for pid in sorted(members) if pid in table and _live_row(table[pid])]


def order_bottom_up(procs: Iterable[psutil.Process]) -> list[psutil.Process]:
    """Deepest descendants first; processes unrelated within ``procs`` keep their order."""
    procs = list(procs)
    parent = {p.pid: _ppid(p) for p in procs}
    return sorted(procs, key=lambda p: -_depth(p.pid, parent))


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
) -> EndResult:
    """Send ``sig`` to every process of the session, SIGKILL what is left after ``grace``.

    ``on_signal(sig, pids)`` is called for each batch signalled; it must not
    raise. If this coroutine is cancelled (or fails) midway, everything found
    so far is SIGKILLed before the exception propagates: a session's processes
    must never outlive it.
    """
    _refuse_own_session(sid)
    started = time.monotonic()
    ending = _Ending(leader=leader, marker=marker, sid=sid, exclude=exclude, on_signal=on_signal)
    try:
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
    ) -> None:
        self._leader = leader
        self._marker = marker
        self._sid = sid
        self._exclude = exclude
        self._on_signal = on_signal
        self._tracked: dict[int, psutil.Process] = {}
        self.signalled: list[int] = []
        self.killed: list[int] = []

    def scan_new(self) -> list[psutil.Process]:
        """Re-scan; track and return the processes not seen before."""
        fresh = []
        found = find_session_processes(
            leader=self._leader, marker=self._marker, sid=self._sid, exclude=self._exclude
        )
        for proc in found:
            # psutil compares (pid, create time): a reused pid is a new process.
            if self._tracked.get(proc.pid) != proc:
                self._tracked[proc.pid] = proc
                fresh.append(proc)
        return fresh

    def alive(self) -> list[psutil.Process]:
        """Tracked processes still running; forget the rest."""
        self._tracked = {pid: p for pid, p in self._tracked.items() if _is_alive(p)}
        return list(self._tracked.values())

    def send(self, procs: Iterable[psutil.Process], sig: int, record: list[int]) -> None:
        """Signal ``procs`` bottom-up and the session's group; note who got it."""
        ordered = order_bottom_up(procs)
        sent = [proc.pid for proc in ordered if _send(proc, sig)]
        self._signal_group(sig)
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
        while True:
            if not self.alive():
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
            await asyncio.sleep(max(0.0, min(poll, deadline - now)))

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

    def _signal_group(self, sig: int) -> None:
        # Also catches a process forked into the group between scan and signal.
        # The sid is the leader's pid, hence also its group's id; the kernel does
        # not hand that number to a new process while any member still lives.
        if self._sid is None:
            return
        # ESRCH: the group is empty; EPERM: only others' processes are left in it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._sid, sig)


def _refuse_own_session(sid: int | None) -> None:
    if sid is not None and (sid <= 1 or sid in (os.getsid(0), os.getpgid(0))):
        raise ValueError(f"refusing to end session/group {sid}: it is agentd's own")


def _roots(
    table: dict[int, psutil.Process], *, leader: int | None, marker: str, sid: int | None
) -> set[int]:
    roots = {leader} if leader is not None else set()
    uid = os.getuid()
    for pid, proc in table.items():
        if (sid is not None and _sid_of(pid) == sid) or (
            marker and _same_uid(proc, uid) and _has_marker(proc, marker)
        ):
            roots.add(pid)
    return roots


def _sid_of(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:  # vanished since the listing
        return None


def _same_uid(proc: psutil.Process, uid: int) -> bool:
    uids = proc.info.get("uids")
    return uids is not None and uids.real == uid


def _has_marker(proc: psutil.Process, marker: str) -> bool:
    # The expensive read (a /proc/PID/environ per process), so done last.
    try:
        return proc.environ().get(MARKER_VAR) == marker
    except psutil.Error:  # vanished, zombie, or not readable
        return False


def _children_map(table: dict[int, psutil.Process]) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for pid, proc in table.items():
        ppid = proc.info.get("ppid")
        if ppid is not None:
            children.setdefault(ppid, []).append(pid)
    return children


def _with_descendants(roots: set[int], children: dict[int, list[int]]) -> set[int]:
    # Built from the one snapshot: psutil's children(recursive=True) would
    # re-read all of /proc for every root.
    members: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid not in members:
            members.add(pid)
            todo.extend(children.get(pid, ()))
    return members


def _protected(table: dict[int, psutil.Process], exclude: Collection[int]) -> set[int]:
    """This process, its ancestors, ``exclude`` and pids 0/1: never signalled."""
    lineage: set[int] = set()
    pid: int | None = os.getpid()
    while pid is not None and pid not in lineage:
        lineage.add(pid)
        proc = table.get(pid)
        pid = proc.info.get("ppid") if proc is not None else None
    return {0, 1, *lineage, *exclude}


def _live_row(proc: psutil.Process) -> bool:
    return proc.info.get("status") != psutil.STATUS_ZOMBIE


def _ppid(proc: psutil.Process) -> int | None:
    # Prefer the snapshot's parent: the tree as it was before anything died.
    info = getattr(proc, "info", None)
    if isinstance(info, dict) and info.get("ppid") is not None:
        return int(info["ppid"])
    try:
        return proc.ppid()
    except psutil.Error:
        return None


def _depth(pid: int, parent: dict[int, int | None]) -> int:
    """How many ancestors of ``pid`` are in ``parent`` (guarded against cycles)."""
    depth, seen = 0, {pid}
    up = parent.get(pid)
    while up is not None and up in parent and up not in seen:
        seen.add(up)
        depth += 1
        up = parent[up]
    return depth


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
