"""The daemon's validation of control requests (``agentd.daemon.control.protocol`` has
the wire format and the commands' table): one pydantic model of arguments per
command, and ``parse_request``, which turns a request line into a command and
its checked arguments or a ``ProtocolError`` saying what is wrong."""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from agentd.config.fields import without_plugin_search
from agentd.config.ptysize import PTY_MAX, PTY_MIN
from agentd.daemon.control.protocol import MAX_REQUEST, Code, check_unit_name
from agentd.errors import AgentdError


class ProtocolError(AgentdError):
    """A request the daemon cannot serve; becomes an error reply with ``code``."""

    def __init__(self, message: str, code: Code = Code.BAD_REQUEST) -> None:
        super().__init__(message)
        self.code = code


UnitName = Annotated[str, AfterValidator(check_unit_name)]
without_plugin_search()  # before the first model (the unit schema's may come later)


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


class DescribeArgs(StatusArgs):
    lines: Annotated[int, Field(ge=0, le=1000)] = 10


class TailArgs(UnitArgs):
    lines: Annotated[int, Field(ge=0, le=100_000)] = 20


class LogsArgs(TailArgs):
    lines: Annotated[int, Field(ge=0, le=100_000)] = 50


class EventsArgs(Args):
    unit: UnitName | None = None
    lines: Annotated[int, Field(ge=0, le=100_000)] = 20
    follow: bool = False


COMMANDS: dict[str, type[Args]] = {
    "ping": NoArgs,
    "status": StatusArgs,
    "start": UnitsArgs,
    "stop": UnitsArgs,
    "restart": RestartArgs,
    "enable": EnableArgs,
    "disable": EnableArgs,
    "reload": NoArgs,
    "logs": LogsArgs,
    "events": EventsArgs,
    "history": TailArgs,
    "bootstrap": UnitArgs,
    "attach": UnitArgs,
    "precompact": SessionArgs,
    "screen": UnitArgs,
    "resize": ResizeArgs,
    "describe": DescribeArgs,
    "unit": UnitArgs,
    "verify": UnitArgs,
    "worktree": UnitArgs,
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
