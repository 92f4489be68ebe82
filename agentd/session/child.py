"""One agent process under a pseudo-terminal: the only module that uses pexpect.

A ``Child`` is the leader's pid and the pty's master fd, however it was
started: by ``agentd.session.launch`` (posix_spawn of an exec stub, the
daemon's way on Linux) or by ``Child.spawn`` here, through pexpect/ptyprocess
(fork+exec under a new pty as a session leader, the window size, and the
exec-error pipe: a missing binary is an error here, not a child that dies at
once), where that cannot work. We do not use ``expect()`` or pexpect's reads:
the session reads the master fd non-blocking from the event loop. The
``Child`` owns the leader's pid and reaps it (``poll_exit``); nobody else may
waitpid it (ptyprocess is told it is closed, so it never waits either).

Nothing of the daemon may run in the forked child but exec: what exec would
refuse (a NUL byte in an argument or the environment, text it cannot encode,
a missing workdir) is found before the fork and is a ``SpawnError``; the
child changes into the workdir itself (``_prepare_child``), so a workdir
removed in between comes back through the exec-error pipe too; and if
anything still escapes in the child, it exits at once (``_CHILD_FAILED``)
instead of returning into the daemon's code.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import struct
import termios
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from agentd.errors import SpawnError

READ_SIZE = 65536
# exec errors that the next try would meet again: the unit fails at once
_CHILD_FAILED = 127  # the child's exit code when something escaped before exec (as a shell's)
PERMANENT = frozenset(
    {
        errno.ENOENT,
        errno.EACCES,
        errno.EPERM,
        errno.ENOEXEC,
        errno.E2BIG,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.ELOOP,
        errno.ENAMETOOLONG,
    }
)


class _ChildSetupFailed(Exception):
    """What went wrong in the child before exec: ptyprocess sends it through its
    exec-error pipe (it catches ``Exception`` only, so everything becomes this)."""


def _prepare_child(cwd: str, cgroup_procs: str | None) -> Callable[[], None]:
    """What the child runs before exec (ptyprocess's ``preexec_fn``)."""

    def prepare() -> None:
        try:
            # Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays
            # ignored across exec: undo that, as subprocess's restore_signals
            # does, so `agent | head` behaves in the child.
            for sig in (signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, set())
            if cgroup_procs is not None:  # the session's own cgroup, before anything forks
                with contextlib.suppress(OSError):  # the parent checks and falls back
                    fd = os.open(cgroup_procs, os.O_WRONLY)
                    try:
                        os.write(fd, b"0")
                    finally:
                        os.close(fd)
            os.chdir(cwd)
        except BaseException as exc:  # anything: it must reach the parent
            # with our pid: the parent reaps us (ptyprocess does not)
            raise _ChildSetupFailed(f"{os.getpid()}:{_os_error_text(exc)}") from None

    return prepare


def _os_error_text(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno is not None:
        return f"[Errno {exc.errno}] {exc.strerror}" + (
            f": {exc.filename!r}" if exc.filename else ""
        )
    return f"{type(exc).__name__}: {exc}"


def check_spawnable(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
    """Raise SpawnError for what exec (or the child's chdir) would refuse: a NUL byte
    or text the OS cannot take in an argument or the environment, a bad variable
    name, a workdir that is missing or not a directory."""
    for i, arg in enumerate(argv):
        _check_text(arg, f"argument {i}", argv)
    for name, value in env.items():
        if not name or "=" in name:
            raise SpawnError(
                f"environment variable name {name!r} cannot be passed to exec", argv=list(argv)
            )
        _check_text(name, "an environment variable name", argv)
        _check_text(value, f"environment variable {name}", argv)
    if not cwd.is_dir():
        why = "is not a directory" if cwd.exists() else "does not exist"
        raise SpawnError(
            f"the workdir {cwd} {why}; create it (or fix workdir:) and start the unit again",
            argv=list(argv),
        )


def _check_text(text: str, what: str, argv: Sequence[str]) -> None:
    try:
        raw = os.fsencode(text)
    except UnicodeError:
        raise SpawnError(
            f"{what} holds text the OS cannot take (an unpaired surrogate)", argv=list(argv)
        ) from None
    if b"\0" in raw:
        raise SpawnError(f"{what} holds a NUL byte, which exec cannot pass", argv=list(argv))


def not_runnable(program: str, env: Mapping[str, str]) -> str:
    """Why pexpect found nothing to run: the OS error, as exec would have said it."""
    if "/" not in program:
        return f"command not found (searched PATH={env.get('PATH', os.defpath)})"
    if not os.path.exists(program):
        return f"[Errno {errno.ENOENT}] {os.strerror(errno.ENOENT)}"
    if os.path.isdir(program):
        return f"[Errno {errno.EISDIR}] {os.strerror(errno.EISDIR)}"
    return f"[Errno {errno.EACCES}] {os.strerror(errno.EACCES)} (not executable: chmod +x)"


class Child:
    """A spawned agent: ``pid`` (session and group leader) and the pty master ``fd``.

    ``keep``: what must live as long as the fd (pexpect's process, whose file
    object would close it when collected); closed with it.
    """

    def __init__(self, pid: int, fd: int, keep: Any = None) -> None:
        self.pid = pid
        self.fd = fd
        self._keep = keep
        self.exit_code: int | None = None
        self.signal: int | None = None
        self.reaped = False
        self.closed = False
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
        cgroup_procs: str | None = None,
    ) -> Child:
        """Start ``argv`` in ``cwd``; SpawnError says what could not be started and why.
        ``cgroup_procs``: the ``cgroup.procs`` file of the cgroup the child joins first."""
        argv = list(argv)
        if "/" in argv[0] and not os.path.isabs(argv[0]):
            argv[0] = str(cwd / argv[0])  # relative to the workdir, not to agentd's cwd
        check_spawnable(argv, env, cwd)
        import pexpect  # only here: the daemon starts agents through agentd.session.launch

        parent = os.getpid()
        try:
            proc = pexpect.spawn(
                argv[0],
                argv[1:],
                env=dict(env),
                dimensions=(rows, cols),
                preexec_fn=_prepare_child(str(cwd), cgroup_procs),
                encoding=None,
            )
        except pexpect.ExceptionPexpect:  # its own lookup found nothing it may run
            raise SpawnError(
                f"cannot start {argv[0]!r}: {not_runnable(argv[0], env)}", argv=argv
            ) from None
        except OSError as exc:  # exec (or fork) failed: the OS error
            raise SpawnError(
                f"cannot start {argv[0]!r}: [Errno {exc.errno}] {exc.strerror or exc}",
                argv=argv,
                permanent=exc.errno in PERMANENT,
            ) from None
        except BaseException as exc:
            if os.getpid() != parent:  # the forked child: never return into the daemon
                with contextlib.suppress(BaseException):
                    os.write(2, f"agentd: cannot start {argv[0]}: {exc}\r\n".encode())
                os._exit(_CHILD_FAILED)
            if not isinstance(exc, Exception):
                raise
            # the child's setup failed (ptyprocess rebuilds it as a plain Exception)
            pid, _, said = str(exc).partition(":")
            if pid.isdigit():
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(int(pid), 0)  # it exits as it reports: no zombie is left
            else:
                said = str(exc)
            raise SpawnError(f"cannot start {argv[0]!r}: {said}", argv=argv) from None
        pty: Any = proc.ptyproc  # type: ignore[attr-defined]  # (its stubs leave it out)
        # We reap the pid and close the fd: ptyprocess must never wait or sleep on the loop.
        proc.closed = pty.closed = True
        proc.delayafterclose = pty.delayafterclose = 0
        return cls(cast(int, proc.pid), proc.child_fd, keep=pty.fileobj)

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

    def resize(self, cols: int, rows: int) -> None:
        """Set the pty's size (TIOCSWINSZ): the kernel sends SIGWINCH to its
        foreground process group, if the size changed. Nothing once it is closed."""
        if self.closed:
            return
        with contextlib.suppress(OSError):
            fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def poll_exit(self) -> bool:
        """Reap the leader if it has exited; True once it has (exit_code/signal set)."""
        if self.reaped:
            return True
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # reaped by someone else: it is gone, how is unknown
            self.reaped = True
            return True
        if pid == 0:
            return False
        if os.WIFEXITED(status):
            self.exit_code = os.WEXITSTATUS(status)
        elif os.WIFSIGNALED(status):
            self.signal = os.WTERMSIG(status)
        else:  # stopped or continued: waitpid without WUNTRACED does not say so
            return False
        self.reaped = True
        return True

    def close(self) -> None:
        """Close the pty master. Only after the leader was reaped."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError):
            if self._keep is not None:
                self._keep.close()  # pexpect's file object: it closes the fd
            else:
                os.close(self.fd)
        self._keep = None
