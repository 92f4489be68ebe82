"""Run one command to its end beside the event loop: a unit's completion check, git.

``run`` spawns the command in a session of its own (``setsid``: its group and
session id are its pid), with no stdin and stdout and stderr on one pipe, and
awaits its end without blocking the loop: a thread waits for the exit (and
reaps it), the loop reads the pipe without blocking and keeps only the last
``keep`` bytes (and counts them all). When the command runs past ``timeout``,
or ``abort`` is set (a stop), its whole tree is ended the way a session's is
(``agentd.process.ending``: ``sig``, SIGKILL after ``grace``); after
it ends by itself, what it left running in its session (a server a test
suite started and forgot) is ended too. Nothing it started outlives it.

One owner per pid: pass ``owned``, the set the subreaper consults
(``agentd.process.reaper``). The pid is added right after the fork on the
calling thread, which must be the loop's (where the reaper runs), so the
reaper never takes the exit status from the thread that waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, MutableSet, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentd.process.ending import end_session_tree, kill_now
from agentd.process.tree import MARKER_VAR

KEEP = 64 << 10  # bytes of output kept: the end of it
READ = 64 << 10
REAP_WAIT = 10.0  # s for the leader's exit to be seen once its tree is ended
EOF_WAIT = 2.0  # s for the last output once nothing of the tree is left


@dataclass(frozen=True)
class Finished:
    """How the command ended, and the end of what it printed."""

    code: int | None  # its exit code; None when a signal ended it (or it was never seen)
    signal: int | None
    duration_s: float  # from the spawn to its end (or to the timeout)
    output: bytes  # the last ``keep`` bytes of stdout and stderr
    total: int  # bytes it printed in all
    timed_out: bool = False
    aborted: bool = False
    ended: list[int] = field(default_factory=list)  # pids agentd signalled to end its tree

    @property
    def ok(self) -> bool:
        return self.code == 0 and not self.timed_out and not self.aborted


class _Tail:
    """The pipe's end, read on the loop without blocking: the last ``keep`` bytes."""

    def __init__(self, fd: int, keep: int, loop: asyncio.AbstractEventLoop) -> None:
        self.fd = fd
        self.keep = keep
        self.data = bytearray()
        self.total = 0
        self.eof = loop.create_future()
        os.set_blocking(fd, False)

    def on_readable(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, READ)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                if not self.eof.done():
                    self.eof.set_result(None)
                return
            self.total += len(chunk)
            self.data += chunk
            if len(self.data) > self.keep:
                del self.data[: len(self.data) - self.keep]


async def run(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    sig: int = signal.SIGTERM,
    grace: float = 5.0,
    keep: int = KEEP,
    marker: str = "",
    owned: MutableSet[int] | None = None,
    abort: asyncio.Event | None = None,
) -> Finished:
    """Run ``argv`` in ``cwd`` to its end (see the module docstring); OSError when it
    cannot be started (not found, not executable, no such ``cwd``)."""
    loop = asyncio.get_running_loop()
    full_env = dict(env)
    if marker:
        full_env[MARKER_VAR] = marker  # found by it even if it leaves its session
    started = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=full_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        close_fds=True,
    )
    if owned is not None:
        owned.add(proc.pid)  # before the loop runs again: before any reaper can look
    assert proc.stdout is not None
    tail = _Tail(proc.stdout.fileno(), keep, loop)
    exited: asyncio.Future[float] = loop.create_future()

    def seen() -> None:  # on the loop, once the thread has reaped it
        if owned is not None:
            owned.discard(proc.pid)
        if not exited.done():
            exited.set_result(time.monotonic())

    def wait() -> None:
        with contextlib.suppress(ChildProcessError):
            proc.wait()
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(seen)

    threading.Thread(target=wait, name="agentd-oneshot", daemon=True).start()
    loop.add_reader(tail.fd, tail.on_readable)
    stop = loop.create_task(abort.wait()) if abort is not None else None
    try:
        waiting: list[asyncio.Future[object]] = [exited]  # type: ignore[list-item]
        if stop is not None:
            waiting.append(stop)  # type: ignore[arg-type]
        done, _ = await asyncio.wait(waiting, timeout=timeout, return_when="FIRST_COMPLETED")
        ended_at = exited.result() if exited.done() else time.monotonic()
        timed_out = not done
        aborted = not exited.done() and stop is not None and stop.done()
        # the whole tree when it is cut short; what it left behind when it ended by itself
        result = await end_session_tree(
            leader=_unreaped(proc), marker=marker, sid=proc.pid, sig=sig, grace=grace
        )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(exited), REAP_WAIT)
        tail.on_readable()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(tail.eof), EOF_WAIT)
    except BaseException:  # cancelled (agentd stops): nothing of it may outlive us
        kill_now(leader=_unreaped(proc), marker=marker, sid=proc.pid)
        raise
    finally:
        loop.remove_reader(tail.fd)
        proc.stdout.close()
        if stop is not None:
            stop.cancel()
    code = proc.returncode
    return Finished(
        code=code if code is not None and code >= 0 else None,
        signal=-code if code is not None and code < 0 else None,
        duration_s=round(ended_at - started, 3),
        output=bytes(tail.data),
        total=tail.total,
        timed_out=timed_out,
        aborted=aborted,
        ended=sorted({*result.signalled, *result.killed}),
    )


def _unreaped(proc: subprocess.Popen[bytes]) -> int | None:
    """Its pid while the waiting thread has not reaped it (the pid, and with it the
    session's number, are still its own), else None. ``Popen.wait`` sets
    ``returncode`` as it reaps, before ``exited`` is told."""
    return None if proc.returncode is not None else proc.pid
