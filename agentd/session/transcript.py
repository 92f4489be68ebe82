"""The raw transcript of a unit's sessions: ``logs/UNIT/transcript.log``.

Every byte the agent writes to its pty is appended as it arrives, after
secrets are replaced by ``***``, and the file is rotated by
size: ``transcript.log`` -> ``transcript.log.1`` -> ... -> ``transcript.log.N``,
the oldest is deleted (no backups: the file starts empty again). A transcript
deleted or moved away (logrotate) is noticed within ``RECHECK`` seconds, at
each session's start and end, and on ``reopen`` (SIGHUP): it is created again.

The ``Redactor`` (``agentd.session.redact``) is pure (bytes in, bytes out);
``Transcript`` is the thin I/O shell around it.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from agentd.events import WriteHealth
from agentd.fileio import replaced, rotate
from agentd.session.redact import Redactor

RECHECK = 1.0  # seconds between looks at whether the file is still at its path


def _make_dirs(path: Path) -> None:
    """Create missing directories with mode 0700 (``mkdir(parents=True)``
    would give the intermediate ones the umask default)."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by someone else
            d.mkdir(mode=0o700)


class Transcript:
    """Appends a session's output to ``path``, redacted and rotated by size.

    ``max_bytes <= 0`` means never rotate. A file never exceeds ``max_bytes``
    unless a single write is larger (then that write gets a file of its own).
    A write that fails (a full disk) never raises: what it held is lost, the
    failure goes to ``health`` as ``what``, and the next write tries again.
    """

    def __init__(
        self,
        path: Path,
        *,
        max_bytes: int,
        backups: int,
        redactor: Redactor | None = None,
        health: WriteHealth | None = None,
        what: str = "transcript",
    ) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = max(0, backups)
        self._redactor = redactor
        self._health = health
        self._what = what
        self._fd: int | None = None
        self._size = 0
        self._recheck_at = 0.0

    def write(self, data: bytes) -> None:
        if self._redactor is not None:
            data = self._redactor.redact(data)
        self._append(data)

    def write_reads(self, reads: list[bytes], joined: bytes) -> None:
        """``reads`` in a row (``joined``: all of them), redacted as one (the same
        bytes as read by read) and written in one go where they fit in the file;
        else about read by read, so that the file rotates between them."""
        data = self._redactor.redact(joined) if self._redactor is not None else joined
        if self.max_bytes <= 0 or self._size + len(data) <= self.max_bytes or len(reads) < 2:
            self._append(data)
            return
        at = 0
        for read in reads[:-1]:
            self._append(data[at : at + len(read)])
            at += len(read)
        self._append(data[at:])

    def note(self, text: str) -> None:
        """A marker line, e.g. ``--- agentd 2026-11-30T14:32:00Z session 3 started ---``."""
        if self._redactor is not None:
            self._append(self._redactor.flush())  # keep the order of bytes
            text = self._redactor.redact_text(text)
        self._recheck_at = 0.0  # a session starts or ends: look whether the file is there
        self._append(f"\n--- agentd {text} ---\n".encode())

    def reopen(self) -> None:
        """Open the path again at the next write (SIGHUP: logrotate moved the file)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        if self._redactor is not None:
            self._append(self._redactor.flush())
        self.reopen()

    def __enter__(self) -> Transcript:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _append(self, data: bytes) -> None:
        if not data:
            return
        try:
            self._write(data)
        except OSError as exc:
            self._recheck_at = 0.0  # look at the file again next time
            if self._health is None:
                raise
            self._health.failed(self._what, self.path, exc)
            return
        if self._health is not None:
            self._health.ok(self._what)

    def _write(self, data: bytes) -> None:
        fd = self._open()
        if self.max_bytes > 0 and self._size and self._size + len(data) > self.max_bytes:
            self._rotate()
            fd = self._open()
        view = memoryview(data)
        while view:  # a regular file may take less than asked
            n = os.write(fd, view)
            view = view[n:]
        self._size += len(data)

    def _open(self) -> int:
        if self._fd is not None and time.monotonic() >= self._recheck_at:
            self._recheck_at = time.monotonic() + RECHECK
            if replaced(self.path, self._fd):  # deleted or moved away: a new file
                self.reopen()
        if self._fd is None:
            _make_dirs(self.path.parent)
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
            self._fd = os.open(self.path, flags, 0o600)
            os.fchmod(self._fd, 0o600)  # an older file may have had a wider mode
            self._size = os.fstat(self._fd).st_size
        return self._fd

    def _rotate(self) -> None:
        """transcript.log -> .1 -> ... -> .N; with no backups, start it empty."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        rotate(self.path, self.backups)


def read_tail(path: Path, lines: int) -> tuple[str, int]:
    """The last ``lines`` lines of the transcript at ``path`` (raw, each ending in a
    newline) and the file's size, where following it goes on; empty when missing."""
    from agentd.fileio import tail_lines

    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            found, _ = tail_lines(f, lines)
    except FileNotFoundError:
        return "", 0
    return "".join(f"{line}\n" for line in found), size
