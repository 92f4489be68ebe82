"""Events: one JSON object per line in ``logs/agentd.jsonl`` (docs/events.md).

Written with structlog, without touching its global configuration (tests and
the daemon may hold several ``EventLog`` values). The file is rotated by size
(``agentd.jsonl`` -> ``.1`` ... ``.N``) and opened again when it was deleted
or moved away (checked at each event) or on ``reopen`` (SIGHUP). Besides the file, listeners
receive each event dict: ``agentd run`` prints them for people, tests assert
on them, the control server will stream them.

A line that cannot be written (a full disk) is lost, never raised: the
caller's state change goes on. ``health`` (``WriteHealth``, below) counts such
failures for every writer of agentd's files and reports the first of a spell
as an event; listeners get every event either way, and the file takes lines
again as soon as it can (a line cut by the failure is ended first).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentd.errors import PathError
from agentd.fileio import replaced, rotate


def _structlog() -> Any:
    """structlog, imported without rich: when rich is installed (``agentctl top``'s
    textual brings it), structlog loads it for pretty console tracebacks, which a
    JSON-lines log never shows: about 15 MiB and 0.1 s of every agentd process.
    Where rich is loaded already, nothing changes."""
    blocked = "rich" not in sys.modules
    if blocked:
        sys.modules["rich"] = None  # type: ignore[assignment]  # "import rich" fails: not there
    try:
        import structlog
    finally:
        if blocked:
            del sys.modules["rich"]
    return structlog


structlog = _structlog()

# Every event name agentd emits; kept here so a typo is a NameError, not a silent new event.
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
UNIT_VERIFY = "unit.verify"  # the completion check ran: ok, exit_code, duration_s
UNIT_WORKTREE = "unit.worktree"  # the unit's git worktree was made
SESSION_START = "session.start"
SESSION_BOOTSTRAP = "session.bootstrap"
SESSION_INJECT = "session.inject"
SESSION_SENTINEL = "session.sentinel"
SESSION_SENTINEL_OFF = "session.sentinel_off"  # a rule ran over its time budget: dropped
SESSION_HANDOFF = "session.handoff"
SESSION_KILL = "session.kill"
SESSION_EXIT = "session.exit"
SESSION_USAGE = "session.usage"  # what the session spent, as its CLI recorded it
SESSION_ORPHAN_KILLED = "session.orphan_killed"
STATE_INIT = "state.init"  # a unit's missing state dir, created and initialised
STATE_ERROR = "state.error"  # agentd could not do its part in the state dir
DAEMON_WARNING = "daemon.warning"  # a unit file the loader could not read as it is
DAEMON_DEGRADED = "daemon.degraded"  # a kind of agentd's own writes started failing
DAEMON_RECOVERED = "daemon.recovered"  # ...and works again
UNIT_REMOVED = "unit.removed"
CONTROL_REFUSED = "control.refused"  # connections refused at a cap (once per spell)
CONTROL_ERROR = "control.error"  # a control command that raised

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

    def __init__(
        self,
        path: Path | None = None,
        *,
        redact: Redact | None = None,
        max_bytes: int = MAX_BYTES,
        backups: int = BACKUPS,
    ) -> None:
        self.path = path
        self._redact = redact
        self._listeners: list[Listener] = []
        self._fd: int | None = None
        self._torn = False  # the last line was cut by a failed write: end it first
        self.max_bytes = max_bytes
        self.backups = backups
        self.health = WriteHealth(self._report)
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
        # pid, code, exit_code and line are part of their events even when unknown (null)
        kept = ("pid", "code", "exit_code", "line")
        fields = {k: v for k, v in fields.items() if v is not None or k in kept}
        getattr(self._log, level)(event, **fields)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def reopen(self) -> None:
        """Open the file at its path again (SIGHUP, after logrotate moved it)."""
        if self.path is not None:
            self.close()
            try:
                self._open()
            except OSError as exc:  # tried again at the next event
                self.health.failed("events", self.path, exc)

    def _open(self) -> None:
        assert self.path is not None
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def _report(self, event: str, fields: dict[str, Any]) -> None:
        self.emit(event, **fields)

    def _write(self, line: str) -> None:
        if self.path is None:
            return
        data = ("\n" if self._torn else "") + line + "\n"
        start: int | None = None
        try:
            if self._fd is None or replaced(self.path, self._fd):  # deleted, or logrotate
                self.close()
                self._open()
            elif self.max_bytes > 0 and os.fstat(self._fd).st_size + len(data) > self.max_bytes:
                self.close()
                rotate(self.path, self.backups)
                self._open()
            assert self._fd is not None
            start = os.fstat(self._fd).st_size
            view = memoryview(data.encode("utf-8"))
            while view:
                view = view[os.write(self._fd, view) :]
            self._torn = False
        except OSError as exc:
            self._torn = self._torn or not _cut_back(self._fd, start)
            self.health.failed("events", self.path, exc)
            return
        self.health.ok("events")

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


def _cut_back(fd: int | None, size: int | None) -> bool:
    """Take back the part of a line a failed write left (a full disk): whether the
    file ends where it did before (a torn line is ended by the next one otherwise)."""
    if fd is None or size is None:
        return True
    try:
        if os.fstat(fd).st_size > size:
            os.ftruncate(fd, size)
    except OSError:
        return False
    return True


class _Sink:
    """structlog's logger at the end of the chain: hands each rendered line on."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self.msg = self.debug = self.info = self.warning = self.error = self.critical = write


# -- agentd's own writes that fail: counted, reported once, shown until they work again --
#
# A full disk, a read-only state dir or a logs dir that vanished must not
# wedge a unit or crash the daemon: every writer of agentd's own files (the
# event log, transcripts, histories, bootstrap copies, the lifecycle and run
# records, the state dir in file mode) catches its ``OSError`` and tells
# ``WriteHealth`` instead. The first failure of a kind of write starts a
# *spell*: it is reported once (``daemon.degraded``), later ones are only
# counted; the next write of that kind that works ends the spell
# (``daemon.recovered``), so writes resume by themselves when space returns.
# While any spell lasts the daemon is degraded: ``status()`` says which
# writes fail, since when and how often, and ``agentctl`` shows it. A kind of
# write may not come again for hours (a bootstrap, while its session runs
# quietly), so ``status()`` also tries each failing kind's directory at most
# every ``PROBE_EVERY`` seconds (a small file made, written and removed): one
# that takes writes again ends its spell.
#
# Single-threaded: called on the daemon's loop only.

Report = Callable[[str, dict[str, Any]], None]  # (event name, fields)


PROBE_EVERY = 5.0  # s between tries of a failing kind's directory (when status is asked)
PROBE_BYTES = 4096  # a block: a full disk refuses it


@dataclass
class Spell:
    """One kind of write failing, from its first failure on."""

    path: str
    error: str
    since: float
    count: int = 1
    probed: float = 0.0  # when its directory was last tried


class WriteHealth:
    def __init__(
        self, report: Report | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.report = report
        self._clock = clock
        self._failing: dict[str, Spell] = {}
        self.failed_total = 0  # failed writes since the daemon started

    def failed(self, what: str, path: Path | str, exc: BaseException) -> None:
        """A write of kind ``what`` (``events``, ``transcript:UNIT``...) to ``path`` failed."""
        self.failed_total += 1
        spell = self._failing.get(what)
        if spell is not None:
            spell.count += 1
            return
        error = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        now = self._clock()
        self._failing[what] = Spell(str(path), error, now, probed=now)  # tried from then on
        if self.report is not None:
            self.report(
                DAEMON_DEGRADED,
                {"what": what, "path": str(path), "error": error, "level": "warning"},
            )

    def ok(self, what: str, *, probed: bool = False) -> None:
        """A write of kind ``what`` worked (or a probe in its directory did: ``probed``):
        a spell of failures of it is over."""
        if not self._failing:  # the common case: one dict test per write
            return
        spell = self._failing.pop(what, None)
        if spell is not None and self.report is not None:
            fields: dict[str, Any] = {"what": what, "path": spell.path, "failed": spell.count}
            if probed:
                fields["probed"] = True
            self.report(DAEMON_RECOVERED, fields)

    def recheck(self) -> None:
        """End the spells whose directory takes writes again (each tried at most every
        ``PROBE_EVERY`` s)."""
        now = self._clock()
        for what, spell in list(self._failing.items()):
            if now - spell.probed < PROBE_EVERY:
                continue
            spell.probed = now
            if _takes_writes(Path(spell.path)):
                self.ok(what, probed=True)

    @property
    def degraded(self) -> bool:
        return bool(self._failing)

    def status(self) -> list[dict[str, Any]]:
        """The writes failing now: what, path, error, since (epoch s), failed (count)."""
        if self._failing:
            self.recheck()
        return [
            {"what": what, "path": s.path, "error": s.error, "since": s.since, "failed": s.count}
            for what, s in sorted(self._failing.items())
        ]


def _takes_writes(path: Path) -> bool:
    """Does the directory of ``path`` (or ``path``, a directory) take a block now?"""
    directory = path if path.is_dir() else path.parent
    probe = directory / f".agentd-probe-{os.getpid()}"
    try:
        fd = os.open(
            probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
    except OSError:
        return False
    try:
        return os.write(fd, b"\0" * PROBE_BYTES) == PROBE_BYTES
    except OSError:
        return False
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(probe)
