"""One fast pass over the process table, for ``tree`` (finding a session's processes).

On Linux ``scan()`` reads each process's ``/proc/PID/stat`` once, with raw
``os`` calls (parent, group, session, state, start time): ~11 us a process,
most of it the kernel's, against ~120 us for ``psutil.process_iter`` with the
same fields. Elsewhere the same table comes from psutil.

Session markers (``AGENTD_SESSION_ID``) are found by reading environments, the
costly part. A process can only inherit a marker once the marker exists, so
``remember(marker)`` notes when this process made one, and ``may_carry`` lets
the scan skip every older process (most of a desktop's). Markers made
elsewhere (from history, after a daemon restart) are looked for everywhere.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import NamedTuple

import psutil

PROC = "/proc"
LINUX_PROC = sys.platform.startswith("linux") and os.path.isdir(f"{PROC}/self/task")
CLK_TCK = os.sysconf("SC_CLK_TCK") if LINUX_PROC else 100

BORN_KEEP = 1024  # markers remembered (a session ends long before 1024 more start)
BORN_SLACK_S = 1.0  # also read processes started this long before the marker
_BORN: dict[str, int] = {}  # marker -> boot_ticks() when it was made

# Without a Linux /proc, one psutil pass reads these for every process.
_SCAN_ATTRS = ["pid", "ppid", "uids", "status"]
# /proc/PID/stat state letters that matter here (the rest: "some live state").
_STATES = {b"Z": psutil.STATUS_ZOMBIE, b"X": psutil.STATUS_DEAD, b"T": psutil.STATUS_STOPPED}


class Row(NamedTuple):
    """One process in a scan of the process table."""

    ppid: int | None
    pgid: int | None
    sid: int | None
    uid: int | None  # real uid (psutil); None: ask ``uid_of`` when it matters
    status: str  # psutil.STATUS_*; only zombies matter to tree and ending
    born: int | None = None  # start time in clock ticks since boot (Linux)

    @property
    def zombie(self) -> bool:
        return self.status == psutil.STATUS_ZOMBIE


def scan() -> dict[int, Row]:
    """pid -> Row for every process; ones that vanish during the pass are left out."""
    return _scan_proc() if LINUX_PROC else _scan_psutil()


def _scan_proc() -> dict[int, Row]:
    table: dict[int, Row] = {}
    proc_fd = os.open(PROC, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in os.listdir(proc_fd):
            if not name.isdigit():
                continue
            try:
                data = _read(f"{name}/stat", dir_fd=proc_fd, size=1024)
            except OSError:  # vanished since the listing
                continue
            # "pid (comm) state ppid pgrp session ... starttime(22nd) ...": comm
            # may hold spaces and ")", so split after its last ")".
            fields = data[data.rfind(b")") + 2 :].split(b" ", 20)
            if len(fields) < 20:
                continue
            state = _STATES.get(fields[0], psutil.STATUS_RUNNING)
            table[int(name)] = Row(
                int(fields[1]), int(fields[2]), int(fields[3]), None, state, int(fields[19])
            )
    finally:
        os.close(proc_fd)
    return table


def _scan_psutil() -> dict[int, Row]:
    table: dict[int, Row] = {}
    for proc in psutil.process_iter(_SCAN_ATTRS):
        uids = proc.info.get("uids")
        pid = proc.pid
        table[pid] = Row(
            proc.info.get("ppid"),
            os_id(os.getpgid, pid),
            os_id(os.getsid, pid),
            uids.real if uids is not None else None,
            proc.info.get("status") or psutil.STATUS_RUNNING,
        )
    return table


def os_id(get: Callable[[int], int], pid: int) -> int | None:
    """``os.getpgid(pid)``/``os.getsid(pid)``, None if it vanished."""
    try:
        return get(pid)
    except OSError:
        return None


def uid_of(pid: int, row: Row) -> int | None:
    """The row's uid, or the owner of /proc/PID (its effective uid)."""
    if row.uid is not None:
        return row.uid
    try:
        return os.stat(f"{PROC}/{pid}").st_uid
    except OSError:  # vanished since the listing
        return None


# --- markers --------------------------------------------------------------------------
def boot_ticks() -> int | None:
    """Now, in the unit of /proc/PID/stat's start time (clock ticks since boot)."""
    if not LINUX_PROC:
        return None
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * CLK_TCK)


def remember(marker: str) -> None:
    """Note that ``marker`` was made now (call before any process can inherit it)."""
    born = boot_ticks()
    if born is None:
        return
    _BORN[marker] = born
    while len(_BORN) > BORN_KEEP:
        del _BORN[next(iter(_BORN))]  # the oldest: its session ended long ago


def carriers_since(marker: str) -> int | None:
    """The earliest start time of a process that may carry ``marker`` (None: any)."""
    born = _BORN.get(marker)
    return None if born is None else born - int(BORN_SLACK_S * CLK_TCK)


def may_carry(row: Row, since: int | None) -> bool:
    """Could the process carry a marker whose carriers start at ``since``? (unknown: yes)"""
    return since is None or row.born is None or row.born >= since


def has_marker(pid: int, var: str, marker: str) -> bool:
    """Whether ``pid``'s environment sets ``var`` to ``marker`` (the last setting wins)."""
    if not LINUX_PROC:
        try:
            return psutil.Process(pid).environ().get(var) == marker
        except psutil.Error:  # vanished, zombie, or not readable
            return False
    try:
        data = _read(f"{PROC}/{pid}/environ")
    except OSError:  # vanished, or not readable
        return False
    entry = f"{var}={marker}".encode()
    if entry not in data:
        return False
    # As psutil's environ(): NUL-separated NAME=VALUE pairs, the last one wins.
    prefix, value = f"{var}=".encode(), None
    for item in data.split(b"\0"):
        if item.startswith(prefix):
            value = item[len(prefix) :]
    return value == marker.encode()


def _read(path: str, *, dir_fd: int | None = None, size: int = 0) -> bytes:
    """The file's bytes (the first ``size`` if given), without Python's file objects."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        if size:
            return os.read(fd, size)
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
