"""Become a child subreaper (Linux) and reap the orphans that adopts.

As a subreaper, agentd inherits every orphan a session leaves (a double-forked
daemon whose parent exited) instead of init, so ``process.ending`` can end it and this
module can reap it: no zombies. Each pid has one owner (STYLE point 2):
ptyprocess reaps session leaders, asyncio/subprocess reap their own children;
``Reaper`` only reaps children that ``owned(pid)`` says nobody else waits for,
and finds them per pid, never with ``waitpid(-1)``, which would steal.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable

import psutil

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
PR_GET_CHILD_SUBREAPER = 37
# prctl is variadic and reads its arguments as unsigned longs: pass full-width values.
_ULONG = ctypes.c_ulong


def enable_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process; False if unsupported."""
    libc = _libc()
    if libc is None:
        return False
    ok: bool = libc.prctl(PR_SET_CHILD_SUBREAPER, _ULONG(1), _ULONG(0), _ULONG(0), _ULONG(0)) == 0
    return ok


def is_subreaper() -> bool:
    """Whether this process is a child subreaper (False where that does not exist)."""
    libc = _libc()
    if libc is None:
        return False
    flag = ctypes.c_int(0)
    rc = libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), _ULONG(0), _ULONG(0), _ULONG(0))
    return rc == 0 and bool(flag.value)


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        _ = libc.prctl  # a libc without prctl (unlikely, e.g. a static shim) raises here
    except (OSError, AttributeError):
        return None
    return libc


class Reaper:
    """Reaps exited children of this process that no one else owns.

    ``owned(pid)`` must be true for every child some other code will wait for:
    session leaders (ptyprocess) and subprocesses of asyncio or ``subprocess``.
    It must be true from the moment the pid exists, so register a pid right
    after a synchronous spawn (pexpect.spawn, subprocess.Popen) with no await
    in between; ``asyncio.create_subprocess_*`` yields to the loop between fork
    and return, so a SIGCHLD callback could reap its child first.
    Call ``reap()`` on SIGCHLD and after each session end; it never blocks.
    """

    def __init__(self, owned: Callable[[int], bool]) -> None:
        self._owned = owned

    def reap(self) -> list[tuple[int, int]]:
        """Reap exited unowned children; their ``(pid, wait status)`` pairs."""
        reaped: list[tuple[int, int]] = []
        if not hasattr(os, "waitid"):  # e.g. macOS: zombie status from the process list
            for pid in self._exited_unowned():
                self._reap_one(pid, reaped)
            return reaped
        # Fast path: peek (WNOWAIT) at any exited child; an unowned one is
        # reaped and we look again. Owners reap theirs before this runs on
        # SIGCHLD, so an owned zombie here is rare: then list children one by one.
        while (exited := _peek_any()) is not None and not self._owned(exited):
            if not self._reap_one(exited, reaped):
                break
        if exited is None:
            return reaped
        for pid in self._exited_unowned():
            self._reap_one(pid, reaped)
        return reaped

    @staticmethod
    def _reap_one(pid: int, reaped: list[tuple[int, int]]) -> bool:
        try:
            got, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # reaped by someone else in between
            return False
        if got == pid:
            reaped.append((pid, status))
        return got == pid

    def _exited_unowned(self) -> list[int]:
        return [pid for pid in _child_pids() if not self._owned(pid) and _has_exited(pid)]


def _peek_any() -> int | None:
    """The pid of some exited child, left unreaped; None if there is none."""
    try:
        info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # no children at all
        return None
    return info.si_pid if info is not None and info.si_pid else None


def _child_pids() -> list[int]:
    try:
        return [child.pid for child in psutil.Process().children()]
    except psutil.Error:
        return []


def _has_exited(pid: int) -> bool:
    """Peek whether child ``pid`` exited, leaving it unreaped (WNOWAIT)."""
    if not hasattr(os, "waitid"):  # e.g. macOS: fall back to the zombie status
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # not our child (any more)
        return False
