"""The daemon's clients: how many, how long idle, how slow to read.

Every agent has ``AGENTD_SOCKET``, so a client may be greedy or hostile; the
dashboard's port (``agentd serve --http``) is open to every local user. The
caps keep a flood of connections from using every file descriptor: at most
``MAX_PER_UID`` connections of one uid (for a TCP peer, the uid that owns its
socket, or its address when that cannot be told) and ``MAX_CLIENTS`` in all,
the control socket's and the dashboard's together (fewer when the fd limit is
low: a quarter of it; the daemon raises its soft limit to ``FD_LIMIT`` where
the hard one allows). Past a cap, the connection that has
waited longest for a request, and has none pending, is closed to make room,
so a flood of idle connections evicts itself and a client that asks
something is served; when none is idle, the new one is refused. Refusals are
one ``control.refused`` event per uid (or address) at most every
``REFUSED_EVERY`` seconds, not one per attempt. A control connection
that sends no request within ``REQUEST_IDLE`` seconds is closed; a reply or
stream the client does not read within ``WRITE_DEADLINE`` is dropped and its
buffer freed (``drain``).
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import select
import time
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from agentd import events as ev

MAX_CLIENTS = 1024
MAX_PER_UID = 768  # one uid (a runaway agent) leaves room for the rest
FD_LIMIT = 8192  # the soft fd limit the daemon raises itself to (as far as the hard one allows)
REQUEST_IDLE = 10.0  # seconds a connection may wait before sending a request
WRITE_DEADLINE = 10.0  # seconds a client may take to read what it was sent
REFUSED_EVERY = 60.0  # s: a uid's refusals are said at most this often


def raise_fd_limit() -> None:
    """Raise the soft fd limit towards ``FD_LIMIT`` (systemd's default soft limit is
    1024, its hard one far higher): room for the caps and for the sessions' ptys."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = FD_LIMIT if hard == resource.RLIM_INFINITY else min(FD_LIMIT, hard)
    if soft != resource.RLIM_INFINITY and soft < want:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def client_cap() -> int:
    """``MAX_CLIENTS``, or a quarter of the fd limit when that is lower (sessions need fds)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CLIENTS
    return max(8, min(MAX_CLIENTS, soft // 4))


async def drain(writer: asyncio.StreamWriter) -> None:
    """Wait until the client has taken what was written; past ``WRITE_DEADLINE`` drop
    the connection (its buffer with it) and raise ``ConnectionResetError``."""
    try:
        async with asyncio.timeout(WRITE_DEADLINE):  # a timer, not a task per write
            await writer.drain()
    except TimeoutError:
        writer.transport.abort()
        raise ConnectionResetError("the client does not read its reply") from None


Key = int | str | None  # a uid, "address HOST" for a peer whose uid is unknown, None: unknown


@dataclass
class _Client:
    key: Key
    idle: Callable[[], bool]  # waiting for a request, none pending
    abort: Callable[[], None]  # close it now (its task ends on the reset)
    busy: bool = False  # being served (a request, a stream): never idle


def stream_idle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Callable[[], bool]:
    """Is the control connection waiting for a request, with none come (not in the
    kernel's buffer nor in the reader's, read there while its task has not run yet),
    or is its client gone?"""

    def idle() -> bool:
        if getattr(reader, "_buffer", None):
            return False
        sock = writer.get_extra_info("socket")
        if sock is None:
            return True
        poll = select.poll()
        poll.register(sock.fileno(), select.POLLIN)
        events = poll.poll(0)
        # POLLHUP: the client is gone (its task has not seen the end yet)
        return not events or bool(events[0][1] & select.POLLHUP)

    return idle


class Clients:
    """The connections of the daemon (its control server's and its dashboard's),
    counted by uid."""

    def __init__(
        self,
        emit: Callable[..., None],
        *,
        cap: int | None = None,
        per_uid: int = MAX_PER_UID,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._emit = emit
        self._clock = clock
        if cap is None:
            raise_fd_limit()
            cap = client_cap()
        self.cap = cap
        self.per_uid = min(per_uid, max(1, self.cap * 3 // 4))  # room for the others
        self._open: dict[Hashable, _Client] = {}  # in the order they began to wait
        self._per_uid: Counter[Key] = Counter()
        self._refused: dict[Key, float] = {}  # when each was last said to be refused

    def __len__(self) -> int:
        return len(self._open)

    def count(self, key: Key) -> int:
        """The connections of ``key`` open now."""
        return self._per_uid[key]

    def admit(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, uid: int | None
    ) -> bool:
        """Count a new control connection in, making room if a cap is reached; False: refused."""
        return self.admit_one(
            writer, uid, stream_idle(reader, writer), writer.transport.abort, "control socket"
        )

    def admit_one(
        self,
        handle: Hashable,
        key: Key,
        idle: Callable[[], bool],
        abort: Callable[[], None],
        where: str,
    ) -> bool:
        """Count in the connection ``handle`` of ``key`` (``idle``: may it be closed to make
        room; ``abort``: close it), making room if a cap is reached; False: refused."""
        if self._per_uid[key] >= self.per_uid and not self._evict(key):
            return self._refuse(key, f"{where}: {self.per_uid} connections of {_who(key)}")
        if len(self._open) >= self.cap and not self._evict(None, any_key=True):
            return self._refuse(key, f"{where}: {self.cap} connections")
        self._open[handle] = _Client(key, idle, abort)
        self._per_uid[key] += 1
        return True

    def busy(self, handle: Hashable) -> None:
        """The connection is being served (a request, a stream): not idle."""
        client = self._open.get(handle)
        if client is not None:
            client.busy = True

    def waiting(self, handle: Hashable) -> None:
        """The connection waits for its next request (it goes to the end of the line)."""
        client = self._open.pop(handle, None)
        if client is not None:
            client.busy = False
            self._open[handle] = client

    def release(self, handle: Hashable) -> None:
        client = self._open.pop(handle, None)
        if client is not None:
            self._per_uid[client.key] -= 1
            if not self._per_uid[client.key]:
                del self._per_uid[client.key]

    def _evict(self, key: Key, *, any_key: bool = False) -> bool:
        """Close the connection (of ``key``, or of anyone) that has waited longest
        for a request and has none pending; False if there is none."""
        victim = None
        for handle, client in self._open.items():  # oldest first: each goes last when it waits
            if client.busy or (not any_key and client.key != key):
                continue
            if client.idle():
                victim = handle
                break
        if victim is None:
            return False
        abort = self._open[victim].abort
        self.release(victim)
        abort()
        return True

    def _refuse(self, key: Key, why: str) -> bool:
        now = self._clock()
        if now - self._refused.get(key, -REFUSED_EVERY) >= REFUSED_EVERY:
            if len(self._refused) >= MAX_CLIENTS:  # a flood from many addresses
                self._refused = {k: t for k, t in self._refused.items() if now - t < REFUSED_EVERY}
            self._refused[key] = now
            self._emit(
                ev.CONTROL_REFUSED,
                level="warning",
                uid=key if isinstance(key, int) else None,
                peer=key if isinstance(key, str) else None,
                error=f"{why} busy, none idle; refusing new ones",
            )
        return False


def _who(key: Key) -> str:
    return f"uid {key}" if isinstance(key, int) else key or "an unknown peer"
