"""Reading a file the agent's CLI writes, as it grows: bounded, and only if it is a
regular file inside the CLI's own directory.

The agent's process writes these files, so they are read as the state dir is
(``agentd.memory.statedir``): never a FIFO (its open would block), a device
or a socket; never through a symbolic link that leads out of the CLI's
directory (``~/.claude``, ``$CODEX_HOME``...: a link to ``/etc/shadow`` is
refused, one inside is followed); the last path component is opened with
``O_NOFOLLOW`` once resolved, so a link swapped in meanwhile is refused too.

``Follower`` reads what was appended since its last read, line by line, at
most ``PASS_BYTES`` per read during a session and ``MAX_BYTES`` over a whole
session (past that it stops and says so); a line longer than ``MAX_LINE`` is
skipped without being held in memory; a line that is not JSON is counted and
skipped. A file that shrank or was replaced is read again from its start. For
a fold whose newest records hold its totals (``cumulative``) a file far
behind is read from near its end instead.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, BinaryIO

from agentd.memory.statedir import NotReadable, check_inside, open_regular
from agentd.supervisor.usage.formats import Fold

CHUNK = 1 << 20
PASS_BYTES = 32 << 20  # per read while the session runs
MAX_BYTES = 256 << 20  # per file and session: a larger one is not read to its end
MAX_LINE = 8 << 20  # a longer line is skipped (no usage record is that long)
TAIL_BYTES = 8 << 20  # a cumulative file further behind than this is read from its last part
HEAD_BYTES = 1 << 20  # the first line of a file, read to identify it


def open_inside(root: Path, path: Path) -> BinaryIO:
    """``path`` opened for reading if, links resolved, it is a regular file inside
    ``root`` (NotReadable if not; OSError if it cannot be opened)."""
    real = Path(os.path.realpath(path))
    check_inside(root, real)
    return open_regular(real, follow=False)


def first_line(root: Path, path: Path) -> Any:
    """The first line of ``path`` as JSON (None if it is not JSON or not complete yet)."""
    with open_inside(root, path) as f:
        head = f.read(HEAD_BYTES)
    line, newline, _ = head.partition(b"\n")
    if not newline:
        return None
    try:
        return json.loads(line)
    except ValueError:
        return None


class Follower:
    """One record file of a session, read as it grows into ``fold``."""

    def __init__(self, path: Path, root: Path, fold: Fold, *, offset: int = 0) -> None:
        self.path = path
        self.root = root
        self.fold = fold
        self._fresh = type(fold)  # a new fold when the file is replaced
        self.offset = offset
        self.read_bytes = 0
        self.bad_lines = 0  # not JSON
        self.long_lines = 0  # longer than MAX_LINE
        self.capped = False  # MAX_BYTES reached: the rest is not read
        self.skipped = False  # a cumulative file read from near its end
        self._buffer = bytearray()
        self._skipping = False  # inside a line too long to keep
        self._ident: tuple[int, int] | None = None

    def read(self, limit: int = PASS_BYTES, *, final: bool = False) -> None:
        """Read what was appended since the last read (at most ``limit`` bytes);
        ``final``: the file is complete, a last line without its newline counts."""
        with open_inside(self.root, self.path) as f:
            st = os.fstat(f.fileno())
            ident = (st.st_dev, st.st_ino)
            if self._ident is not None and (ident != self._ident or st.st_size < self.offset):
                self._restart()  # replaced, or truncated and written again
            self._ident = ident
            behind = st.st_size - self.offset
            if self.fold.cumulative and behind > TAIL_BYTES + PASS_BYTES:
                self.offset = st.st_size - TAIL_BYTES
                self._buffer.clear()
                self._skipping = True  # from the next line start on
                self.skipped = True
            left = min(limit, MAX_BYTES - self.read_bytes)
            f.seek(self.offset)
            while left > 0:
                data = f.read(min(CHUNK, left))
                if not data:
                    break
                left -= len(data)
                self.offset += len(data)
                self.read_bytes += len(data)
                self._lines(data)
            if self.read_bytes >= MAX_BYTES and self.offset < st.st_size:
                self.capped = True
        if final and self._buffer and not self._skipping:
            self._line(bytes(self._buffer))
            self._buffer.clear()

    def _restart(self) -> None:
        self.fold = self._fresh()
        self.offset = 0
        self._buffer.clear()
        self._skipping = False

    def _lines(self, data: bytes) -> None:
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                rest = data[start:]
                if self._skipping or not rest:
                    return
                if len(self._buffer) + len(rest) > MAX_LINE:
                    self._buffer.clear()
                    self._skipping = True
                    self.long_lines += 1
                    return
                self._buffer += rest
                return
            piece = data[start:end]
            start = end + 1
            if self._skipping:  # the end of a line that was too long (or cut)
                self._skipping = False
                continue
            if self._buffer:
                self._buffer += piece
                line = bytes(self._buffer)
                self._buffer.clear()
            else:
                line = piece
            if len(line) > MAX_LINE:
                self.long_lines += 1
                continue
            self._line(line)

    def _line(self, line: bytes) -> None:
        if not any(marker in line for marker in self.fold.markers):
            return
        try:
            record = json.loads(line)
        except ValueError:  # a torn or hostile line
            self.bad_lines += 1
            return
        if isinstance(record, dict):
            self.fold.feed(record)

    @property
    def shortfall(self) -> str | None:
        """Why what was read may be short of the file, if it may."""
        if self.capped:
            return f"{self.path} is larger than {MAX_BYTES >> 20} MiB: only its start was read"
        if self.skipped and not self.fold.cumulative:
            return f"only the end of {self.path} was read"
        return None


__all__ = ["Follower", "NotReadable", "first_line", "open_inside"]
