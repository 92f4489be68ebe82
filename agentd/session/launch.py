"""Starting an agent under a new pty without forking the daemon.

A fork of the daemon costs milliseconds that grow with its memory (the
child touches its copy-on-write pages before its exec), and a cgroup v2 move
costs about 10 ms more (it waits for an RCU grace period); together they were
most of a respawn. ``Launch.start`` opens the session's pty; ``Launch.exec``
checks what exec would refuse, finds the program as pexpect does (the
session's PATH; argv[0] becomes the path found), sets the pty's size and
starts the agent one of three ways:

1. the fork server (``agentd.session.forkserver``), where it can clone: the
   agent is born in its session's cgroup, as agentd's own child, in about a
   millisecond;
2. else the exec stub ``agentd.session.execstub``, spawned by ``Launch.start``
   already (``posix_spawn``: vfork + exec, nothing of the daemon is copied)
   under ``python -I -S``: the leader of a new session
   (``POSIX_SPAWN_SETSID``), whose first file action opens the pty's slave
   without ``O_NOCTTY``, which makes it the session's controlling terminal
   and its group the terminal's foreground group (Linux; ``login_tty`` gets
   the same with ``TIOCSCTTY``), with SIGPIPE and SIGXFSZ at their defaults
   and no signal blocked. While it starts, a thread moves it into the
   session's cgroup (it forks nothing, so nothing it starts is outside) and
   the service renders the bootstrap, maybe while the previous session's
   tree is still being ended; ``exec`` waits for the move and sends the stub
   its command;
3. else (not Linux, no ``posix_spawn``, no interpreter path) through pexpect
   (``agentd.session.child``), joining the cgroup in the forked child.

Either way the agent changes into the workdir, every other fd is closed,
and an exec or chdir error comes back through a close-on-exec pipe: a
``SpawnError``, permanent when the next try would meet it again. The pid is
the session's leader and its id from the start on (``pid``, for the reaper's
"owned").
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import marshal
import os
import signal
import struct
import sys
import termios
from collections.abc import Mapping, Sequence
from pathlib import Path

from agentd.errors import SpawnError
from agentd.process.tree import MARKER_VAR
from agentd.session.child import PERMANENT, Child, check_spawnable, not_runnable
from agentd.session.execstub import COMMAND_FD, ERROR_FD
from agentd.session.forkserver import ForkServer, ServerGone

STUB = Path(__file__).with_name("execstub.py")
_FD_FLOOR = 10  # the pipes' fds in the daemon stay clear of the stub's 0-4


def supported() -> bool:
    """Can agents start this way here (else through pexpect)?"""
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "posix_spawn")
        and bool(sys.executable)
        and STUB.is_file()
    )


class Launch:
    """One agent on its way: its pty, and its stub where there is no fork server."""

    def __init__(self, cgroup: Path | None) -> None:
        self.cgroup = cgroup  # the session's own, while it may still be joined
        self.pid: int | None = None  # the stub's, then the agent's
        self._master: int | None = None
        self._slave = ""  # the pty's slave, by name (the fork server's clone opens it)
        self._server: ForkServer | None = None  # clones the agent, if it can
        self._command: int | None = None  # write end of the stub's fd 3
        self._errors: int | None = None  # read end of the stub's fd 4
        self._started: asyncio.Future[bool] | None = None  # spawned; True if it joined
        self._failed: OSError | None = None
        self._env: dict[str, str] = {}  # the stub's own (the agent gets its own at exec)

    @classmethod
    def start(
        cls,
        cgroup: Path | None,
        *,
        marker: str = "",
        cols: int = 120,
        rows: int = 40,
        server: ForkServer | None = None,
    ) -> Launch:
        """Get the agent's process under way: with a usable fork ``server`` only its pty
        (the clone at ``exec`` takes well under a millisecond); else the stub,
        spawned and moved into ``cgroup`` on a worker thread (the loop goes on
        meanwhile: posix_spawn waits for the stub's exec, the move for a grace
        period). ``marker``: the session's, in the stub's environment, so the stub
        is found as the session's from its start. ``SpawnError``, not permanent,
        when not even a pty or a pipe can be had (out of fds)."""
        launch = cls(cgroup)
        launch._env = {MARKER_VAR: marker} if marker else {}
        if not supported():
            return launch
        try:
            slave = launch._open_pty(cols, rows)
            if server is not None and server.usable:
                launch._server = server
                os.close(slave)
                return launch
            launch._start_stub(slave)
        except OSError as exc:
            launch.abandon()
            raise _cannot(exc) from None
        return launch

    def _open_pty(self, cols: int, rows: int) -> int:
        """The pty: the master kept, the slave's fd returned (its name noted)."""
        master, slave = os.openpty()
        self._master = master
        try:
            _set_size(master, cols, rows)
            os.set_blocking(master, False)
            self._slave = os.ttyname(slave)
        except OSError:
            os.close(slave)
            raise
        return slave

    def _start_stub(self, slave: int) -> None:
        """The stub's pipes, and its spawn and move on a worker thread (``slave`` is
        closed there, once the stub holds it)."""
        try:
            command_r, self._command = _pipe()
            self._errors, errors_w = _pipe()
        except OSError:
            os.close(slave)
            raise
        for fd in (self._command, self._errors):
            os.set_blocking(fd, False)
        loop = asyncio.get_running_loop()
        self._started = loop.run_in_executor(None, self._spawn, (slave, command_r, errors_w))

    def _spawn(self, fds: tuple[int, int, int]) -> bool:
        """On a worker thread: spawn the stub, then move it into the cgroup; whether it is
        in there. An OSError is kept for ``exec`` to report."""
        _slave, command_r, errors_w = fds  # (the slave: only to be closed here)
        try:
            self.pid = os.posix_spawn(
                sys.executable,
                [sys.executable, "-I", "-S", str(STUB)],
                self._env,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, self._slave, os.O_RDWR, 0),  # the ctty
                    (os.POSIX_SPAWN_DUP2, 0, 1),
                    (os.POSIX_SPAWN_DUP2, 0, 2),
                    (os.POSIX_SPAWN_DUP2, command_r, COMMAND_FD),
                    (os.POSIX_SPAWN_DUP2, errors_w, ERROR_FD),
                ],
                setsid=True,
                setsigmask=(),
                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
            )
        except OSError as exc:
            self._failed = exc
            return False
        finally:
            # the stub holds them now: the pty's EOF comes when the session's fds are closed
            for fd in fds:
                os.close(fd)
        return self.cgroup is not None and _join(self.cgroup, self.pid)

    async def exec(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        cols: int = 120,
        rows: int = 40,
    ) -> Child:
        """Run ``argv`` in ``cwd`` with ``env``: the started ``Child``, or SpawnError
        saying what could not be started and why (the launch is then given up)."""
        argv = list(argv)
        if "/" in argv[0] and not os.path.isabs(argv[0]):
            argv[0] = str(cwd / argv[0])  # relative to the workdir, not to agentd's cwd
        try:
            if self._master is None:  # no posix_spawn here: fork through pexpect
                procs = str(self.cgroup / "cgroup.procs") if self.cgroup is not None else None
                return Child.spawn(argv, cwd=cwd, env=env, cols=cols, rows=rows, cgroup_procs=procs)
            check_spawnable(argv, env, cwd)
            program = which(argv[0], env)
            if program is None:
                raise SpawnError(
                    f"cannot start {argv[0]!r}: {not_runnable(argv[0], env)}", argv=argv
                )
            if self._server is not None:
                try:
                    return await self._clone(program, argv, cwd=cwd, env=env, size=(cols, rows))
                except ServerGone:  # clone3 refused here, or the server died: the stub
                    self._server = None
                    self._start_stub(os.open(self._slave, os.O_RDWR | os.O_NOCTTY))
            await self._spawned()
            assert self._master is not None
            _set_size(self._master, cols, rows)
            command = marshal.dumps(
                (
                    os.fsencode(cwd),
                    [os.fsencode(program), *map(os.fsencode, argv[1:])],
                    {os.fsencode(k): os.fsencode(v) for k, v in env.items()},
                )
            )
            await self._send(command)
            said = await self._exec_result()
        except BaseException:
            self.abandon()
            raise
        if said:
            self.abandon()
            raise _failure(said, argv, cwd)
        assert self.pid is not None
        child = Child(self.pid, self._master)
        self.pid = self._master = None  # the child's now: abandon() leaves them alone
        self._close_pipes()
        return child

    async def _clone(
        self,
        program: str,
        argv: list[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        size: tuple[int, int],
    ) -> Child:
        """Have the fork server clone the agent into its cgroup and exec it."""
        assert self._server is not None and self._master is not None
        _set_size(self._master, *size)

        def registered(pid: int, joined: bool) -> None:  # before it may run: ours to reap
            self.pid = pid
            if not joined and self.cgroup is not None:
                with contextlib.suppress(OSError):
                    self.cgroup.rmdir()
                self.cgroup = None

        request = (
            None if self.cgroup is None else os.fsencode(self.cgroup),
            os.fsencode(self._slave),
            os.fsencode(cwd),
            [os.fsencode(program), *map(os.fsencode, argv[1:])],
            {os.fsencode(k): os.fsencode(v) for k, v in env.items()},
        )
        pid, said = await self._server.start(request, registered)
        if said:
            self.abandon()  # it exits as it says so: reaped here
            raise _failure(said.encode(), argv, cwd)
        child = Child(pid, self._master)
        self.pid = self._master = None  # the child's now: abandon() leaves them alone
        return child

    def abandon(self) -> None:
        """Give the launch up: the stub (ours, unreaped, so its pid is not reused)
        is killed and reaped, the pty closed, its cgroup removed; once the spawn
        under way on its thread is over, if it is not. Idempotent."""
        started = self._started
        if started is not None and not started.done():
            started.add_done_callback(lambda _: self._release())
        else:
            self._release()

    def _release(self) -> None:
        self._close_pipes()
        if self._master is not None:
            os.close(self._master)
            self._master = None
        pid, self.pid = self.pid, None
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                self.cgroup.rmdir()

    # -- the steps ------------------------------------------------------------------
    async def _spawned(self) -> None:
        """Wait for the spawn and the move into the cgroup; without the move the session
        has no cgroup (the marker and the session id still find its processes)."""
        if self._started is None:
            return
        joined = await self._started
        if self._failed is not None:
            raise _cannot(self._failed)
        if self.cgroup is not None and not joined:
            with contextlib.suppress(OSError):
                self.cgroup.rmdir()
            self.cgroup = None

    async def _send(self, data: bytes) -> None:
        fd = self._command
        assert fd is not None
        loop = asyncio.get_running_loop()
        view = memoryview(data)
        try:
            while view:
                try:
                    view = view[os.write(fd, view) :]
                    continue
                except BlockingIOError:
                    pass
                ready: asyncio.Future[None] = loop.create_future()
                loop.add_writer(fd, ready.set_result, None)
                try:
                    await ready
                finally:
                    loop.remove_writer(fd)
        except BrokenPipeError:  # the stub is gone: its end says why, if anything
            pass
        os.close(fd)
        self._command = None

    async def _exec_result(self) -> bytes:
        """What the stub said before its exec (nothing: the exec worked)."""
        fd = self._errors
        assert fd is not None
        loop = asyncio.get_running_loop()
        said = b""
        while True:
            try:
                chunk = os.read(fd, 4096)
            except BlockingIOError:
                ready: asyncio.Future[None] = loop.create_future()
                loop.add_reader(fd, ready.set_result, None)
                try:
                    await ready
                finally:
                    loop.remove_reader(fd)
                continue
            if not chunk:
                return said
            said += chunk

    def _close_pipes(self) -> None:
        for name in ("_command", "_errors"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)


def which(program: str, env: Mapping[str, str]) -> str | None:
    """``program`` as pexpect finds it: a path with a slash as it is, else the first
    executable regular file of that name on the session's PATH."""
    if os.path.dirname(program):
        return program if _executable(program) else None
    for directory in (env.get("PATH") or os.defpath).split(os.pathsep):
        found = os.path.join(directory, program)
        if _executable(found):
            return found
    return None


def _executable(path: str) -> bool:
    real = os.path.realpath(path)
    return os.path.isfile(real) and os.access(real, os.X_OK)


def _failure(said: bytes, argv: list[str], cwd: Path) -> SpawnError:
    """The SpawnError for what the stub said (``STEP:ERRNO:TEXT``)."""
    step, _, rest = said.decode(errors="replace").partition(":")
    number, _, text = rest.partition(":")
    code = int(number) if number.isdigit() else 0
    if step == "chdir":  # the workdir went away after the check
        return SpawnError(
            f"cannot start {argv[0]!r}: [Errno {code}] {text}: {str(cwd)!r}", argv=argv
        )
    return SpawnError(
        f"cannot start {argv[0]!r}: [Errno {code}] {text}",
        argv=argv,
        permanent=code in PERMANENT,
    )


def _cannot(exc: OSError) -> SpawnError:
    return SpawnError(
        f"cannot start the session's process: [Errno {exc.errno}] {exc.strerror}",
        permanent=False,
    )


def _join(cgroup: Path, pid: int) -> bool:
    """Move ``pid`` into ``cgroup`` (on a thread: it blocks ~10 ms); whether it worked."""
    try:
        fd = os.open(cgroup / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, str(pid).encode())
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def _pipe() -> tuple[int, int]:
    """A pipe whose fds (close-on-exec) are clear of 0-4, where the stub wants its own."""
    r, w = os.pipe()
    out = []
    for fd in (r, w):
        out.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _FD_FLOOR))
        os.close(fd)
    return out[0], out[1]


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
