"""The supervisor: the public API over all services (SPEC 8).

``agentd run`` uses it with one unit and no control socket; the daemon will
use the same object with many units and a control server in front. Callers
(CLIs, control server) use only the methods here, never a ``Service``'s
internals.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from agentd.events import EventLog
from agentd.notifier import Notifier
from agentd.paths import Paths
from agentd.reaper import Reaper, enable_subreaper
from agentd.service import Service
from agentd.unit import Unit


class UnknownUnit(KeyError):
    pass


class Supervisor:
    def __init__(self, paths: Paths, events: EventLog, *, subreaper: bool = False) -> None:
        self.paths = paths
        self.events = events
        self.services: dict[str, Service] = {}
        # As a child subreaper, double-forked grandchildren of sessions are
        # re-parented to us: we can find them and must reap them.
        self.subreaper = enable_subreaper() if subreaper else False
        self.reaper = Reaper(owned=self._owned)
        self.notifier = Notifier(self.events.emit)
        self.events.set_redact(self._redact)
        self._sigchld = False

    def attach(self) -> None:
        """Watch SIGCHLD on the running loop (exit fallback + reaping adopted orphans)."""
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGCHLD, self._on_sigchld)
        self._sigchld = True

    def detach(self) -> None:
        if self._sigchld:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGCHLD)
            self._sigchld = False

    # -- units -----------------------------------------------------------------------
    def add(self, unit: Unit) -> Service:
        service = Service(unit, paths=self.paths, events=self.events, notify=self.notifier.send)
        self.services[unit.name] = service
        return service

    def get(self, name: str) -> Service:
        try:
            return self.services[name]
        except KeyError:
            raise UnknownUnit(name) from None

    def start(self, name: str) -> None:
        self.get(name).start()

    async def stop(self, name: str) -> None:
        await self.get(name).stop()

    def restart(self, name: str, reason: str = "manual") -> None:
        self.get(name).restart(reason)

    def status(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        chosen = names if names else sorted(self.services)
        return [self.get(n).status() for n in chosen]

    async def shutdown(self) -> None:
        """Stop every unit (their whole trees) and release their files."""
        await asyncio.gather(*(s.stop() for s in self.services.values()))
        for service in self.services.values():
            await service.join()
            service.close()
        await self.notifier.close()
        self.reaper.reap()
        self.detach()

    def kill_all(self) -> list[int]:
        pids: list[int] = []
        for service in self.services.values():
            pids += service.kill_now()
        return pids

    # -- processes ---------------------------------------------------------------------
    def _owned(self, pid: int) -> bool:
        if self.notifier.owns(pid):
            return True
        for service in self.services.values():
            session = service.session
            if session is not None and session.pid == pid and not session.child.reaped:
                return True
        return False

    def _on_sigchld(self) -> None:
        for service in self.services.values():
            if service.session is not None:
                service.session.check_exit()
        self.notifier.check()
        self.reaper.reap()

    def _redact(self, text: str) -> str:
        for service in self.services.values():
            text = service.redactor.redact_text(text)
        return text
