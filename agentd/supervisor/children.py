"""The supervisor's children: SIGCHLD on the loop (a session's exit, a notify
command's, an adopted orphan's) and the loop's errors that no task awaited.

As a child subreaper, agentd adopts the double-forked grandchildren of its
sessions: it can find them, and must reap them (``Reaper``), but never a pid
a session, a notify command, a completion check or git still owns.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentd import events as ev
from agentd.process.reaper import Reaper, enable_subreaper
from agentd.supervisor.notifier import Notifier

if TYPE_CHECKING:
    from agentd.supervisor.service import Service


class Children:
    def __init__(
        self,
        services: Callable[[], list[Service]],
        notifier: Notifier,
        emit: Callable[..., None],
        *,
        subreaper: bool,
    ) -> None:
        self._services = services
        self.notifier = notifier
        self._emit = emit
        self.subreaper = enable_subreaper() if subreaper else False
        self.reaper = Reaper(owned=self._owned)
        self._sigchld = False

    def attach(self) -> None:
        """Watch SIGCHLD on the running loop (exit fallback + reaping adopted orphans);
        an error no task awaited becomes an event, not a traceback on stderr."""
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGCHLD, self._on_sigchld)
        loop.set_exception_handler(self._on_loop_error)
        self._sigchld = True

    def detach(self) -> None:
        if self._sigchld:
            loop = asyncio.get_running_loop()
            loop.remove_signal_handler(signal.SIGCHLD)
            loop.set_exception_handler(None)
            self._sigchld = False

    def _on_loop_error(self, _loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        said = f"{type(exc).__name__}: {exc}" if exc is not None else context.get("message")
        self._emit(ev.DAEMON_ERROR, level="error", error=str(said))

    def _owned(self, pid: int) -> bool:
        if self.notifier.owns(pid):
            return True
        for service in self._services():
            if service.owns(pid):  # a completion check or git: it waits for its own
                return True
            session = service.session
            if session is not None and session.pid == pid and not session.child.reaped:
                return True
        return False

    def _on_sigchld(self) -> None:
        for service in self._services():
            if service.session is not None:
                service.session.check_exit()
        self.notifier.check()
        self.reaper.reap()
