"""The control protocol and server (SPEC 9): requests from tables, abuse of a
real daemon's socket, peer checks in-process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentd.daemon.control.client import Client, RemoteError, Unreachable
from agentd.daemon.control.commands import HANDLERS
from agentd.daemon.control.protocol import MAX_REQUEST, Code
from agentd.daemon.control.requests import (
    COMMANDS,
    EventsArgs,
    ProtocolError,
    RestartArgs,
    parse_request,
)
from agentd.daemon.control.server import ControlServer, bind_socket, peer_uid
from agentd.errors import PathError
from agentd.events import EventLog
from agentd.paths import Paths
from agentd.supervisor.api import Supervisor
from agentd.supervisor.records.history import sessions
from tests.support import Served, fake, poll_for, write_unit

# --- the wire format, from tables ---------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "cmd", "check"),
    [
        (b'{"cmd": "ping"}', "ping", {}),
        (
            b'{"cmd": "status", "args": {"units": ["a", "b.c_d-1"]}}',
            "status",
            {"units": ["a", "b.c_d-1"]},
        ),
        (
            b'{"cmd": "restart", "args": {"all": true, "reason": "deploy"}}',
            "restart",
            {"all": True, "reason": "deploy", "units": []},
        ),
        (
            b'{"cmd": "events", "args": {"follow": true}}\n',
            "events",
            {"unit": None, "lines": 20, "follow": True},
        ),
        (b'{"cmd": "logs", "args": {"unit": "a", "lines": 0}}', "logs", {"unit": "a", "lines": 0}),
        (
            b'{"cmd": "resize", "args": {"unit": "a", "cols": 10, "rows": 1000}}',
            "resize",
            {"unit": "a", "cols": 10, "rows": 1000},
        ),
    ],
)
def test_valid_requests(line: bytes, cmd: str, check: dict[str, Any]) -> None:
    got_cmd, args = parse_request(line)
    assert got_cmd == cmd
    assert {k: v for k, v in args.model_dump().items() if k in check} == check


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b"not json", "not JSON"),
        (b"\xff\xfe{}", "not JSON"),
        (b"[1, 2]", "a request is a JSON object"),
        (b'"status"', "a request is a JSON object"),
        (b'{"cmd": "rm -rf"}', "unknown command"),
        (b'{"args": {}}', "unknown command None"),
        (b'{"cmd": "ping", "extra": 1}', "unknown request key(s): extra"),
        (b'{"cmd": "ping", "args": []}', "args must be a JSON object"),
        (b'{"cmd": "ping", "args": {"x": 1}}', "x: unknown argument"),
        (b'{"cmd": "status", "args": {"units": "a"}}', "units"),
        (b'{"cmd": "status", "args": {"units": ["../etc/passwd"]}}', "invalid unit name"),
        (b'{"cmd": "status", "args": {"units": ["a/b"]}}', "no paths"),
        (b'{"cmd": "logs", "args": {"unit": ".hidden"}}', "invalid unit name"),
        (b'{"cmd": "logs", "args": {"unit": ""}}', "invalid unit name"),
        (b'{"cmd": "logs", "args": {"unit": "a", "lines": -1}}', "lines"),
        (b'{"cmd": "logs", "args": {"unit": "a", "lines": "5"}}', "lines"),
        (b'{"cmd": "stop", "args": {"all": 1}}', "all"),
        (b'{"cmd": "restart", "args": {"units": ["a"], "reason": ""}}', "reason"),
        (
            b'{"cmd": "resize", "args": {"unit": "a", "cols": 0, "rows": 24}}',
            "cols: Input should be greater than or equal to 10",
        ),
        (
            b'{"cmd": "resize", "args": {"unit": "a", "cols": 80, "rows": 1001}}',
            "rows: Input should be less than or equal to 1000",
        ),
        (b'{"cmd": "resize", "args": {"unit": "a", "cols": "80", "rows": 24}}', "cols"),
        (b'{"cmd": "resize", "args": {"unit": "a", "cols": 80.0, "rows": 24}}', "cols"),
        (b'{"cmd": "resize", "args": {"unit": "a", "cols": 80}}', "rows: Field required"),
        (
            b'{"cmd": "resize", "args": {"unit": "../a", "cols": 80, "rows": 24}}',
            "invalid unit name",
        ),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        (b'{"cmd": "' + b"x" * (MAX_REQUEST + 1) + b'"}', "too large"),
    ],
)
def test_bad_requests_say_what_is_wrong(line: bytes, says: str) -> None:
    with pytest.raises(ProtocolError) as err:
        parse_request(line)
    assert says in str(err.value)
    assert err.value.code == Code.BAD_REQUEST


def test_args_models_have_the_documented_defaults() -> None:
    assert RestartArgs().reason == "manual"
    assert EventsArgs().lines == 20 and EventsArgs().follow is False


def test_every_command_has_a_handler_or_is_a_stream() -> None:
    assert set(HANDLERS) == set(COMMANDS) - {"attach"}  # attach is only a stream


def test_history_records_merge_into_one_row_per_session() -> None:
    rows = sessions(
        [
            {
                "kind": "start",
                "session": 1,
                "at": "T1",
                "reason": "start",
                "pid": 5,
                "bootstrap": "/b-1.md",
            },
            {
                "kind": "end",
                "session": 1,
                "at": "T2",
                "reason": "exit:42",
                "duration_s": 3.5,
                "code": 42,
            },
            {"kind": "outcome", "session": 1, "outcome": "handoff", "next": "start"},
            {"kind": "start", "session": 2, "at": "T3", "reason": "exit:42", "pid": 6},
            {"kind": "end", "session": "junk"},
        ]
    )
    assert [r["session"] for r in rows] == [1, 2]
    one, two = rows
    assert one["outcome"] == "handoff" and one["reason"] == "exit:42"
    assert one["bootstrap"] == "/b-1.md" and one["duration_s"] == 3.5
    assert two["started_by"] == "exit:42" and two["reason"] is None and two["outcome"] is None


# --- a real daemon's socket -------------------------------------------------------------------


def _raw(sock_path: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(15)
    s.connect(str(sock_path))
    return s


def _replies(s: socket.socket, n: int) -> list[dict[str, Any]]:
    f = s.makefile("rb")
    return [json.loads(f.readline()) for _ in range(n)]


@pytest.mark.slow
def test_malformed_requests_get_errors_and_the_connection_goes_on(
    dhome: Path, serve: list[Served]
) -> None:
    d = Served(dhome)
    serve.append(d.ready())
    with _raw(d.socket) as s:
        s.sendall(b'garbage\n\xff\xfe\n[]\n{"cmd": "nope"}\n\n{"cmd": "ping"}\n')
        replies = _replies(s, 5)
    assert [r["ok"] for r in replies] == [False, False, False, False, True]
    assert {r["code"] for r in replies[:4]} == {2}
    assert "not JSON" in replies[0]["error"] and "unknown command" in replies[3]["error"]
    assert replies[4]["result"]["pid"] == d.proc.pid


def test_an_oversized_request_is_refused_and_the_daemon_unharmed(
    dhome: Path, serve: list[Served]
) -> None:
    d = Served(dhome)
    serve.append(d.ready())
    with _raw(d.socket) as s:
        # the daemon stops reading after 1 MiB, replies and closes
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(b'{"cmd": "' + b"x" * (2 * MAX_REQUEST) + b'"}\n')
        reply = json.loads(s.makefile("rb").readline())
    assert reply == {"ok": False, "code": 2, "error": reply["error"]}
    assert "too large" in reply["error"]
    assert d.result("ping")["pid"] == d.proc.pid
    # just under the limit is read whole (and is merely an unknown command)
    with _raw(d.socket) as s:
        s.sendall(b'{"cmd": "' + b"y" * (MAX_REQUEST - 20) + b'"}\n')
        [reply] = _replies(s, 1)
    assert "unknown command" in reply["error"]


def test_an_unterminated_last_request_is_served_and_a_slow_client_harms_no_one(
    dhome: Path, serve: list[Served]
) -> None:
    d = Served(dhome)
    serve.append(d.ready())
    with _raw(d.socket) as idle, _raw(d.socket) as half:
        half.sendall(b'{"cmd": "pi')  # a client that stalls mid-request
        assert d.result("ping")  # others are served meanwhile
        with _raw(d.socket) as s:
            s.sendall(b'{"cmd": "ping"}')
            s.shutdown(socket.SHUT_WR)
            assert _replies(s, 1)[0]["ok"]
        idle.sendall(b"")


def test_unknown_units_are_code_4(dhome: Path, serve: list[Served]) -> None:
    write_unit(dhome, "a", {"command": fake("wait"), "autostart": False})
    d = Served(dhome)
    serve.append(d.ready())
    for cmd, args in [
        ("status", {"units": ["a", "x", "y"]}),
        ("start", {"units": ["x"]}),
        ("logs", {"unit": "x"}),
        ("history", {"unit": "x"}),
        ("bootstrap", {"unit": "x"}),
        ("resize", {"unit": "x", "cols": 80, "rows": 24}),
    ]:
        reply = d.call(cmd, **args)
        assert reply["ok"] is False and reply["code"] == 4, (cmd, reply)
    assert "unknown units: x, y" in d.call("status", units=["a", "x", "y"])["error"]
    assert d.call("stop", units=["a"], all=True)["code"] == 2
    assert d.call("stop")["code"] == 2


@pytest.mark.slow
def test_events_follow_streams_until_the_daemon_stops(dhome: Path, serve: list[Served]) -> None:
    write_unit(
        dhome, "a", {"command": fake("wait"), "autostart": False, "stop": {"grace": "300ms"}}
    )
    write_unit(
        dhome, "b", {"command": fake("wait"), "autostart": False, "state": {"dir": ".agent-b"}}
    )  # two units may not share one
    d = Served(dhome)
    serve.append(d.ready())
    with Client(d.socket, timeout=15) as client:
        reply = client.request("events", unit="a", lines=5, follow=True)
        assert reply["stream"] is True
        assert [e["event"] for e in reply["result"]] == ["unit.loaded"]
        d.result("start", units=["b"])
        d.result("start", units=["a"])
        stream = client.stream()
        first = next(stream)["event"]
        assert first["event"] == "unit.state" and first["unit"] == "a"  # b filtered out
        d.kill(15)
        rest = list(stream)
    assert rest[-1] == {"end": "daemon stopping"}
    assert all(item["event"]["unit"] == "a" for item in rest[:-1])
    assert d.stop() == 0


def test_client_errors_name_the_socket(tmp_path: Path) -> None:
    path = tmp_path / "agentd.sock"
    with pytest.raises(Unreachable, match=str(path)), Client(path) as client:
        client.call("ping")


def test_a_stale_socket_is_reported_as_such(paths: Paths) -> None:
    paths.run.mkdir(mode=0o700, parents=True)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(paths.socket))
    stale.close()
    with pytest.raises(Unreachable, match="stale"), Client(paths.socket) as client:
        client.call("ping")


# --- in-process: peer credentials, socket placement ---------------------------------------------


def test_peer_uid_is_ours() -> None:
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        assert peer_uid(a) == os.geteuid()


@pytest.fixture
def paths() -> Iterator[Paths]:
    root = Path(tempfile.mkdtemp(prefix="ad", dir="/tmp"))
    yield Paths.resolve(root, env={})
    shutil.rmtree(root, ignore_errors=True)


def test_another_uid_is_refused(paths: Paths) -> None:

    async def main() -> dict[str, Any]:
        sup = Supervisor(paths, EventLog(None))

        async def reload(_why: str) -> dict[str, Any]:
            raise AssertionError("not reached")

        server = ControlServer(sup, reload=reload, uid=os.geteuid() + 1)  # as if we were another
        await server.listen()
        try:
            reader, writer = await asyncio.open_unix_connection(str(paths.socket))
            reply: dict[str, Any] = json.loads(await reader.readline())
            assert await reader.read() == b""  # and the connection is closed
            writer.close()
            return reply
        finally:
            await server.close()
            await sup.shutdown()

    reply = asyncio.run(main())
    assert reply["ok"] is False and "refused: uid" in reply["error"]
    assert not paths.socket.exists()


def test_a_live_socket_is_never_taken_over(paths: Paths) -> None:
    paths.run.mkdir(mode=0o700, parents=True)
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(str(paths.socket))
    live.listen(1)
    with live, pytest.raises(PathError, match="already listens"):
        bind_socket(paths)
    assert paths.socket.exists()


def test_remote_errors_carry_the_code(dhome: Path, serve: list[Served]) -> None:
    d = Served(dhome)
    serve.append(d.ready())
    with Client(d.socket) as client:
        with pytest.raises(RemoteError) as err:
            client.call("status", units=["ghost"])
        assert err.value.code == 4
        assert client.call("ping")["pid"] == d.proc.pid  # same connection, still fine
    poll_for(lambda: d.result("status") == [], what="an empty status")
