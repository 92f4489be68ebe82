"""The agents' fork server: a small process that clones them for the daemon.

A session's process should be born in the session's cgroup (a move into it
waits for an RCU grace period, ~10 ms) and should not cost a fork of the
daemon (milliseconds that grow with its memory). Linux's
``clone3(CLONE_INTO_CGROUP)`` does the first, but Python has no clone3, and a
clone of the daemon itself would run its interpreter in a copy of a process
with threads. So agentd runs one small single-threaded server,
``agentd.session.zygote`` (``python -I -S``, started at the first launch), that
clones each agent with ``clone3(CLONE_PARENT | CLONE_INTO_CGROUP)``: born in
its cgroup, agentd's own child (agentd reaps it and gets its SIGCHLD), set up
and exec'd by a few lines of Python in the clone. The protocol is in the
zygote's docstring: a request, the pid, then the exec's result; while one is
under way (``in_flight``) agentd reaps none of its children it does not know
(the agent may have exited before its pid was read).

Where clone3 is refused (a kernel before 5.7, a seccomp profile that blocks
it, as some container runtimes' do) the first launch says so and every launch
uses the exec stub instead (``agentd.session.launch``).
"""

from __future__ import annotations

import asyncio
import contextlib
import marshal
import os
import signal
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentd.session.zygote import REPLIES, REQUESTS

ZYGOTE = Path(__file__).with_name("zygote.py")
_LENGTH = struct.Struct("<Q")


class ServerGone(Exception):
    """The fork server cannot clone (clone3 refused) or has gone: use the exec stub."""


class ForkServer:
    """One agentd's fork server: started when first used, ended by ``close``."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self._requests: int | None = None
        self._replies: int | None = None
        self.refused: str | None = None  # why it cannot be used (then it never is again)
        # A clone under way, whose pid agentd may not know yet: the agent may even have
        # exited already, so no child agentd does not know may be reaped meanwhile.
        self.in_flight = False
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    @staticmethod
    def supported() -> bool:
        return sys.platform.startswith("linux") and bool(sys.executable) and ZYGOTE.is_file()

    @property
    def usable(self) -> bool:
        return self.refused is None and self.supported()

    def warm(self) -> None:
        """Start the server now (it takes a Python start-up: not at the first session)."""
        if self.usable and self.pid is None:
            with contextlib.suppress(OSError):  # tried again at the first launch
                self._start()

    def _start(self) -> None:
        requests_r, self._requests = os.pipe()
        self._replies, replies_w = os.pipe()
        try:
            self.pid = os.posix_spawn(
                sys.executable,
                [sys.executable, "-I", "-S", str(ZYGOTE)],
                {},
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_DUP2, requests_r, REQUESTS),
                    (os.POSIX_SPAWN_DUP2, replies_w, REPLIES),
                ],
                setsigmask=(),
                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
            )
        finally:
            os.close(requests_r)
            os.close(replies_w)
        os.set_blocking(self._requests, False)
        os.set_blocking(self._replies, False)

    async def start(
        self, request: tuple[Any, ...], registered: Callable[[int, bool], None]
    ) -> tuple[int, str]:
        """Clone an agent for ``request`` (cgroup, slave, workdir, argv, environment, as
        bytes); call ``registered(pid, in_cgroup)`` before it may run; its pid and what
        its setup said (nothing: it exec'd). ``ServerGone`` when the server cannot."""
        if not self.usable:
            raise ServerGone(self.refused or "not supported here")
        async with self._loop_lock():
            self.in_flight = True
            try:
                if self.pid is None:
                    self._start()
                await self._send(request)
                kind, value = await self._receive()
                if kind != "pid":
                    if str(value).startswith("clone:"):  # clone3 refused: for good
                        self.refused = str(value)
                    raise ServerGone(str(value))
                pid, joined = int(value[0]), bool(value[1])
                registered(pid, joined)
                kind, said = await self._receive()
                return pid, "" if kind == "exec" else str(said)
            except OSError as exc:
                self.refused = f"the fork server failed: {exc}"
                self.close()
                raise ServerGone(self.refused) from None
            finally:
                self.in_flight = False

    def close(self) -> None:
        """End the server (it ends by itself when its requests end) and reap it."""
        for name in ("_requests", "_replies"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)
        pid, self.pid = self.pid, None
        if pid is not None:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)

    # -- the pipes ------------------------------------------------------------------
    def _loop_lock(self) -> asyncio.Lock:
        """One request at a time (the server serves them so), per event loop."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]

    async def _send(self, value: Any) -> None:
        fd = self._requests
        if fd is None:
            raise BrokenPipeError("the fork server is closed")
        data = marshal.dumps(value)
        view = memoryview(_LENGTH.pack(len(data)) + data)
        while view:
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                await _ready(fd, write=True)

    async def _receive(self) -> tuple[str, Any]:
        (size,) = _LENGTH.unpack(await self._read(_LENGTH.size))
        kind, value = marshal.loads(await self._read(size))
        return str(kind), value

    async def _read(self, n: int) -> bytes:
        fd = self._replies
        if fd is None:
            raise BrokenPipeError("the fork server is closed")
        data = b""
        while len(data) < n:
            try:
                chunk = os.read(fd, n - len(data))
            except BlockingIOError:
                await _ready(fd, write=False)
                continue
            if not chunk:
                raise BrokenPipeError("the fork server ended")
            data += chunk
        return data


async def _ready(fd: int, *, write: bool) -> None:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    (loop.add_writer if write else loop.add_reader)(fd, ready.set_result, None)
    try:
        await ready
    finally:
        (loop.remove_writer if write else loop.remove_reader)(fd)
