"""The supervisor's children: SIGCHLD on the loop (a session's exit, a notify
command's, an adopted orphan's) and the loop's errors that no task awaited.

A loop error that repeats (``accept`` failing with EMFILE, retried by asyncio
every second per listening socket, for as long as the fds are gone) is one
``daemon.error`` event, then one per ``REPEAT_WINDOW`` with how often it came
(``repeated``), not one per retry: a storm must not rotate the event history
away.

As a child subreaper, agentd adopts the double-forked grandchildren of its
sessions: it can find them, and must reap them (``Reaper``), but never a pid
a session, a notify command, a completion check or git still owns.
"""

from __future__ import annotations

import asyncio
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentd import events as ev
from agentd.process.reaper import Reaper, enable_subreaper
from agentd.supervisor.notifier import Notifier

if TYPE_CHECKING:
    from agentd.supervisor.service import Service

REPEAT_WINDOW = 60.0  # s: a repeating loop error is said again at most this often
MAX_KINDS = 64  # kinds of loop error counted at once (the rest are said as they come)


class Children:
    def __init__(
        self,
        services: Callable[[], list[Service]],
        notifier: Notifier,
        emit: Callable[..., None],
        *,
        subreaper: bool,
        cloning: Callable[[], bool] = lambda: False,
    ) -> None:
        self._services = services
        self._cloning = cloning  # a clone under way: its pid may not be known yet
        self.notifier = notifier
        self._emit = emit
        self.subreaper = enable_subreaper() if subreaper else False
        self.reaper = Reaper(owned=self._owned)
        self._sigchld = False
        self.loop_errors = Repeats(emit)

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

    def _on_loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        said = f"{type(exc).__name__}: {exc}" if exc is not None else context.get("message")
        if exc is not None and context.get("message"):
            said = f"{context['message']}: {said}"
        self.loop_errors.report(str(said), loop)

    def _owned(self, pid: int) -> bool:
        if self.notifier.owns(pid):
            return True
        if self._cloning():  # maybe the new agent's: reaped at the next SIGCHLD or end
            return True
        # a session's leader or the one started ahead; a completion check or git
        return any(service.owns(pid) for service in self._services())

    def _on_sigchld(self) -> None:
        for service in self._services():
            if service.session is not None:
                service.session.check_exit()
        self.notifier.check()
        self.reaper.reap()


@dataclass
class _Spell:
    said: str
    count: int = 0  # times it came again since it was last said


class Repeats:
    """Loop errors said once, then counted (see the module docstring)."""

    def __init__(self, emit: Callable[..., None]) -> None:
        self._emit = emit
        self._spells: dict[str, _Spell] = {}

    def report(self, said: str, loop: asyncio.AbstractEventLoop) -> None:
        kind = re.sub(r"\d+", "N", said)  # the same error with another fd, port or pid
        spell = self._spells.get(kind)
        if spell is not None:
            spell.count += 1
            return
        self._emit(ev.DAEMON_ERROR, level="error", error=said)
        if len(self._spells) < MAX_KINDS:
            self._spells[kind] = _Spell(said)
            loop.call_later(REPEAT_WINDOW, self._window_over, kind, loop)

    def _window_over(self, kind: str, loop: asyncio.AbstractEventLoop) -> None:
        spell = self._spells.pop(kind, None)
        if spell is None or not spell.count:
            return  # it did not come again: the spell is over
        self._emit(
            ev.DAEMON_ERROR,
            level="error",
            error=spell.said,
            repeated=spell.count,
            within_s=REPEAT_WINDOW,
        )
        self._spells[kind] = _Spell(spell.said)  # still coming: count the next window
        loop.call_later(REPEAT_WINDOW, self._window_over, kind, loop)
