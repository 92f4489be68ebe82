"""Events: one JSON object per line in ``logs/agentd.jsonl`` (SPEC 6).

Written with structlog, without touching its global configuration (tests and
the daemon may hold several ``EventLog`` values). The file is rotated by size
(``agentd.jsonl`` -> ``.1`` ... ``.N``) and opened again when it was deleted
or moved away (checked at each event) or on ``reopen`` (SIGHUP). Besides the file, listeners
receive each event dict: ``agentd run`` prints them for people, tests assert
on them, the control server will stream them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import structlog

from agentd.errors import PathError
from agentd.logfiles import replaced, rotate

# Event names (SPEC 6); kept here so a typo is a NameError, not a silent new event.
DAEMON_START = "daemon.start"
DAEMON_STOP = "daemon.stop"
DAEMON_RELOAD = "daemon.reload"
DAEMON_ERROR = "daemon.error"
UNIT_LOADED = "unit.loaded"
UNIT_INVALID = "unit.invalid"
UNIT_STATE = "unit.state"
UNIT_NOTIFY = "unit.notify"
UNIT_ERROR = "unit.error"
UNIT_BUDGET = "unit.budget"
SESSION_START = "session.start"
SESSION_BOOTSTRAP = "session.bootstrap"
SESSION_INJECT = "session.inject"
SESSION_SENTINEL = "session.sentinel"
SESSION_HANDOFF = "session.handoff"
SESSION_KILL = "session.kill"
SESSION_EXIT = "session.exit"
SESSION_ORPHAN_KILLED = "session.orphan_killed"
STATE_INIT = "state.init"  # a unit's missing state dir, created and initialised
STATE_ERROR = "state.error"  # agentd could not do its part in the state dir

Listener = Callable[[dict[str, Any]], None]
Redact = Callable[[str], str]


def _head_first(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    """timestamp, level, event, unit, session first: easier to read with ``tail -f``."""
    head = ("timestamp", "level", "event", "unit", "session")
    ordered = {k: event[k] for k in head if k in event}
    ordered.update((k, v) for k, v in event.items() if k not in ordered)
    return ordered


MAX_BYTES = 10_000_000  # as a unit's logs.max_bytes and logs.backups
BACKUPS = 5


class EventLog:
    """Emits events to a JSON-lines file (optional) and to listeners."""

    def __init__(self, path: Path | None = None, *, redact: Redact | None = None,
                 max_bytes: int = MAX_BYTES, backups: int = BACKUPS) -> None:
        self.path = path
        self._redact = redact
        self._listeners: list[Listener] = []
        self._file: TextIO | None = None
        self.max_bytes = max_bytes
        self.backups = backups
        if path is not None:
            try:
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                self._open()
            except OSError as exc:  # logs dir not writable, under a regular file...
                raise PathError.cannot("write the event log", path, exc) from None
        processors: list[Any] = [
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            self._scrub,
            _head_first,
            self._fan_out,
            structlog.processors.JSONRenderer(sort_keys=False),
        ]
        sink = _Sink(self._write) if path is not None else structlog.ReturnLogger()
        self._log = structlog.wrap_logger(sink, processors=processors)

    def set_redact(self, redact: Redact | None) -> None:
        self._redact = redact

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def emit(self, event: str, *, level: str = "info", **fields: Any) -> None:
        # pid, code and line are part of their events even when unknown (null)
        fields = {k: v for k, v in fields.items() if v is not None or k in ("pid", "code", "line")}
        getattr(self._log, level)(event, **fields)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def reopen(self) -> None:
        """Open the file at its path again (SIGHUP, after logrotate moved it)."""
        if self._file is not None:
            self.close()
            self._open()

    def _open(self) -> None:
        assert self.path is not None
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._file = os.fdopen(fd, "a", encoding="utf-8", buffering=1)

    def _write(self, line: str) -> None:
        if self._file is None:
            return
        assert self.path is not None
        if replaced(self.path, self._file.fileno()):  # deleted, or moved by logrotate
            self.reopen()
        elif self.max_bytes > 0 and os.fstat(self._file.fileno()).st_size + len(line) > \
                self.max_bytes:
            self.close()
            rotate(self.path, self.backups)
            self._open()
        assert self._file is not None
        self._file.write(line + "\n")

    def _scrub(self, _logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
        if self._redact is not None:
            for key, value in event.items():
                if isinstance(value, str) and key not in ("event", "timestamp", "level"):
                    event[key] = self._redact(value)
        return event

    def _fan_out(self, _logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
        for listener in list(self._listeners):
            try:
                listener(dict(event))
            except Exception:
                # A listener that fails (a closed console pipe, a gone client)
                # is dropped: it must never break the supervisor's loop.
                self._listeners.remove(listener)
        return event


class _Sink:
    """structlog's logger at the end of the chain: hands each rendered line on."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self.msg = self.debug = self.info = self.warning = self.error = self.critical = write
