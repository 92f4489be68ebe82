"""The control protocol between ``agentctl`` and ``agentd`` (SPEC 9): the wire
format, and the daemon's validation of requests. The client side (what
``agentctl`` imports) is ``agentd.daemon.client``.

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
(typed into the live session). The first ``data`` repaints the unit's current
screen (clear, then its text, colours and cursor), so what was shown before
the client came is there at once; then the output streams as it comes.

Commands (args with defaults) -> result:

=========  ===================================================  ==========================
ping       {}                                                   {pid, version, units, socket,
                                                                 dashboard: URL or null}
status     {units: []}                                          [status]  (all when empty)
start      {units: [], all: false}                              [status]  once started
stop       {units: [], all: false}                              [status]  once ended
restart    {units: [], all: false, reason: "manual"}            [status]  new session up
enable     {units: [], all: false, now: false}                  [status]  (now: started)
disable    {units: [], all: false, now: false}                  [status]  (now: stopped)
reload     {}                                                   {loaded, changed, removed,
                                                                 invalid: [{file, line, error}]}
logs       {unit, lines: 50}                                    {path, text, size}
events     {unit: null, lines: 20, follow: false}               [event]
history    {unit, lines: 20}                                    [session]
bootstrap  {unit}                                               {session, text, tokens,
                                                                 warnings}
attach     {unit}                                               {unit, session, state}, then
                                                                 a two-way stream
screen     {unit}                                               {rows: [text], cursor: [row,
                                                                 col], cols, session}
resize     {unit, cols, rows}                                   {unit, cols, rows}
precompact {unit, session}                                      {ending: bool}: the CLI's
                                                                 PreCompact hook; true when
                                                                 that session is being ended
=========  ===================================================  ==========================

``status`` objects: unit, state, pid (null), session, uptime_s, output_bytes
(of the running session), restarts, last_reason, last_at, since, enabled,
paused_until (when paused), detail (what a failed or stalled state says
more, e.g. the OS error of a command that cannot be executed), invalid (when
the unit file does not load: file, line, key, message, and problems when
there are several). ``screen`` draws the last session's screen (running or
not) as a terminal would show it; rows are cut of trailing blanks, like
``tmux capture-pane -p``. ``resize`` gives the unit the size of an attached
terminal (``agentctl attach`` sends it, and again on each SIGWINCH): cols and
rows within ``PTY_MIN``..``PTY_MAX``, or a code-2 error; the running session's
pty is resized (the agent gets SIGWINCH) and later sessions start at that size,
which stays until another resize or a reload that changes the unit's ``pty:``.
``logs`` returns the
raw transcript tail (agentctl strips ANSI) and the file's path and size, from
which ``agentctl logs -f`` follows the file itself.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from agentd.config.ptysize import PTY_MAX, PTY_MIN
from agentd.daemon.client import Code, check_unit_name, encode
from agentd.errors import AgentdError

MAX_REQUEST = 1024 * 1024


class ProtocolError(AgentdError):
    """A request the daemon cannot serve; becomes an error reply with ``code``."""

    def __init__(self, message: str, code: Code = Code.BAD_REQUEST) -> None:
        super().__init__(message)
        self.code = code


UnitName = Annotated[str, AfterValidator(check_unit_name)]


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class NoArgs(Args):
    pass


class StatusArgs(Args):
    units: list[UnitName] = []


class UnitsArgs(StatusArgs):
    all: bool = False


class EnableArgs(UnitsArgs):
    now: bool = False


class RestartArgs(UnitsArgs):
    reason: Annotated[str, Field(min_length=1, max_length=200)] = "manual"


class UnitArgs(Args):
    unit: UnitName


class SessionArgs(UnitArgs):
    session: Annotated[int, Field(ge=1)]


class ResizeArgs(UnitArgs):
    cols: Annotated[int, Field(ge=PTY_MIN, le=PTY_MAX)]
    rows: Annotated[int, Field(ge=PTY_MIN, le=PTY_MAX)]


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
    "restart": RestartArgs, "enable": EnableArgs, "disable": EnableArgs, "reload": NoArgs,
    "logs": LogsArgs, "events": EventsArgs,
    "history": TailArgs, "bootstrap": UnitArgs, "attach": UnitArgs, "precompact": SessionArgs,
    "screen": UnitArgs, "resize": ResizeArgs,
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


def ok(result: Any, **extra: Any) -> bytes:
    return encode({"ok": True, "result": result, **extra})


def error(message: str, code: int = Code.FAILURE) -> bytes:
    return encode({"ok": False, "error": message, "code": int(code)})


