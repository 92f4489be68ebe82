"""The client side of the control protocol (``agentd.daemon.control.protocol`` has the
wire format): what ``agentctl`` needs to talk to agentd, and nothing heavier.

Kept apart from the server's request validation (pydantic) so that ``agentctl
status`` starts in a fraction of the time.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentd.daemon.control.protocol import MAX_REPLY, Code, encode
from agentd.errors import AgentdError

CONNECT_RETRY = 0.01  # seconds between tries while the daemon's backlog is full


def listening(path: Path, timeout: float = 1.0) -> bool:
    """Does something accept connections on the Unix socket ``path``?"""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        try:
            probe.connect(str(path))
        except OSError:
            return False
        return True


class Unreachable(AgentdError):
    """No daemon answers on the socket."""


class RemoteError(AgentdError):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class Client:
    """A blocking client: one connection, requests one after the other."""

    def __init__(self, path: Path, *, timeout: float | None = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._file: Any = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            _connect(sock, self.path, self.timeout)
        except OSError as exc:
            sock.close()
            why = {
                FileNotFoundError: "no socket there",
                ConnectionRefusedError: "nobody listens (a stale socket)",
            }.get(type(exc), exc.strerror or str(exc))
            raise Unreachable(
                f"cannot reach agentd at {self.path}: {why}. Is it running? Start it with "
                "`agentd serve` (or `systemctl --user start agentd`); AGENTD_HOME and "
                "AGENTD_SOCKET must match the daemon's."
            ) from None
        self._sock = sock
        self._file = sock.makefile("rb")

    def call(self, cmd: str, **args: Any) -> Any:
        """Send one request and return its result; RemoteError on an error reply."""
        return self.request(cmd, **args)["result"]

    def request(self, cmd: str, **args: Any) -> dict[str, Any]:
        if self._sock is None:
            self.connect()
        assert self._sock is not None
        self._sock.sendall(encode({"cmd": cmd, "args": args}))
        reply = self.read()
        if reply is None:
            raise RemoteError(f"agentd closed the connection during {cmd!r}", Code.FAILURE)
        if not reply.get("ok"):
            raise RemoteError(str(reply.get("error")), int(reply.get("code", Code.FAILURE)))
        return reply

    def read(self) -> dict[str, Any] | None:
        """The next reply line (None at the end of the connection)."""
        line = self._file.readline(MAX_REPLY)
        if not line:
            return None
        value: dict[str, Any] = json.loads(line)
        return value

    def send(self, obj: Any) -> None:
        """One line to the daemon inside a stream (``attach`` input)."""
        assert self._sock is not None
        self._sock.sendall(encode(obj))

    def stream(self) -> Iterator[dict[str, Any]]:
        """The lines after a streaming reply, until the daemon ends the stream."""
        if self._sock is not None:
            self._sock.settimeout(None)  # events may be hours apart
        while (item := self.read()) is not None:
            yield item
            if "end" in item:
                return

    def close(self) -> None:
        if self._sock is not None:
            # Wake a thread blocked reading the stream (attach): closing the
            # buffered file would wait for that read's lock.
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _connect(sock: socket.socket, path: Path, timeout: float | None) -> None:
    """``connect``, waiting while the daemon's backlog is full (a flood of other
    clients): a Unix socket with a timeout says EAGAIN at once instead of waiting."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            sock.connect(str(path))
            return
        except BlockingIOError:
            if deadline is not None and time.monotonic() >= deadline:
                raise
            time.sleep(CONNECT_RETRY)
