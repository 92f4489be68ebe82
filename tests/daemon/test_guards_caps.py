"""The control socket's caps give back what each connection took.

In-process: the real ``ControlServer`` on a loop, with caps made small so a
test reaches them in a few connections (the daemon's are hundreds). A client
that connects, asks and goes away frees its place: any number of them, one
after another, are all served. Past the per-uid cap an idle connection makes
room for one that asks; with none idle, the new one is refused, once said.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentd.daemon.control import connections, streams
from agentd.daemon.control.connections import Clients
from agentd.daemon.control.server import ControlServer
from agentd.events import EventLog
from agentd.paths import Paths
from agentd.supervisor.api import Supervisor
from tests.support import async_poll_for

PER_UID, CAP = 4, 6


@pytest.fixture
def paths() -> Iterator[Paths]:
    root = Path(tempfile.mkdtemp(prefix="ad", dir="/tmp"))
    yield Paths.resolve(root, env={})
    shutil.rmtree(root, ignore_errors=True)


async def _no_reload(_why: str) -> dict[str, Any]:
    raise AssertionError("not reached")


def with_server(paths: Paths, body: Any, **caps: int) -> list[dict[str, Any]]:
    """Run ``body(server)`` against a listening server with small caps; the events."""
    seen: list[dict[str, Any]] = []

    async def main() -> None:
        log = EventLog(None)
        log.subscribe(seen.append)
        sup = Supervisor(paths, log)
        server = ControlServer(sup, reload=_no_reload)
        server.clients = Clients(
            log.emit, cap=caps.get("cap", CAP), per_uid=caps.get("per_uid", PER_UID)
        )
        await server.listen()
        try:
            await asyncio.wait_for(body(server), 30)
        finally:
            await server.close()
            await sup.shutdown()

    asyncio.run(main())
    return seen


async def ping(path: Path) -> dict[str, Any]:
    reader, writer = await asyncio.open_unix_connection(str(path))
    try:
        writer.write(json.dumps({"cmd": "ping", "args": {}}).encode() + b"\n")
        await writer.drain()
        reply: dict[str, Any] = json.loads(await reader.readline())
        return reply
    finally:
        writer.close()
        await writer.wait_closed()


def test_clients_that_come_and_go_never_use_up_the_caps(paths: Paths) -> None:
    async def body(server: ControlServer) -> None:
        for i in range(10 * (PER_UID + CAP)):  # far more clients in the daemon's life than a cap
            reply = await ping(paths.socket)
            assert reply["ok"], (i, reply)
            await async_poll_for(
                lambda: len(server.clients) == 0, what="the closed client to be let go"
            )

    seen = with_server(paths, body)
    assert not [e for e in seen if e["event"] == "control.refused"]


def test_past_the_per_uid_cap_an_idle_connection_makes_room_for_one_that_asks(
    paths: Paths,
) -> None:
    async def body(server: ControlServer) -> None:
        idle = [await asyncio.open_unix_connection(str(paths.socket)) for _ in range(PER_UID)]
        await async_poll_for(
            lambda: len(server.clients) == PER_UID, what="the idle ones to be admitted"
        )
        assert (await ping(paths.socket))["ok"]
        # the oldest idle one was closed to make room
        reader, _ = idle[0]
        assert await asyncio.wait_for(reader.read(), 5) == b""
        for _, w in idle:
            w.close()

    with_server(paths, body)


def test_with_every_place_busy_a_new_connection_is_refused_and_it_is_said_once(
    paths: Paths,
) -> None:
    async def body(server: ControlServer) -> None:
        # connections in the middle of a request (a partial line): busy, not idle
        busy = []
        for _ in range(PER_UID):
            reader, writer = await asyncio.open_unix_connection(str(paths.socket))
            writer.write(b'{"cmd": "pi')
            await writer.drain()
            busy.append((reader, writer))
        await async_poll_for(
            lambda: len(server.clients) == PER_UID, what="the busy ones to be admitted"
        )
        for _ in range(3):
            reader, writer = await asyncio.open_unix_connection(str(paths.socket))
            reply = json.loads(await asyncio.wait_for(reader.readline(), 5))
            assert reply["ok"] is False and "too many connections" in reply["error"]
            writer.close()
        for _, w in busy:
            w.close()
        await async_poll_for(lambda: len(server.clients) == 0, what="the busy ones to be let go")
        assert (await ping(paths.socket))["ok"]  # their places are free again

    seen = with_server(paths, body)
    refused = [e for e in seen if e["event"] == "control.refused"]
    assert len(refused) == 1 and refused[0]["uid"] == os.geteuid()
    assert refused[0]["level"] == "warning"
    assert refused[0]["error"] == (
        f"control socket: {PER_UID} connections of uid {os.geteuid()} busy, none idle; "
        "refusing new ones"
    )


@pytest.mark.parametrize(("every", "said"), [(connections.REFUSED_EVERY, 1), (0.0, 4)])
def test_refusals_are_said_once_per_uid_a_minute_across_spells(
    paths: Paths, monkeypatch: pytest.MonkeyPatch, every: float, said: int
) -> None:
    """Four refusals in two spells, a connection admitted between them: one event
    while they come within ``REFUSED_EVERY`` (a flood that alternates says nothing
    more), each one said once that much time has passed since the last."""
    monkeypatch.setattr(connections, "REFUSED_EVERY", every)

    async def busy_all() -> list[asyncio.StreamWriter]:
        writers = []
        for _ in range(PER_UID):
            _, writer = await asyncio.open_unix_connection(str(paths.socket))
            writer.write(b'{"cmd": "pi')  # half a request: busy
            await writer.drain()
            writers.append(writer)
        return writers

    async def refused() -> None:
        reader, writer = await asyncio.open_unix_connection(str(paths.socket))
        reply = json.loads(await asyncio.wait_for(reader.readline(), 5))
        assert reply["ok"] is False, reply
        writer.close()

    async def body(server: ControlServer) -> None:
        for _ in range(2):  # two spells of refusals, one admitted connection between
            writers = await busy_all()
            await async_poll_for(
                lambda: len(server.clients) == PER_UID, what="the busy ones admitted"
            )
            await refused()
            await refused()
            for w in writers:
                w.close()
            await async_poll_for(lambda: len(server.clients) == 0, what="the busy ones let go")
            assert (await ping(paths.socket))["ok"]

    seen = with_server(paths, body)
    assert len([e for e in seen if e["event"] == "control.refused"]) == said


# --- the caps follow the fd limit ------------------------------------------------------------


@pytest.mark.parametrize(
    ("soft", "cap"),
    [
        (resource.RLIM_INFINITY, 1024),
        (1 << 20, 1024),
        (1024, 256),
        (1027, 256),  # a whole number of connections
        (16, 8),
        (40, 10),
    ],
)
def test_the_connection_cap_is_a_quarter_of_the_fd_limit_within_bounds(
    monkeypatch: pytest.MonkeyPatch, soft: int, cap: int
) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _: (soft, resource.RLIM_INFINITY))
    assert connections.client_cap() == cap


@pytest.mark.parametrize(
    ("limits", "raised"),
    [
        ((1024, 4096), (4096, 4096)),  # as far as the hard limit allows
        ((1024, resource.RLIM_INFINITY), (8192, resource.RLIM_INFINITY)),
        ((8192, 1 << 20), None),  # high enough already
        ((1 << 16, 1 << 20), None),  # never lowered
        ((resource.RLIM_INFINITY, resource.RLIM_INFINITY), None),
    ],
)
def test_the_daemon_raises_its_soft_fd_limit_never_lowers_it(
    monkeypatch: pytest.MonkeyPatch, limits: tuple[int, int], raised: tuple[int, int] | None
) -> None:
    asked: list[tuple[int, tuple[int, int]]] = []
    monkeypatch.setattr(resource, "getrlimit", lambda _: limits)
    monkeypatch.setattr(resource, "setrlimit", lambda kind, lim: asked.append((kind, lim)))
    connections.raise_fd_limit()
    assert asked == ([] if raised is None else [(resource.RLIMIT_NOFILE, raised)])


@pytest.mark.parametrize("error", [ValueError("not allowed"), PermissionError(1, "EPERM")])
def test_a_limit_that_cannot_be_raised_is_left_as_it_is(
    monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    def refuse(kind: int, lim: tuple[int, int]) -> None:
        raise error

    monkeypatch.setattr(resource, "getrlimit", lambda _: (1024, 4096))
    monkeypatch.setattr(resource, "setrlimit", refuse)
    connections.raise_fd_limit()  # no error: the caps follow the limit as it is


# --- the caps' choices, on the Clients object itself (any uid, a clock of the test's) --------


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Conn:
    """A connection as ``Clients`` sees it: idle (waiting, nothing pending) or not,
    and how often it was closed."""

    def __init__(
        self, clients: Clients, key: connections.Key, *, idle: bool = True, where: str = "dashboard"
    ) -> None:
        self.key, self.idle, self.aborted = key, idle, 0
        self.admitted = clients.admit_one(self, key, lambda: self.idle, self.abort, where)

    def abort(self) -> None:
        self.aborted += 1


def clients_of(cap: int, per_uid: int, clock: Clock | None = None) -> tuple[Clients, list[Any]]:
    said: list[dict[str, Any]] = []
    clients = Clients(
        lambda event, **fields: said.append({"event": event, **fields}),
        cap=cap,
        per_uid=per_uid,
        clock=clock or Clock(),
    )
    return clients, said


def test_past_the_per_uid_cap_only_that_uids_idle_connection_makes_room() -> None:
    clients, said = clients_of(cap=10, per_uid=2)
    other = Conn(clients, 2)  # another uid's, idle, and the longest waiting of all
    a1, a2 = Conn(clients, 1), Conn(clients, 1)
    a3 = Conn(clients, 1)
    assert a3.admitted and a1.aborted == 1
    assert (other.aborted, a2.aborted) == (0, 0)
    assert (clients.count(1), clients.count(2), len(clients)) == (2, 1, 3)
    assert not said


def test_the_cap_in_all_makes_room_with_any_uids_idle_connection() -> None:
    clients, said = clients_of(cap=4, per_uid=3)
    a1, a2 = Conn(clients, 1, idle=False), Conn(clients, 1)
    b1, b2 = Conn(clients, 2), Conn(clients, 2)
    assert clients.per_uid == 3 and len(clients) == 4
    c = Conn(clients, 3)  # under its own cap, at the cap in all
    assert c.admitted
    assert [x.aborted for x in (a1, a2, b1, b2)] == [0, 1, 0, 0]  # the first idle one
    assert (clients.count(1), clients.count(2), clients.count(3), len(clients)) == (1, 2, 1, 4)
    assert not said


def test_at_the_cap_in_all_with_none_idle_a_new_uid_is_refused_and_told() -> None:
    clients, said = clients_of(cap=4, per_uid=3)
    held = [Conn(clients, uid, idle=False) for uid in (1, 1, 2, 2)]
    c = Conn(clients, 3, where="control socket")
    assert not c.admitted and not any(x.aborted for x in held)
    assert (clients.count(3), len(clients)) == (0, 4)
    assert said == [
        {
            "event": "control.refused",
            "level": "warning",
            "uid": 3,
            "peer": None,
            "error": "control socket: 4 connections busy, none idle; refusing new ones",
        }
    ]


def test_a_connection_being_served_is_never_closed_to_make_room() -> None:
    """A stream (``agentctl logs -f``) has no request pending, yet it is being served."""
    clients, said = clients_of(cap=10, per_uid=2)
    stream, waiting = Conn(clients, 1), Conn(clients, 1)
    clients.busy(stream)
    assert Conn(clients, 1, idle=False).admitted
    assert (stream.aborted, waiting.aborted) == (0, 1)
    assert not Conn(clients, 1).admitted  # the stream and one that asks: none idle
    assert stream.aborted == 0 and len(said) == 1
    clients.waiting(stream)  # its stream ended: it waits for a request again
    assert Conn(clients, 1, idle=False).admitted and stream.aborted == 1


def test_a_connection_with_a_request_pending_is_passed_over_for_the_next_idle_one() -> None:
    clients, _ = clients_of(cap=10, per_uid=2)
    asking, idle = Conn(clients, 1, idle=False), Conn(clients, 1)
    assert Conn(clients, 1).admitted
    assert (asking.aborted, idle.aborted) == (0, 1)


def test_a_connection_that_waits_again_goes_to_the_end_of_the_line() -> None:
    clients, _ = clients_of(cap=10, per_uid=2)
    first, second = Conn(clients, 1), Conn(clients, 1)
    clients.busy(first)
    clients.waiting(first)  # it asked, was answered, waits again: now the newest
    assert Conn(clients, 1).admitted
    assert (first.aborted, second.aborted) == (0, 1)
    clients.waiting(object())  # not one of ours (already released): nothing happens
    clients.busy(object())
    assert len(clients) == 2


def test_an_evicted_connection_is_counted_out_once() -> None:
    """The place it gave is the new one's; when its task ends and releases it, nothing
    more is given back."""
    clients, _ = clients_of(cap=10, per_uid=2)
    old, kept = Conn(clients, 1), Conn(clients, 1)
    new = Conn(clients, 1)
    assert old.aborted == 1 and (clients.count(1), len(clients)) == (2, 2)
    clients.release(old)  # its task ends on the reset
    assert (clients.count(1), len(clients)) == (2, 2)
    for conn in (kept, new):
        clients.release(conn)
    assert (clients.count(1), len(clients)) == (0, 0)
    assert all(Conn(clients, 1, idle=False).admitted for _ in range(2))  # every place again


def test_released_places_are_given_back_per_uid_and_in_all() -> None:
    clients, _ = clients_of(cap=4, per_uid=3)
    conns = [Conn(clients, uid, idle=False) for uid in (1, 1, 1, 2)]
    assert not Conn(clients, 1, idle=False).admitted
    clients.release(conns[0])
    assert (clients.count(1), len(clients)) == (2, 3)
    assert Conn(clients, 1, idle=False).admitted
    clients.release(conns[3])
    assert clients.count(2) == 0
    assert Conn(clients, 2, idle=False).admitted


@pytest.mark.parametrize(
    ("cap", "per_uid", "expected"),
    [(1024, 768, 768), (1000, 768, 750), (10, 768, 7), (8, 768, 6), (1, 768, 1), (1024, 4, 4)],
)
def test_one_uid_leaves_a_quarter_of_the_cap_to_the_others(
    cap: int, per_uid: int, expected: int
) -> None:
    clients, _ = clients_of(cap=cap, per_uid=per_uid)
    assert (clients.cap, clients.per_uid) == (cap, expected)


def test_without_a_cap_given_it_follows_the_raised_fd_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    limits = [(1024, 2048)]
    monkeypatch.setattr(resource, "getrlimit", lambda _: limits[-1])
    monkeypatch.setattr(resource, "setrlimit", lambda kind, lim: limits.append(lim))
    clients = Clients(lambda *a, **k: None)
    assert limits[1:] == [(2048, 2048)]  # raised first, then the cap is a quarter of it
    assert (clients.cap, clients.per_uid) == (512, 384)


@pytest.mark.parametrize(
    ("key", "fields", "who"),
    [
        (1000, {"uid": 1000, "peer": None}, "uid 1000"),
        (0, {"uid": 0, "peer": None}, "uid 0"),
        ("address 10.0.0.7", {"uid": None, "peer": "address 10.0.0.7"}, "address 10.0.0.7"),
        (None, {"uid": None, "peer": None}, "an unknown peer"),
    ],
)
def test_a_refusal_names_whose_connections_fill_the_per_uid_cap(
    key: connections.Key, fields: dict[str, Any], who: str
) -> None:
    clients, said = clients_of(cap=10, per_uid=1)
    assert Conn(clients, key, idle=False).admitted
    assert not Conn(clients, key).admitted
    assert said == [
        {
            "event": "control.refused",
            "level": "warning",
            **fields,
            "error": f"dashboard: 1 connections of {who} busy, none idle; refusing new ones",
        }
    ]


def test_refusals_are_said_from_the_first_one_then_once_per_interval_per_uid() -> None:
    """Even the first refusal right after the (monotonic) clock began is said."""
    clock = Clock(0.0)
    clients, said = clients_of(cap=10, per_uid=1, clock=clock)
    for key in (1, 2):
        Conn(clients, key, idle=False)
    every = connections.REFUSED_EVERY

    def refuse(key: int) -> None:
        assert not Conn(clients, key).admitted

    refuse(1)
    assert [e["uid"] for e in said] == [1]
    clock.now = every - 0.001
    refuse(1)
    refuse(2)  # another uid's first: said
    assert [e["uid"] for e in said] == [1, 2]
    clock.now = every  # a whole interval since uid 1's: said again
    refuse(1)
    refuse(2)
    assert [e["uid"] for e in said] == [1, 2, 1]


def test_a_flood_from_many_addresses_says_each_once_and_forgets_none_too_soon() -> None:
    """Past ``MAX_CLIENTS`` addresses said, those said longer ago than ``REFUSED_EVERY``
    are forgotten; the recent ones are still remembered (not said again)."""
    clock = Clock()
    clients, said = clients_of(cap=1, per_uid=1, clock=clock)
    Conn(clients, "address holder", idle=False)  # the one place, busy
    many = [f"address 10.0.{n // 256}.{n % 256}" for n in range(connections.MAX_CLIENTS + 10)]
    for n, key in enumerate(many):
        clock.now = 1000.0 + n * 0.001
        assert not Conn(clients, key).admitted
    assert [e["peer"] for e in said] == many
    clock.now += 1.0
    for key in many:
        Conn(clients, key)
    assert len(said) == len(many)  # within the interval: nothing said again
    clock.now += connections.REFUSED_EVERY
    for key in many:
        Conn(clients, key)
    assert [e["peer"] for e in said] == many + many


# --- a client that stops reading -------------------------------------------------------------


class FakeClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock the test moves (``asyncio.timeout`` reads it)."""

    now = 0.0

    def time(self) -> float:
        return self.now


class Unread:
    """A writer whose client reads only when told to: ``drain`` waits until then."""

    def __init__(self) -> None:
        self.taken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.aborted = 0
        self.transport = self

    async def drain(self) -> None:
        await self.taken

    def abort(self) -> None:
        self.aborted += 1


def in_fake_time(body: Any) -> None:
    with asyncio.Runner(loop_factory=FakeClockLoop) as runner:
        runner.run(body(runner.get_loop()))


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_client_that_does_not_read_within_the_write_deadline_is_dropped() -> None:
    async def body(loop: FakeClockLoop) -> None:
        writer = Unread()
        draining = asyncio.ensure_future(connections.drain(writer))  # type: ignore[arg-type]
        await settle()
        loop.now += connections.WRITE_DEADLINE - 0.5
        await settle()
        assert not draining.done() and writer.aborted == 0  # still within its time
        loop.now += 0.5
        await settle()
        assert draining.done() and writer.aborted == 1
        with pytest.raises(ConnectionResetError):
            draining.result()

    in_fake_time(body)


def test_a_client_that_reads_within_the_write_deadline_is_kept() -> None:
    async def body(loop: FakeClockLoop) -> None:
        writer = Unread()
        draining = asyncio.ensure_future(connections.drain(writer))  # type: ignore[arg-type]
        await settle()
        loop.now += connections.WRITE_DEADLINE - 0.5
        writer.taken.set_result(None)
        await settle()
        assert draining.done() and draining.result() is None
        loop.now += connections.WRITE_DEADLINE  # the deadline is of that write only
        await settle()
        assert writer.aborted == 0

    in_fake_time(body)


# --- is a control connection idle? ----------------------------------------------------------


def test_a_control_connection_is_idle_until_its_client_sends_or_goes() -> None:
    """A request in the kernel's buffer (not read by the daemon yet) or in the reader's
    makes it busy; a client gone makes it idle (its place may be taken)."""

    async def main() -> None:
        ours, theirs = socket.socketpair()
        with theirs:
            reader, writer = await asyncio.open_connection(sock=ours)
            try:
                idle = connections.stream_idle(reader, writer)
                assert idle()
                theirs.sendall(b'{"cmd": "ping"')  # in the kernel: the loop has not run
                assert not idle()
                await async_poll_for(lambda: bool(reader._buffer), what="the read")  # type: ignore[attr-defined]
                assert not idle()  # in the reader's buffer now
                await reader.read(100)
                assert idle()  # read by its task: waiting again
                theirs.shutdown(socket.SHUT_RDWR)
                assert idle()
            finally:
                writer.close()

    asyncio.run(main())


def test_a_connection_without_a_socket_may_make_room() -> None:
    class Socketless:
        def get_extra_info(self, name: str) -> None:
            return None

    async def main() -> None:
        reader = asyncio.StreamReader()
        assert connections.stream_idle(reader, Socketless())()  # type: ignore[arg-type]
        reader.feed_data(b"{")
        assert not connections.stream_idle(reader, Socketless())()  # type: ignore[arg-type]

    asyncio.run(main())


def test_a_follower_dropped_for_not_reading_is_not_reported_as_a_daemon_error(
    paths: Paths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the write deadline the stream is dropped (``drain`` aborts it and raises
    ``ConnectionResetError``): the client's doing, not a bug of the daemon's."""
    dropped: list[int] = []

    async def deadline_passed(writer: asyncio.StreamWriter) -> None:
        dropped.append(1)
        writer.transport.abort()
        raise ConnectionResetError("the client does not read its reply")

    monkeypatch.setattr(streams, "drain", deadline_passed)

    async def body(server: ControlServer) -> None:
        _, writer = await asyncio.open_unix_connection(str(paths.socket))
        writer.write(b'{"cmd": "events", "args": {"follow": true}}\n')
        await writer.drain()
        await async_poll_for(lambda: bool(dropped), what="the stream's first write")
        await async_poll_for(lambda: len(server.clients) == 0, what="the follower let go")
        writer.close()
        assert (await ping(paths.socket))["ok"]

    seen = with_server(paths, body)
    assert dropped == [1]
    assert not [e for e in seen if e["event"] == "control.error"], seen
