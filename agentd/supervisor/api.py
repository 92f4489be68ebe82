"""The supervisor: the public API over all services (docs/commands.md).

``agentd run`` uses it with one unit and no control socket; the daemon uses
the same object with many units and a control server in front. Callers
(CLIs, control server) use only the methods here, never a ``Service``'s
internals.

``reconcile`` applies a new set of unit definitions (the daemon's reload):
new units are added, deleted ones stopped and removed, changed ones take
effect from their next session. A removed service is "retiring" until its
processes are gone: its pids still count as owned, so nothing else reaps them.

A unit file that does not load is still a unit (``set_invalid``): ``status``
shows it as ``invalid`` with what is wrong (or, when its last good definition
is kept, its real state and the file's problem); the verbs that need a
definition refuse it with that message (``InvalidUnit``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentd.config.unit import Unit
from agentd.errors import AgentdError
from agentd.events import EventLog
from agentd.memory.bootstrap.render import Bootstrap
from agentd.paths import Paths
from agentd.session.screen import ScreenCapture
from agentd.supervisor.briefing import kept_bootstrap
from agentd.supervisor.children import Children
from agentd.supervisor.notifier import Notifier
from agentd.supervisor.records.history import History
from agentd.supervisor.records.lifecycle import Lifecycle
from agentd.supervisor.records.reclaim import reclaim_orphans
from agentd.supervisor.records.screens import KeptScreen
from agentd.supervisor.records.sessions import SessionRecords
from agentd.supervisor.report import details_of, details_on_disk, status_of, status_on_disk
from agentd.supervisor.service import Service
from agentd.supervisor.unitrefs import Changes, InvalidUnit, UnknownUnit
from agentd.supervisor.worktree import Git
from agentd.supervisor.worktree import describe as describe_worktree
from agentd.times import iso


class Supervisor:
    def __init__(self, paths: Paths, events: EventLog, *, subreaper: bool = False) -> None:
        self.paths = paths
        self.events = events
        self.services: dict[str, Service] = {}
        self.invalid: dict[str, dict[str, Any]] = {}  # name -> problem, for files that do not load
        self._retiring: set[Service] = set()
        self._retirements: set[asyncio.Task[None]] = set()
        self.notifier = Notifier(self.events.emit)
        self.children = Children(self._all, self.notifier, self.events.emit, subreaper=subreaper)
        self.subreaper = self.children.subreaper
        self.events.set_redact(self._redact)

    def attach(self) -> None:
        """Watch SIGCHLD and the loop's unawaited errors (``Children``)."""
        self.children.attach()

    # -- units -----------------------------------------------------------------------
    def add(self, unit: Unit) -> Service:
        service = Service(unit, paths=self.paths, events=self.events, notify=self.notifier.send)
        self.services[unit.name] = service
        return service

    def get(self, name: str) -> Service:
        try:
            return self.services[name]
        except KeyError:
            if name in self.invalid:
                raise InvalidUnit(name, self.invalid[name]) from None
            raise UnknownUnit(name) from None

    def names(self) -> list[str]:
        """The units with a definition (loaded, or kept while their file is invalid)."""
        return sorted(self.services)

    def known(self, name: str) -> bool:
        """A loaded unit, or a unit file that does not load."""
        return name in self.services or name in self.invalid

    def set_invalid(self, problems: dict[str, dict[str, Any]]) -> None:
        """The unit files that do not load now, by unit name: ``{file, line, key, message}``
        each (``since`` is kept while a file stays invalid)."""
        before, now = self.invalid, time.time()
        self.invalid = {
            name: {**problem, "since": before.get(name, {}).get("since", now)}
            for name, problem in problems.items()
        }

    def definition(self, name: str) -> Unit:
        """The unit's newest definition as its file says it (what its next session will
        use, but for an attached terminal's size)."""
        return self.get(name).definition

    def reclaim(self, name: str) -> None:
        """End what a killed agentd left running of the unit's last session."""
        self.get(name).reclaim()

    def reclaim_orphans(self) -> None:
        """End the sessions a killed agentd left of units that did not load again (their
        files deleted or broken since): in the background, awaited by ``shutdown``."""
        records = SessionRecords(self.paths.run_sessions, self.events.health)

        async def reclaim() -> None:
            await reclaim_orphans(
                records,
                set(self.services),
                locks=self.paths.run / "units",
                logs=self.paths.logs,
                emit=self.events.emit,
                at=lambda: iso(time.time()),
            )

        task = asyncio.get_running_loop().create_task(reclaim())
        self._retirements.add(task)
        task.add_done_callback(self._retirements.discard)

    async def remove(self, name: str) -> None:
        """Stop the unit (its whole tree) and forget it."""
        service = self.services.pop(name, None)
        if service is None:
            raise UnknownUnit(name)
        self._retiring.add(service)
        # shielded: a cancelled caller must not leave a session nobody owns
        task = asyncio.get_running_loop().create_task(self._retire(service))
        self._retirements.add(task)
        task.add_done_callback(self._retirements.discard)
        await asyncio.shield(task)

    async def _retire(self, service: Service) -> None:
        try:
            await service.stop(remember=False)  # its file is gone: nothing to remember for
            await service.join()
            service.close()
        finally:
            self._retiring.discard(service)

    async def reconcile(self, units: dict[str, Unit]) -> Changes:
        """Make the loaded units ``units``: add, redefine and remove; starts nothing."""
        changes = Changes()
        for name, unit in sorted(units.items()):
            if name not in self.services:
                try:
                    self.add(unit)
                except Exception as exc:  # one unit's trouble stays with that unit
                    changes.failed[name] = f"{type(exc).__name__}: {exc}"
                    continue
                changes.added.append(name)
            elif self.services[name].definition != unit:
                self.services[name].redefine(unit)
                changes.changed.append(name)
            else:
                continue
            await asyncio.sleep(0)  # hundreds of new units: requests are served between them
        changes.removed = sorted(set(self.services) - set(units))
        await asyncio.gather(*(self.remove(name) for name in changes.removed))
        return changes

    def start(self, name: str, *, resume_pause: bool = False) -> None:
        """Start the unit; AgentdError says why it cannot (another agentd runs it, another
        unit uses its state dir)."""
        refused = self.get(name).start(resume_pause=resume_pause)
        if refused:
            raise AgentdError(refused)

    async def stop(self, name: str) -> None:
        """A person stops the unit: it stays stopped across daemon restarts."""
        await self.get(name).stop()

    def enable(self, name: str, enabled: bool) -> None:
        """Start the unit when the daemon starts (or not); an invalid unit's file is
        remembered for when it loads."""
        if name in self.services:
            self.services[name].set_enabled(enabled)
        elif name in self.invalid:
            Lifecycle(self.paths.unit_lifecycle(name)).update(enabled=enabled)
        else:
            raise UnknownUnit(name)

    def starts_with_daemon(self, name: str) -> bool:
        return self.get(name).starts_with_daemon()

    def watch_terminal(self, name: str, listener: Callable[[bytes], None]) -> Callable[[], None]:
        """``listener`` gets the unit's raw terminal output (all its sessions); the undo."""
        return self.get(name).watch(listener)

    def type_input(self, name: str, data: bytes) -> bool:
        """Type into the unit's live session; False when none is running."""
        return self.get(name).type_input(data)

    def screen(self, name: str) -> ScreenCapture | KeptScreen:
        """What to draw the unit's current screen from (``capture.draw()``: slow, off the
        loop): its running session's, else its last session's (kept across restarts)."""
        return self.get(name).screen()

    def processes(self, name: str) -> list[int]:
        """The pids of the unit's running session (a process-table scan: off the loop)."""
        service = self.services.get(name)
        return service.processes() if service is not None else []

    def resize(self, name: str, cols: int, rows: int) -> None:
        """An attached terminal is ``cols`` x ``rows``: the unit's session and later ones'."""
        self.get(name).resize(cols, rows)

    def precompact(self, name: str, session: int) -> bool:
        return self.get(name).precompact(session)

    async def verify(self, name: str) -> dict[str, Any]:
        """Run the unit's completion check now, by hand; its verdict (AgentdError when the
        unit has none, or it is running)."""
        verdict = await self.get(name).verify_now()
        return verdict.as_json()

    async def worktree(self, name: str) -> dict[str, Any]:
        """The unit's git worktree (AgentdError when it has none)."""
        service = self.get(name)
        unit = service.definition
        if unit.worktree is None:
            raise AgentdError(f"{name} has no worktree: give it worktree: {{repo, branch}}")
        return await describe_worktree(unit.worktree, Git(service.helpers))

    def restart(self, name: str, reason: str = "manual") -> None:
        self.get(name).restart(reason)

    async def wait(
        self, name: str, done: Callable[[dict[str, Any]], bool], timeout: float
    ) -> dict[str, Any]:
        """Wait (at most ``timeout`` s) until ``done(status)``; the status then."""
        service = self.get(name)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(service.wait(lambda _state: done(status_of(service))), timeout)
        return status_of(service)

    def status(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        chosen = names if names else sorted({*self.services, *self.invalid})
        return [self._status(n) for n in chosen]

    def _status(self, name: str) -> dict[str, Any]:
        problem = self.invalid.get(name)
        if name in self.services:
            out = status_of(self.services[name])
        elif problem is not None:
            out = status_on_disk(self.paths, name, problem)
        else:
            raise UnknownUnit(name)
        if problem is not None:
            out["invalid"] = {k: v for k, v in problem.items() if k != "since"}
        return out

    def details(self, name: str) -> dict[str, Any]:
        """``status`` and what ``agentctl status UNIT`` adds: the unit's file, its
        effective command, workdir and state dir, today's use of its budget."""
        problem = self.invalid.get(name)
        if name in self.services:
            out = details_of(self.services[name], time.time())
        elif problem is not None:
            out = details_on_disk(self.paths, name, problem)
        else:
            raise UnknownUnit(name)
        if problem is not None:
            out["invalid"] = {k: v for k, v in problem.items() if k != "since"}
        return out

    def degraded(self) -> list[dict[str, Any]]:
        """The kinds of agentd's own writes failing now (a full disk...): what, path,
        error, since, failed; empty when every write works (``agentd.events``)."""
        failing = self.events.health.status()
        for spell in failing:
            spell["since"] = iso(spell["since"])
        return failing

    def history(self, name: str, limit: int = 1000) -> list[dict[str, Any]]:
        """The unit's history records (``logs/UNIT/history.jsonl``), oldest first.

        A unit no longer loaded is still known while its history exists.
        """
        path = self.paths.unit_logs(name) / "history.jsonl"
        if not self.known(name) and not path.exists():
            raise UnknownUnit(name)
        return History(path).recent(limit)

    def transcript(self, name: str) -> Path:
        """The path of the unit's transcript (it may not exist yet)."""
        if name in self.services:
            return self.services[name].transcript.path
        path = self.paths.unit_logs(name) / "transcript.log"
        if not self.known(name) and not path.exists():
            raise UnknownUnit(name)
        return path

    def given_bootstrap(self, name: str, session: int) -> Path:
        """Where the bootstrap session ``session`` of the unit was given is kept (it
        may be missing: never given, or pruned)."""
        self.get(name)  # UnknownUnit
        return kept_bootstrap(self.paths.unit_logs(name), session)

    def preview_bootstrap(self, name: str) -> tuple[int, Bootstrap]:
        """The session number and bootstrap the unit's next session would get now."""
        return self.get(name).preview_bootstrap()

    async def shutdown(self) -> None:
        """Stop every unit (their whole trees) and release their files."""
        await asyncio.gather(*(s.stop(remember=False) for s in self._all()))
        for service in list(self.services.values()):
            await service.join()
            service.close()
        await asyncio.gather(*self._retirements, return_exceptions=True)  # removals under way
        await self.notifier.close()
        self.children.reaper.reap()
        self.children.detach()

    def reopen_logs(self) -> None:
        """Open every transcript at its path again (SIGHUP, as logrotate expects)."""
        for service in self._all():
            service.transcript.reopen()

    def kill_all(self) -> list[int]:
        pids: list[int] = []
        for service in self._all():
            pids += service.kill_now()
        return pids

    def _all(self) -> list[Service]:
        return [*self.services.values(), *self._retiring]

    def _redact(self, text: str) -> str:
        for service in self._all():
            text = service.redactor.redact_text(text)
        return text
