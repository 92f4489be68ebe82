"""Writing the state dir: atomic replaces, one-write appends, and the writers' lock.

A file is replaced so that readers see the old or the new one, never a torn
one, even across a crash; logs that only grow are appended to in one write;
writers (agents running ``agentctl state``, agentd retiring a handoff) take
turns under an ``flock`` that goes with the process.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from agentd.errors import AgentdError

LOCK_NAME = ".lock"  # writers of the state dir hold an flock on it
LOCK_TIMEOUT = 10.0


def write_atomic(path: Path, data: str | bytes, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new
    file, never a torn one, even across a crash: temp file in the same dir,
    fsync, rename, fsync the dir (the rename itself must reach the disk)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    # as tempfile.mkstemp does (O_EXCL, 0600), without importing tempfile
    tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def append_line(path: Path, line: str) -> None:
    """Append ``line`` and a newline to ``path`` in one write, then fsync.

    For logs that only grow (decisions.log), where rewriting the whole file
    for each line would make a long log slow to extend. Callers hold the
    state dir lock, so writers never interleave. A file whose last line was
    torn (no final newline, e.g. after a crash) gets a newline first, so the
    torn line stays on its own and is reported by ``agentctl state check``.
    """
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        size = os.fstat(fd).st_size
        torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
        data = (b"\n" if torn else b"") + line.encode("utf-8") + b"\n"
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


class LockTimeout(AgentdError):
    pass


@contextlib.contextmanager
def locked(state_dir: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the exclusive write lock of ``state_dir`` (``fcntl.flock`` on its
    ``.lock`` file) for the block: two agents writing at once take turns.
    Waits at most ``timeout`` seconds. The lock goes with the process, so a
    writer killed mid-way never leaves the state dir locked."""
    fd = os.open(state_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LockTimeout(
                        f"{state_dir}: another writer has held {LOCK_NAME} for {timeout:g}s; "
                        "try again, or look for a stuck `agentctl state` process"
                    ) from None
                time.sleep(0.005)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _fsync_dir(directory: Path) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # some platforms cannot open a dir; the rename is still atomic
    try:
        with contextlib.suppress(OSError):
            os.fsync(dfd)
    finally:
        os.close(dfd)
