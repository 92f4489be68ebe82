"""The control protocol between ``agentctl`` and ``agentd`` (SPEC 9).

Transport: a Unix stream socket at ``Paths.socket``, mode 0600 inside a 0700
directory. The daemon serves only peers running as its own uid.

Framing: newline-delimited JSON (UTF-8). A request is one line holding one
object; each request gets one reply line::

    -> {"cmd": "status", "args": {"units": ["web"]}}
    <- {"ok": true, "result": [{"unit": "web", "state": "running", ...}]}
    -> {"cmd": "stop", "args": {"units": ["nope"]}}
    <- {"ok": false, "error": "unknown unit: nope", "code": 4}

A connection may carry several requests, one after the other. ``args`` may
be left out when a command takes none; unknown keys are errors.

Error ``code`` values are agentctl's exit codes: 1 the command failed, 2 a bad
request (not JSON, not an object, unknown command or argument, a wrong type,
an invalid unit name), 4 an unknown unit. A request line longer than
``MAX_REQUEST`` (1 MiB) gets a code-2 reply and the daemon closes that
connection without reading the rest; nothing else is affected.

Streaming: ``events`` with ``"follow": true`` replies as usual (``result``
holds the recent events) with ``"stream": true``, then sends one line per
new event until the client disconnects::

    <- {"ok": true, "result": [...], "stream": true}
    <- {"event": {"timestamp": "...", "event": "unit.state", ...}}
    <- {"end": "daemon stopping"}        (or "client too slow")

The stream also ends when the client closes its side or sends anything.

``attach`` ({unit}) replies ``{"ok": true, "result": {unit, session, state},
"stream": true}`` and then relays the unit's terminal both ways, across its
sessions, until either side closes: the daemon sends ``{"data": BASE64}``
(raw pty output) and ``{"end": WHY}``; the client sends ``{"input": BASE64}``
(typed into the live session).

Commands (args with defaults) -> result:

=========  ===================================================  ==========================
ping       {}                                                   {pid, version, units, socket}
status     {units: []}                                          [status]  (all when empty)
start      {units: [], all: false}                              [status]  once started
stop       {units: [], all: false}                              [status]  once ended
restart    {units: [], all: false, reason: "manual"}            [status]  new session up
reload     {}                                                   {loaded, changed, removed,
                                                                 invalid: [{file, line, error}]}
logs       {unit, lines: 50}                                    {path, text, size}
events     {unit: null, lines: 20, follow: false}               [event]
history    {unit, lines: 20}                                    [session]
bootstrap  {unit}                                               {session, text, tokens,
                                                                 warnings}
attach     {unit}                                               {unit, session, state}, then
                                                                 a two-way stream
precompact {unit, session}                                      {ending: bool}: the CLI's
                                                                 PreCompact hook; true when
                                                                 that session is being ended
=========  ===================================================  ==========================

``status`` objects: unit, state, pid (null), session, uptime_s, restarts,
last_reason, last_at, since, paused_until (when paused). ``logs`` returns the
raw transcript tail (agentctl strips ANSI) and the file's path and size, from
which ``agentctl logs -f`` follows the file itself.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
from collections.abc import Iterator
from enum import IntEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from agentd.config.unit import UNIT_NAME
from agentd.errors import AgentdError

MAX_REQUEST = 1024 * 1024
MAX_REPLY = 256 * 1024 * 1024  # a bound for the client, far above any real reply


class Code(IntEnum):
    FAILURE = 1
    BAD_REQUEST = 2
    UNKNOWN_UNIT = 4


class ProtocolError(AgentdError):
    """A request the daemon cannot serve; becomes an error reply with ``code``."""

    def __init__(self, message: str, code: Code = Code.BAD_REQUEST) -> None:
        super().__init__(message)
        self.code = code


def check_unit_name(name: str) -> str:
    if not re.fullmatch(UNIT_NAME, name):
        raise ValueError(f"invalid unit name {name!r}: a unit is named by its file stem, "
                         f"{UNIT_NAME} (no paths)")
    return name


UnitName = Annotated[str, AfterValidator(check_unit_name)]


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class NoArgs(Args):
    pass


class StatusArgs(Args):
    units: list[UnitName] = []


class UnitsArgs(StatusArgs):
    all: bool = False


class RestartArgs(UnitsArgs):
    reason: Annotated[str, Field(min_length=1, max_length=200)] = "manual"


class UnitArgs(Args):
    unit: UnitName


class SessionArgs(UnitArgs):
    session: Annotated[int, Field(ge=1)]


class TailArgs(UnitArgs):
    lines: Annotated[int, Field(ge=0, le=100_000)] = 20


class LogsArgs(TailArgs):
    lines: Annotated[int, Field(ge=0, le=100_000)] = 50


class EventsArgs(Args):
    unit: UnitName | None = None
    lines: Annotated[int, Field(ge=0, le=100_000)] = 20
    follow: bool = False


COMMANDS: dict[str, type[Args]] = {
    "ping": NoArgs, "status": StatusArgs, "start": UnitsArgs, "stop": UnitsArgs,
    "restart": RestartArgs, "reload": NoArgs, "logs": LogsArgs, "events": EventsArgs,
    "history": TailArgs, "bootstrap": UnitArgs, "attach": UnitArgs, "precompact": SessionArgs,
}


def parse_request(line: bytes) -> tuple[str, Args]:
    """The command and its validated args; ProtocolError says what is wrong."""
    if len(line.rstrip(b"\n")) > MAX_REQUEST:
        raise ProtocolError(f"request too large (over {MAX_REQUEST} bytes)")
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise ProtocolError(f"malformed request, not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError('a request is a JSON object: {"cmd": ..., "args": {...}}')
    extra = sorted(set(data) - {"cmd", "args"})
    if extra:
        raise ProtocolError(f"unknown request key(s): {', '.join(extra)}")
    cmd, args = data.get("cmd"), data.get("args", {})
    if not isinstance(cmd, str) or cmd not in COMMANDS:
        raise ProtocolError(f"unknown command {cmd!r}; known: {', '.join(COMMANDS)}")
    if not isinstance(args, dict):
        raise ProtocolError(f"{cmd}: args must be a JSON object")
    try:
        return cmd, COMMANDS[cmd].model_validate(args)
    except ValidationError as exc:
        raise ProtocolError(f"{cmd}: {_explain(exc)}") from None


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "args"
        cause = err.get("ctx", {}).get("error")
        msg = str(cause) if cause is not None else err["msg"]
        parts.append(f"{where}: {'unknown argument' if err['type'] == 'extra_forbidden' else msg}")
    return "; ".join(parts)


def encode(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str).encode() + b"\n"


def ok(result: Any, **extra: Any) -> bytes:
    return encode({"ok": True, "result": result, **extra})


def error(message: str, code: int = Code.FAILURE) -> bytes:
    return encode({"ok": False, "error": message, "code": int(code)})


# --- the client side ---------------------------------------------------------------


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
            sock.connect(str(self.path))
        except OSError as exc:
            sock.close()
            why = {FileNotFoundError: "no socket there", ConnectionRefusedError:
                   "nobody listens (a stale socket)"}.get(type(exc), exc.strerror or str(exc))
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
