"""The state dir on disk, read cheaply for the bootstrap (writes: ``agentd.fileio``).

Everything here is bounded so that a huge or hostile state dir cannot stall a
restart: tails are read backwards from the end of a file (``fileio.tail_lines``), heads are capped,
hashes read at most ``HASH_MAX_BYTES``, directory walks stop after
``MAX_ENTRIES`` and git runs with a short timeout. Only regular files are
read (``open_regular``): a FIFO would block the open, ``/dev/zero`` never
ends; and ``check_inside`` tells a path that leads out of the state dir (a
symbolic link to ``/etc/shadow``) from one that stays in it.

A check and an open are two moments: an agent that swaps ``scratch.md`` for a
link to a file outside between them would have that file read. So while a
state dir is ``confined`` (the bootstrap is rendered so), a file under it is
opened from the state dir's own descriptor one component at a time
(``openat``), none of them followed if it is a link: a link is read and
resolved by hand, and one that leads above the state dir is refused. Links
that stay inside (``latest.md`` -> ``checkpoint-7.md``) still work.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterator
from contextvars import ContextVar
from itertools import islice
from pathlib import Path
from typing import BinaryIO

from agentd import fileio

# The file agentd itself writes into the state dir (inject mode `file`); it
# changes every session, so it must not count as the agent's progress.
BOOTSTRAP_NAME = "BOOTSTRAP.md"
_AGENTDS = frozenset({BOOTSTRAP_NAME, fileio.OWNER_LOCK_NAME})  # not the agent's files
MAX_ENTRIES = 10_000
_MISSING = "0" * 32  # the fingerprint of a missing state dir (no sha256 prefix is all zeros)
# A readonly file's hash covers at most this much of it (and its size): a 1 GB
# file is not hashed whole on every restart, and the hash of a small one is its sha256.
HASH_MAX_BYTES = 16 << 20
TEXT_MAX_BYTES = 16 << 20  # a state file read whole (to edit it) is at most this big
# hashlib and subprocess are imported where used: `agentctl state next`, which
# agents run after every step, needs neither.


# --- reading -----------------------------------------------------------------


class NotReadable(OSError):
    """A state file agentd will not read: not a regular file, or outside the state dir."""


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: Path, *, follow: bool = True) -> BinaryIO:
    """``path`` opened for reading, if it is a regular file (NotReadable if not).

    Looked at before it is opened, so a device is never opened (opening some
    has effects) and a FIFO never blocks; opened non-blocking all the same
    and looked at again, so a file swapped in between is refused too. Under a
    ``confined`` state dir it is opened beneath it, following no link out.
    ``follow=False``: a symbolic link is refused too, not followed.
    """
    root = _CONFINED.get()
    if root is not None and path.parts[: len(root.parts)] == root.parts:
        return os.fdopen(_open_beneath(root, path.parts[len(root.parts) :], path), "rb")
    before = os.stat(path) if follow else os.lstat(path)
    if stat.S_ISLNK(before.st_mode):
        raise NotReadable(f"{path} is a symbolic link; not followed")
    if not stat.S_ISREG(before.st_mode):
        raise NotReadable(f"{path} is {_kind(before.st_mode)}, not a regular file")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # made a symbolic link since it was looked at
            raise NotReadable(f"{path} is a symbolic link; not followed") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise NotReadable(f"{path} changed while it was opened; not read")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


_CONFINED: ContextVar[Path | None] = ContextVar("agentd_state_dir", default=None)
MAX_LINKS = 40  # links resolved on the way to one file (as the kernel's ELOOP limit)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


@contextlib.contextmanager
def confined(state_dir: Path) -> Iterator[None]:
    """While in the block, files under ``state_dir`` are opened beneath it (see the
    module docstring)."""
    token = _CONFINED.set(Path(os.path.abspath(state_dir)))
    try:
        yield
    finally:
        _CONFINED.reset(token)


def _open_beneath(root: Path, parts: tuple[str, ...], path: Path) -> int:
    """The fd of the regular file at ``parts`` under ``root``: each component opened
    from its directory's fd, no link followed, links inside ``root`` resolved by hand."""
    outside = NotReadable(
        f"{path} leads outside the state dir; not read: state files must be in it"
    )
    todo = list(parts)
    dirs = [os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
    links = 0
    try:
        while todo:
            name = todo.pop(0)
            if name in ("", "."):
                continue
            if name == "..":
                if len(dirs) == 1:
                    raise outside
                os.close(dirs.pop())
                continue
            here = dirs[-1]
            st = os.stat(name, dir_fd=here, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > MAX_LINKS:
                    raise NotReadable(f"{path}: too many symbolic links on the way; not read")
                target = os.readlink(name, dir_fd=here)
                if os.path.isabs(target):
                    raise outside  # a state file's link stays relative to be followed
                todo[:0] = target.split("/")
                continue
            if todo:  # a directory on the way
                if not stat.S_ISDIR(st.st_mode):
                    raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))
                dirs.append(_opened(name, _DIR, here, path))
                continue
            if not stat.S_ISREG(st.st_mode):
                raise NotReadable(f"{path} is {_kind(st.st_mode)}, not a regular file")
            fd = _opened(name, _FILE, here, path)
            found = os.fstat(fd)
            if not stat.S_ISREG(found.st_mode) or (found.st_dev, found.st_ino) != (
                st.st_dev,
                st.st_ino,
            ):
                os.close(fd)
                raise NotReadable(f"{path} changed while it was opened; not read")
            return fd
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    finally:
        for fd in dirs:
            os.close(fd)


def _opened(name: str, flags: int, dir_fd: int, path: Path) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):  # swapped for a link
            raise NotReadable(f"{path} changed while it was opened; not read") from None
        raise


def check_inside(state_dir: Path, path: Path) -> None:
    """NotReadable unless ``path``, symbolic links followed, is inside ``state_dir``."""
    root = os.path.realpath(state_dir)
    real = os.path.realpath(path)
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        raise NotReadable(
            f"{path} leads outside the state dir (to {real}); not read: "
            "state files must be inside it"
        )


def read_text(path: Path, max_bytes: int = TEXT_MAX_BYTES) -> str:
    """A whole state file as UTF-8 text (to edit it); NotReadable past ``max_bytes``."""
    with open_regular(path) as f:
        raw = f.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise NotReadable(f"{path} is larger than {max_bytes >> 20} MiB; not read")
    return raw.decode("utf-8")


def read_end(path: Path, max_bytes: int) -> tuple[str, bool]:
    """The end of a text file (at most ``max_bytes``, from a line start) and
    whether the start was left out: records and free text keep their newest part."""
    with open_regular(path) as f:
        size = f.seek(0, os.SEEK_END)
        if size <= max_bytes:
            f.seek(0)
            return f.read().decode("utf-8", "replace"), False
        f.seek(size - max_bytes - 1)
        data = f.read()
    cut = data.find(b"\n")
    return data[cut + 1 :].decode("utf-8", "replace"), True


def read_tail_lines(path: Path, n: int) -> list[str]:
    """The last ``n`` lines of the file at ``path``, read from its end."""
    with open_regular(path) as f:
        return fileio.tail_lines(f, n)[0]


def count_lines_before(path: Path, offset: int, limit: int) -> int | None:
    """How many newlines precede byte ``offset`` of ``path``, or None when that
    would mean reading more than ``limit`` bytes (callers then count from the end)."""
    if offset > limit:
        return None
    with open_regular(path) as f:
        return f.read(offset).count(b"\n")


def latest_file(directory: Path, limit: int = MAX_ENTRIES) -> tuple[Path | None, int]:
    """The last regular file of ``directory`` by name, numbers by value
    (``snapshot-1000.json`` sorts after ``snapshot-999.json``), and how many
    files it holds."""
    names: list[str] = []
    with os.scandir(directory) as it:
        for i, entry in enumerate(it):
            if i >= limit:
                break
            if entry.is_file() and not entry.name.startswith("."):
                names.append(entry.name)
    return (directory / max(names, key=natural_key) if names else None), len(names)


def natural_key(name: str) -> list[int | str]:
    """Sort key that orders numbers by value: snapshot-1000 after snapshot-999."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def read_head(path: Path, max_bytes: int) -> tuple[str, bool]:
    """The start of a text file (at most ``max_bytes``) and whether it was truncated."""
    with open_regular(path) as f:
        data = f.read(max_bytes + 1)
    truncated = len(data) > max_bytes
    return data[:max_bytes].decode("utf-8", "replace"), truncated


def sha256_file(path: Path, max_bytes: int = HASH_MAX_BYTES) -> str:
    """The sha256 of a regular file; past ``max_bytes``, of its first ``max_bytes``
    and its size (``sha256:SIZE:HEX``): bounded whatever the file."""
    import hashlib

    h = hashlib.sha256()
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        left = max_bytes
        while left > 0 and (block := f.read(min(1 << 16, left))):
            h.update(block)
            left -= len(block)
        more = bool(f.read(1))
    return f"sha256:{size}:{h.hexdigest()}" if more else h.hexdigest()


def iter_files(state_dir: Path, limit: int = MAX_ENTRIES) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, stat) of regular files under ``state_dir``, sorted,
    depth first, without following symlinks, skipping agentd's own
    BOOTSTRAP.md and its owner lock (``fileio.OWNER_LOCK_NAME``), and stopping
    after ``limit`` directory entries."""
    seen = 0
    stack: list[tuple[Path, str]] = [(state_dir, "")]
    while stack:
        directory, prefix = stack.pop()
        try:
            with os.scandir(directory) as it:
                # islice: a dir of a million files must not be listed whole
                entries = sorted(islice(it, limit - seen + 1), key=lambda e: e.name)
        except OSError:
            continue
        subdirs: list[tuple[Path, str]] = []
        for entry in entries:
            seen += 1
            if seen > limit:
                return
            rel = prefix + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append((Path(entry.path), rel + "/"))
                elif entry.is_file(follow_symlinks=False) and rel not in _AGENTDS:
                    yield rel, entry.stat(follow_symlinks=False)
            except OSError:
                continue  # vanished while we looked: it is simply not there
        stack.extend(reversed(subdirs))


def fingerprint(state_dir: Path) -> str:
    """A cheap hash of what is in ``state_dir`` (paths, sizes, mtimes), used to
    tell a session that changed nothing. A missing dir gives a fixed value."""
    if not state_dir.is_dir():
        return _MISSING
    import hashlib

    h = hashlib.sha256()
    for rel, st in iter_files(state_dir):
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:32]


def newest_mtime(state_dir: Path) -> float | None:
    """The newest mtime of the agent's files in ``state_dir`` (None: no files)."""
    return max((st.st_mtime for _, st in iter_files(state_dir)), default=None)
