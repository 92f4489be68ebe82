"""The control socket's clients: how many, how long idle, how slow to read.

Every agent has ``AGENTD_SOCKET``, so a client may be greedy or hostile. The
caps keep a flood of connections from using every file descriptor: at most
``MAX_PER_UID`` connections of one uid and ``MAX_CLIENTS`` in all (fewer when
the fd limit is low: a quarter of it; the daemon raises its soft limit to
``FD_LIMIT`` where the hard one allows). Past a cap, the connection that has
waited longest for a request, and has none pending, is closed to make room,
so a flood of idle connections evicts itself and a client that asks
something is served; when none is idle, the new one is refused. Refusals are one ``control.refused``
event until a connection is admitted again, not one per attempt. A connection
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
from collections.abc import Callable
from dataclasses import dataclass, field

from agentd import events as ev

MAX_CLIENTS = 1024
MAX_PER_UID = 768  # one uid (a runaway agent) leaves room for the rest
FD_LIMIT = 8192  # the soft fd limit the daemon raises itself to (as far as the hard one allows)
REQUEST_IDLE = 10.0  # seconds a connection may wait before sending a request
WRITE_DEADLINE = 10.0  # seconds a client may take to read what it was sent
# A connection waiting less than this is evicted only when no other idle one is: its
# client may be about to send (descheduled between connect and send on a loaded machine).
EVICT_AFTER = 0.05


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


@dataclass
class _Client:
    uid: int | None
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    waiting_since: float | None = field(default_factory=time.monotonic)  # None: busy

    def idle(self) -> bool:
        """Waiting for a request and none has come (not in the kernel's buffer nor in
        the reader's, read there while its task has not run yet), or the client is gone."""
        if self.waiting_since is None or getattr(self.reader, "_buffer", None):
            return False
        sock = self.writer.get_extra_info("socket")
        if sock is None:
            return True
        poll = select.poll()
        poll.register(sock.fileno(), select.POLLIN)
        events = poll.poll(0)
        # POLLHUP: the client is gone (its task has not seen the end yet)
        return not events or bool(events[0][1] & select.POLLHUP)


class Clients:
    """The connections of one control server, counted by uid."""

    def __init__(
        self, emit: Callable[..., None], *, cap: int | None = None, per_uid: int = MAX_PER_UID
    ) -> None:
        self._emit = emit
        if cap is None:
            raise_fd_limit()
            cap = client_cap()
        self.cap = cap
        self.per_uid = min(per_uid, self.cap)
        self._open: dict[asyncio.StreamWriter, _Client] = {}  # in the order they began to wait
        self._per_uid: Counter[int | None] = Counter()
        self._refusing = False

    def __len__(self) -> int:
        return len(self._open)

    def admit(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, uid: int | None
    ) -> bool:
        """Count a new connection in, making room if a cap is reached; False: refused."""
        if self._per_uid[uid] >= self.per_uid and not self._evict(uid):
            return self._refuse(uid, f"{self.per_uid} connections of uid {uid}")
        if len(self._open) >= self.cap and not self._evict(None):
            return self._refuse(uid, f"{self.cap} connections")
        self._open[writer] = _Client(uid, reader, writer)
        self._per_uid[uid] += 1
        self._refusing = False
        return True

    def busy(self, writer: asyncio.StreamWriter) -> None:
        """The connection is being served (a request, a stream): not idle."""
        client = self._open.get(writer)
        if client is not None:
            client.waiting_since = None

    def waiting(self, writer: asyncio.StreamWriter) -> None:
        """The connection waits for its next request (it goes to the end of the line)."""
        client = self._open.pop(writer, None)
        if client is not None:
            client.waiting_since = time.monotonic()
            self._open[writer] = client

    def release(self, writer: asyncio.StreamWriter) -> None:
        client = self._open.pop(writer, None)
        if client is not None:
            self._per_uid[client.uid] -= 1

    def _evict(self, uid: int | None) -> bool:
        """Close the connection (of ``uid``; None: of anyone) that has waited longest
        for a request and has none pending; False if there is none."""
        now = time.monotonic()
        victim = None
        for client in self._open.values():  # oldest first: each is moved last when it waits
            if (uid is not None and client.uid != uid) or not client.idle():
                continue
            if now - (client.waiting_since or now) >= EVICT_AFTER:
                victim = client
                break
            victim = victim or client  # just connected: it may not have had the time to ask
        if victim is None:
            return False
        self.release(victim.writer)
        victim.writer.transport.abort()  # its task ends on the reset
        return True

    def _refuse(self, uid: int | None, why: str) -> bool:
        if not self._refusing:  # once, until a connection is admitted again
            self._refusing = True
            self._emit(
                ev.CONTROL_REFUSED,
                level="warning",
                uid=uid,
                error=f"control socket: {why} busy, none idle; refusing new ones",
            )
        return False
