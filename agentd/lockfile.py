"""Exclusive flock'd files that say who holds them (``PID TEXT``).

The fd is close-on-exec, so sessions never inherit a lock: sessions left by
a ``kill -9``-ed agentd cannot keep its successor from taking it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class Held(Exception):
    """Someone else holds the lock; ``pid`` and ``note`` are what they wrote."""

    def __init__(self, path: Path, pid: str, note: str) -> None:
        self.path, self.pid, self.note = path, pid, note
        super().__init__(f"{path} is held by pid {pid}")


def hold(path: Path, note: str = "") -> int:
    """Take the lock at ``path`` (creating it 0600) and write ``PID NOTE``; its fd."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 4096).decode("utf-8", "replace").split(maxsplit=1)
        os.close(fd)
        raise Held(path, holder[0] if holder else "?",
                   holder[1].strip() if len(holder) > 1 else "") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()} {note}\n".encode())
    return fd


def release(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)  # closing the fd drops the flock
