"""One agent process under a pseudo-terminal: the only module that uses pexpect.

pexpect/ptyprocess give us fork+exec under a new pty as a session leader, the
window size, and the exec-error pipe (a missing binary is an error here, not a
child that dies at once). We do not use ``expect()`` or pexpect's reads: the
session reads the master fd non-blocking from the event loop. ptyprocess owns
the leader pid and reaps it (``poll_exit``); nobody else may waitpid it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

import pexpect

from agentd.errors import SpawnError

READ_SIZE = 65536
# exec errors that the next try would meet again: the unit fails at once
_PERMANENT = frozenset({errno.ENOENT, errno.EACCES, errno.EPERM, errno.ENOEXEC, errno.E2BIG,
                        errno.ENOTDIR, errno.EISDIR, errno.ELOOP, errno.ENAMETOOLONG})


def _reset_signals() -> None:
    # Runs in the child before exec. Python ignores SIGPIPE and SIGXFSZ, and
    # an ignored signal stays ignored across exec: undo that, as subprocess's
    # restore_signals does, so `agent | head` behaves in the child.
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def _not_runnable(program: str, env: Mapping[str, str]) -> str:
    """Why pexpect found nothing to run: the OS error, as exec would have said it."""
    if "/" not in program:
        return f"command not found (searched PATH={env.get('PATH', os.defpath)})"
    if not os.path.exists(program):
        return f"[Errno {errno.ENOENT}] {os.strerror(errno.ENOENT)}"
    if os.path.isdir(program):
        return f"[Errno {errno.EISDIR}] {os.strerror(errno.EISDIR)}"
    return f"[Errno {errno.EACCES}] {os.strerror(errno.EACCES)} (not executable: chmod +x)"


class Child:
    """A spawned agent: ``pid`` (session and group leader) and the pty master ``fd``."""

    def __init__(self, proc: pexpect.spawn) -> None:
        self._proc = proc
        # close() must never sleep on the loop (ptyprocess waits delayafterclose).
        proc.delayafterclose = 0
        proc.ptyproc.delayafterclose = 0
        self.pid: int = proc.pid
        self.fd: int = proc.child_fd
        self.exit_code: int | None = None
        self.signal: int | None = None
        self.reaped = False
        os.set_blocking(self.fd, False)

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        cols: int = 120,
        rows: int = 40,
    ) -> Child:
        """Start ``argv`` in ``cwd``; SpawnError says what could not be started and why."""
        argv = list(argv)
        if "/" in argv[0] and not os.path.isabs(argv[0]):
            argv[0] = str(cwd / argv[0])  # relative to the workdir, not to agentd's cwd
        try:
            proc = pexpect.spawn(
                argv[0],
                argv[1:],
                cwd=str(cwd),
                env=dict(env),
                dimensions=(rows, cols),
                preexec_fn=_reset_signals,
                encoding=None,
            )
        except pexpect.ExceptionPexpect:  # its own lookup found nothing it may run
            raise SpawnError(f"cannot start {argv[0]!r}: {_not_runnable(argv[0], env)}",
                             argv=argv) from None
        except OSError as exc:  # exec (or fork) failed: the OS error
            raise SpawnError(f"cannot start {argv[0]!r}: [Errno {exc.errno}] "
                             f"{exc.strerror or exc}", argv=argv,
                             permanent=exc.errno in _PERMANENT) from None
        return cls(proc)

    def read(self) -> bytes | None:
        """Up to 64 KiB of output; b"" at EOF (EIO on a pty master); None if nothing now."""
        try:
            return os.read(self.fd, READ_SIZE)
        except BlockingIOError:
            return None
        except OSError as exc:
            if exc.errno == errno.EIO:  # every slave fd closed
                return b""
            raise

    def write(self, data: bytes) -> int:
        """Write what the pty takes now; returns the count (0 when it is full)."""
        try:
            return os.write(self.fd, data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            if exc.errno in (errno.EIO, errno.EBADF):
                return -1
            raise

    def poll_exit(self) -> bool:
        """Reap the leader if it has exited; True once it has (exit_code/signal set)."""
        if self.reaped:
            return True
        try:
            alive = self._proc.ptyproc.isalive()
        except Exception:  # ptyprocess raises PtyProcessError if the pid vanished
            alive = False
        if alive:
            return False
        self.reaped = True
        self.exit_code = self._proc.ptyproc.exitstatus
        self.signal = self._proc.ptyproc.signalstatus
        return True

    def close(self) -> None:
        """Close the pty master. Only after the leader was reaped: it then never sleeps."""
        with contextlib.suppress(OSError):
            self._proc.ptyproc.fileobj.close()
        self._proc.ptyproc.closed = True
        self._proc.closed = True
        self._proc.child_fd = -1
