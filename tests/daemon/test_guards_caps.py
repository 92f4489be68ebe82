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
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentd.daemon.control import connections
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
    [(resource.RLIM_INFINITY, 1024), (1 << 20, 1024), (1024, 256), (16, 8), (40, 10)],
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
    asked: list[tuple[int, int]] = []
    monkeypatch.setattr(resource, "getrlimit", lambda _: limits)
    monkeypatch.setattr(resource, "setrlimit", lambda kind, lim: asked.append(lim))
    connections.raise_fd_limit()
    assert asked == ([] if raised is None else [raised])


def test_a_limit_that_cannot_be_raised_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(kind: int, lim: tuple[int, int]) -> None:
        raise ValueError("not allowed")

    monkeypatch.setattr(resource, "getrlimit", lambda _: (1024, 4096))
    monkeypatch.setattr(resource, "setrlimit", refuse)
    connections.raise_fd_limit()  # no error: the caps follow the limit as it is
