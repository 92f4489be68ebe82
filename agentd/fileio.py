"""Files, safely: atomic replaces, appends, locks, rotation and tails.

Plumbing that every layer shares and none owns (a leaf: it imports nothing of
agentd but ``agentd.errors``):

- a file is replaced so that readers see the old or the new one, never a torn
  one, even across a crash (``write_atomic``); logs that only grow are
  appended to in one write (``append_line``);
- the writers of a directory (agents running ``agentctl state``, agentd
  retiring a handoff) take turns under an ``flock`` that goes with the
  process (``locked``); a lock file says who holds it (``hold``);
- log files rotate by size and notice being deleted or moved away
  (``rotate``, ``replaced``);
- the end of a file is read backwards, its cost set by the tail, not the file
  (``tail_lines``, ``tail_window``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from agentd.errors import AgentdError

# -- writes -----------------------------------------------------------------------

LOCK_NAME = ".lock"  # writers of the state dir hold an flock on it
# the agentd whose unit uses the state dir holds this one while the unit runs (``hold``)
OWNER_LOCK_NAME = ".agentd.lock"
LOCK_TIMEOUT = 10.0


def write_atomic(path: Path, data: str | bytes, mode: int = 0o644, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new
    file, never a torn one, even across a crash: temp file in the same dir,
    fsync, rename, fsync the dir (the rename itself must reach the disk).

    ``durable=False`` skips both fsyncs, for what a reboot makes moot (a
    session's bootstrap, the record of the session running now): readers,
    and an agentd started after a ``kill -9``, still see the old or the new
    file; only a power cut may lose the newer one."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    # as tempfile.mkstemp does (O_EXCL, 0600), without importing tempfile
    tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fchmod(f.fileno(), mode)
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(path.parent)


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


def fsync_dir(directory: Path) -> None:
    """Make a file's creation, rename or removal in ``directory`` durable (best effort)."""
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # some platforms cannot open a dir; the rename is still atomic
    try:
        with contextlib.suppress(OSError):
            os.fsync(dfd)
    finally:
        os.close(dfd)


# -- lock files: exclusive flock'd files that say who holds them (``PID TEXT``) ----
# The fd is close-on-exec, so sessions never inherit a lock: sessions left by
# a ``kill -9``-ed agentd cannot keep its successor from taking it.


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
        try:  # who: what the holder wrote (SMB's locks are mandatory: a read may fail)
            holder = os.read(fd, 4096).decode("utf-8", "replace").split(maxsplit=1)
        except OSError:
            holder = []
        os.close(fd)
        raise Held(
            path, holder[0] if holder else "?", holder[1].strip() if len(holder) > 1 else ""
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()} {note}\n".encode())
    return fd


def release(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)  # closing the fd drops the flock


# -- log files that rotate by size and notice being deleted or moved away ----------
# ``rotate`` shifts ``NAME`` -> ``NAME.1`` -> ... -> ``NAME.N`` (the oldest is
# dropped; with no backups the file starts empty again). ``replaced`` tells a
# writer that the file it holds open is no longer at its path (someone deleted
# it, or logrotate moved it): the writer opens the path again, as it does on
# SIGHUP, so its lines do not vanish into an unlinked file.


def rotate(path: Path, backups: int) -> None:
    """``path`` -> ``path.1`` -> ... -> ``path.backups``; truncated when ``backups`` is 0."""
    with contextlib.suppress(FileNotFoundError):  # deleted meanwhile: nothing to keep
        if backups <= 0:
            os.truncate(path, 0)
            return
        name = str(path)
        for i in range(backups - 1, 0, -1):
            if os.path.exists(f"{name}.{i}"):
                os.replace(f"{name}.{i}", f"{name}.{i + 1}")
        os.replace(name, f"{name}.1")


def replaced(path: Path, fd: int) -> bool:
    """Is the file open at ``fd`` no longer the one at ``path`` (deleted or moved)?"""
    try:
        there = os.stat(path)
    except FileNotFoundError:
        return True
    held = os.fstat(fd)
    return (there.st_dev, there.st_ino) != (held.st_dev, held.st_ino)


# -- tails: the end of a file, read backwards -------------------------------------

# A tail never reads more than this many bytes, whatever the line lengths:
# 10 lines of a log are useful, 10 lines of a 1 GB minified blob are not.
TAIL_MAX_BYTES = 1 << 20
_BLOCK = 8192


def tail_lines(f: BinaryIO, n: int, max_bytes: int = TAIL_MAX_BYTES) -> tuple[list[str], int]:
    """The last ``n`` lines of the seekable binary file ``f`` and the byte
    offset where the first of them starts.

    Reads backwards in blocks until it has seen the ``n`` line breaks that
    delimit the tail, so the cost depends on the tail, not on the file size.
    A final line without a newline counts as a line; the file's final newline
    does not start an empty one. At most ``max_bytes`` are read: past that the
    first line returned may be only the end of a longer line. Bytes are decoded
    as UTF-8 with replacement, so a broken byte never raises.
    """
    end = f.seek(0, os.SEEK_END)
    if n <= 0 or end == 0:
        return [], end
    f.seek(end - 1)
    final_nl = f.read(1) == b"\n"
    pos, newlines = end, 0
    chunks: list[bytes] = []
    # The tail is complete once n newlines precede its last line, not
    # counting the file's final newline.
    while pos > 0 and end - pos < max_bytes and newlines < n:
        step = min(_BLOCK, pos, max_bytes - (end - pos))
        pos -= step
        f.seek(pos)
        chunk = f.read(step)
        last = pos + step == end and final_nl  # this chunk holds the file's final newline
        newlines += chunk.count(b"\n", 0, len(chunk) - 1 if last else len(chunk))
        chunks.append(chunk)
    body = b"".join(reversed(chunks))
    if final_nl:
        body = body[:-1]
    parts = body.split(b"\n")
    keep = parts[-n:]
    start = pos + len(body) - sum(len(p) for p in keep) - (len(keep) - 1)
    return [p.decode("utf-8", "replace").rstrip("\r") for p in keep], start


def tail_window(f: BinaryIO, least: int, more_bytes: int) -> tuple[list[str], int]:
    """The last ``least`` lines of ``f`` (``tail_lines``) and, before them, as
    many more whole lines as the last ``more_bytes`` bytes hold: what a record
    may show when the budget has room. Returns the lines and where the first starts."""
    lines, start = tail_lines(f, least)
    end = f.seek(0, os.SEEK_END)
    begin = max(end - max(more_bytes, 0), 0)
    if begin >= start:
        return lines, start
    f.seek(begin)
    data = f.read(start - begin)
    if begin > 0:  # the window starts inside a line unless a newline is right before it
        f.seek(begin - 1)
        if f.read(1) != b"\n":
            cut = data.find(b"\n")
            data = data[cut + 1 :] if cut >= 0 else b""
    more = [p.decode("utf-8", "replace").rstrip("\r") for p in data.split(b"\n")[:-1]]
    return more + lines, start - len(data)
