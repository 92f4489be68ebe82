"""Keeping the supervisor's units equal to the unit files.

A scan reads the files on a worker thread (``unitdir``), and the result is
applied: new units added (and started if enabled), changed ones redefined,
deleted ones stopped and forgotten; a file that does not load is reported
once per change of what is wrong with it, and its unit keeps its last good
definition. The watcher's rescans and reloads take turns (``lock``).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from agentd import events as ev
from agentd.config.unit import Unit
from agentd.daemon.unitdir import Scan, UnitDir, describe_error, problem
from agentd.daemon.watch import UnitsWatcher
from agentd.errors import AgentdError, UnitError
from agentd.events import EventLog
from agentd.paths import Paths
from agentd.supervisor.api import Supervisor
from agentd.supervisor.unitrefs import Changes


class UnitLoader:
    def __init__(self, paths: Paths, sup: Supervisor, events: EventLog) -> None:
        self.paths = paths
        self.sup = sup
        self.events = events
        self.units = UnitDir(paths.units)
        self.lock = asyncio.Lock()
        self.stopping = False
        self.watcher: UnitsWatcher | None = None
        self._reported: dict[str, str] = {}  # file -> the problem last reported for it
        self._tasks: set[asyncio.Task[Any]] = set()

    async def load_all(self) -> dict[str, Any]:
        """Read and apply every unit file (the daemon's start)."""
        return await self._apply(await self._scan(force=True))

    def stop(self) -> None:
        """No more rescans (the daemon stops)."""
        self.stopping = True
        if self.watcher is not None:
            self.watcher.stop()

    async def reload(self, why: str) -> dict[str, Any]:
        """Read every unit file again and apply the result (SIGHUP, agentctl reload)."""
        async with self.lock:
            result = await self._apply(await self._scan(force=True))
        self.events.emit(
            ev.DAEMON_RELOAD,
            why=why,
            loaded=len(result["loaded"]),
            changed=len(result["changed"]),
            removed=len(result["removed"]),
            invalid=len(result["invalid"]),
        )
        return result

    async def _rescan(self) -> None:
        """The watcher saw a change: apply the files whose stat changed."""
        async with self.lock:
            if self.stopping:
                return
            try:
                await self._apply(await self._scan())
            except AgentdError as exc:  # e.g. the units dir became unreadable
                self.events.emit(ev.DAEMON_WARNING, level="warning", error=str(exc))

    async def _scan(self, *, force: bool = False) -> Scan:
        """Read the unit files on a worker thread: the loop goes on serving meanwhile."""
        return await asyncio.to_thread(self.units.scan, force=force)

    async def _apply(self, scan: Scan) -> dict[str, Any]:
        if self.stopping:
            raise AgentdError("agentd is stopping")
        units = dict(scan.units)
        invalid: dict[str, dict[str, Any]] = {}
        for path, exc in scan.errors.items():
            name = path.stem
            kept = name in self.sup.services and name not in units
            if kept:  # the last good definition stays
                units[name] = self.sup.definition(name)
            if name not in scan.units:  # not a second file of a unit that loads
                invalid[name] = problem(exc)
            self._report_invalid(path, exc, kept=kept)
        self._reported = {
            f: said for f, said in self._reported.items() if Path(f) in scan.errors
        }  # fixed ones may be reported again
        changes = await self.sup.reconcile(units)
        for name, why in changes.failed.items():  # loaded, but cannot be supervised
            error = UnitError(f"cannot be supervised: {why}", file=units[name].source)
            invalid[name] = problem(error)
            self._report_invalid(Path(str(units[name].source)), error, kept=False)
        self.sup.set_invalid(invalid)
        self._report(changes, units)
        for name in changes.added:
            self.sup.reclaim(name)
            if self.sup.starts_with_daemon(name):  # a usage-limit pause survives a restart
                with contextlib.suppress(AgentdError):  # a refusal is a unit.error event
                    self.sup.start(name, resume_pause=True)
        return {
            "loaded": changes.added,
            "changed": changes.changed,
            "removed": changes.removed,
            "invalid": [
                {"file": str(p), "line": e.line, "error": describe_error(e)}
                for p, e in scan.errors.items()
            ],
        }

    def _report_invalid(self, path: Path, exc: UnitError, *, kept: bool) -> None:
        """One ``unit.invalid`` per change of what is wrong with a file."""
        said = str(exc)
        if self._reported.get(str(path)) == said:
            return
        self._reported[str(path)] = said
        self.events.emit(
            ev.UNIT_INVALID,
            level="error",
            unit=path.stem,
            file=str(path),
            line=exc.line,
            key=exc.key,
            error=describe_error(exc),
            kept="the previous definition" if kept else None,
        )

    def _report(self, changes: Changes, units: dict[str, Unit]) -> None:
        for name in changes.added + changes.changed:
            unit = units[name]
            self.events.emit(
                ev.UNIT_LOADED,
                unit=name,
                file=str(unit.source),
                change="new" if name in changes.added else "changed",
                autostart=unit.autostart,
            )
        for name in changes.removed:
            self.events.emit(ev.UNIT_REMOVED, unit=name)

    def watch(self) -> None:
        """Rescan when the units dir changes (SIGHUP and ``agentctl reload`` work without)."""
        self.watcher = UnitsWatcher(self.paths.units, self._units_changed)
        try:
            self.watcher.start()
        except OSError as exc:  # e.g. the inotify watch limit: SIGHUP still works
            self.watcher = None
            self.events.emit(
                ev.DAEMON_WARNING,
                level="warning",
                error=f"cannot watch {self.paths.units}: {exc}; "
                "use agentctl reload (or SIGHUP) after changes",
            )

    def _units_changed(self) -> None:
        task = asyncio.get_running_loop().create_task(self._rescan())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
