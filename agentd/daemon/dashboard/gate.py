"""The dashboard's door: every TCP connection passes it before aiohttp sees a byte.

Any local user can connect to the dashboard's port, without the token, so
its connections are counted with the control socket's (``Clients``: per uid
and in all, the idle ones closed to make room): a peer on this machine counts
as the uid that owns its socket (``peers``), another machine's as its address.
A connection refused at a cap gets a 503 and is closed; refusals are one
``control.refused`` event per spell. A connection that has no complete
request within ``REQUEST_DEADLINE`` seconds (of its start, or of the end of
its last request: keep-alive) is closed, so half-sent requests (slowloris)
and idle sockets cannot pile up; a request being served (a live event stream
included) has no deadline here: its writes have their own.

Each connection is aiohttp's ``RequestHandler`` behind a thin protocol
(``_Door``) that passes every call on once the connection is admitted; the
guard of each request marks it busy (``begin``) and, once answered, waiting
again (``end``), and asks who the peer is (``key_of``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from aiohttp import web

from agentd.daemon.control.connections import Clients, Key
from agentd.daemon.dashboard.peers import PeerUids

REQUEST_DEADLINE = 5.0  # s a connection may take to send a whole request
BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n"
    b"Content-Length: 49\r\n\r\nagentd: too many connections now; try again soon\n"
)


class Gate:
    """The connections of one dashboard, admitted through ``clients``."""

    def __init__(self, clients: Clients, server: web.Server) -> None:
        self.clients = clients
        self._server = server
        self._peers = PeerUids()
        self._doors: dict[Any, _Door] = {}  # aiohttp's handler -> its door

    def factory(self) -> Callable[[], asyncio.Protocol]:
        """The protocol factory for ``loop.create_server``."""
        return lambda: _Door(self, self._server())

    def key_of(self, request: web.Request) -> Key:
        door = self._doors.get(request.protocol)
        return door.key if door is not None else None

    def begin(self, request: web.Request) -> None:
        """A request is being served on its connection: no deadline, not idle."""
        door = self._doors.get(request.protocol)
        if door is not None:
            door.begin()

    def end(self, request: web.Request) -> None:
        """The request is answered: the connection waits for the next, with a deadline."""
        door = self._doors.get(request.protocol)
        if door is not None:
            door.end()

    def close(self) -> None:
        self._peers.close()

    def identify(self, transport: asyncio.BaseTransport) -> Key:
        """The uid owning the peer's socket; for another machine, its address."""
        remote = transport.get_extra_info("peername")
        local = transport.get_extra_info("sockname")
        if not remote or not local:
            return None
        uid = self._peers.uid(local[:2], remote[:2])
        return uid if uid is not None else f"address {remote[0]}"


class _Door(asyncio.Protocol):
    """One connection: admitted or refused, then aiohttp's handler behind it."""

    def __init__(self, gate: Gate, handler: Any) -> None:
        self._gate = gate
        self._handler = handler
        self._transport: asyncio.Transport | None = None
        self._admitted = False
        self._busy = 0
        self._heard = False  # bytes came since it last waited: a request on its way
        self._timer: asyncio.TimerHandle | None = None
        self.key: Key = None

    # -- asyncio's calls -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self.key = self._gate.identify(transport)
        if not self._gate.clients.admit_one(self, self.key, self._idle, self._abort, "dashboard"):
            with contextlib.suppress(Exception):
                transport.write(BUSY)
            transport.close()
            return
        self._admitted = True
        self._gate._doors[self._handler] = self
        self._handler.connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._admitted:
            self._heard = True
            self._handler.data_received(data)

    def eof_received(self) -> bool | None:
        return self._handler.eof_received() if self._admitted else None

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if not self._admitted:
            return
        self._admitted = False
        self._gate.clients.release(self)
        self._gate._doors.pop(self._handler, None)
        self._handler.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._admitted:
            self._handler.pause_writing()

    def resume_writing(self) -> None:
        if self._admitted:
            self._handler.resume_writing()

    # -- the guard's calls -----------------------------------------------------------------
    def begin(self) -> None:
        self._busy += 1
        self._disarm()
        self._gate.clients.busy(self)

    def end(self) -> None:
        self._busy = max(0, self._busy - 1)
        if not self._busy and self._admitted:
            self._heard = False
            self._gate.clients.waiting(self)
            self._arm()

    # -- the deadline ----------------------------------------------------------------------
    def _arm(self) -> None:
        self._disarm()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(REQUEST_DEADLINE, self._overdue)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _overdue(self) -> None:
        self._timer = None
        transport = self._transport
        if self._busy or transport is None or transport.is_closing():
            return
        if transport.get_write_buffer_size():
            transport.abort()  # an answer it does not take: dropped with its buffer
        else:
            transport.close()  # a FIN: a browser will not send on it again

    def _idle(self) -> bool:
        """May it be closed to make room: nothing asked, nothing on its way?"""
        return not self._busy and not self._heard

    def _abort(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.abort()
