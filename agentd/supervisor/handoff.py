"""Graceful handoff: before the CLI hits its context wall, ask the agent to save.

When the CLI shows context pressure (the unit's ``handoff.when``, which the
presets set to the CLI's own line, or ``handoff.context_percent`` of the
window filled, as the CLI's usage records say), agentd types
``handoff.message`` into the session, then waits up to ``handoff.wait`` for
the state dir to change or the session to exit. Once the state changed it lets
the agent finish writing (a quiet spell of ``QUIET`` seconds), then restarts
the session (reason ``context``): the state is freshest exactly when the next
session needs it. A daily budget that runs out during a session is handed over
the same way (``ask``), and the session then ends paused until midnight
(reason ``budget:NAME``) rather than killed mid-step. One handoff per
session; event ``session.handoff`` says how it went (``why``).

The state dir is looked at every ``POLL`` seconds during a handoff only, so a
session that is not handing off costs nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from agentd import events as ev
from agentd.config.handoff import HandoffSpec
from agentd.memory.statedir import fingerprint
from agentd.reasons import CONTEXT
from agentd.session.inject import hand_over
from agentd.session.session import Session
from agentd.supervisor.triggers import Trigger
from agentd.terminal.rules import Hit

POLL = 0.25  # seconds between looks at the state dir, during a handoff only
QUIET = 2.0  # seconds without a further change before the session is ended


class Handoff:
    def __init__(
        self,
        spec: HandoffSpec,
        *,
        state_dir: Path,
        submit: str,
        paste: bool = True,
        emit: Callable[..., None],
        fire: Callable[[Trigger], None],
        clock: Callable[[], float],
    ) -> None:
        self.spec = spec
        self._state_dir = state_dir
        self._submit = submit
        self._paste = paste
        self._emit = emit
        self._fire = fire
        self._clock = clock
        self._session: Session | None = None
        self._task: asyncio.Task[None] | None = None
        self._before: str | None = None
        self._asked_at = 0.0
        self._then = Trigger(CONTEXT)  # what ends the session once it handed over

    def arm(self, session: Session) -> None:
        self._session = session

    def on_hit(self, hit: Hit) -> None:
        """The CLI showed context pressure: ask once (at or below ``below``)."""
        if not self.spec.wanted(hit.groups):
            return
        left = self.spec.percent_left(hit.groups)
        self.ask("context", hit.line, self.spec.message, Trigger(CONTEXT), left=left)

    def ask(
        self, why: str, line: str, message: str, then: Trigger, *, left: int | None = None
    ) -> bool:
        """Ask the agent (``message``) to record its state, then end the session for
        ``then`` (``why``: ``context``, ``budget:NAME``); False if it cannot be asked now
        (not running, or asked already: that handoff ends the session)."""
        session = self._session
        if session is None or self._task is not None:
            return False
        self._then = then
        self._before = fingerprint(self._state_dir)
        self._asked_at = self._clock()
        session.matcher.expect_echo(message)  # its echo is no sentinel
        hand_over(session, message, self._submit, paste=self._paste)
        self._emit(ev.SESSION_HANDOFF, phase="asked", why=why, line=line[:200], left=left)
        self._task = asyncio.get_running_loop().create_task(self._wait())
        return True

    async def _wait(self) -> None:
        deadline = self._asked_at + self.spec.wait
        last = self._before
        changed_at: float | None = None
        while (now := self._clock()) < deadline:
            if changed_at is not None and now - changed_at >= QUIET:
                break
            await asyncio.sleep(min(POLL, deadline - now))
            current = fingerprint(self._state_dir)
            if current != last:
                last, changed_at = current, self._clock()
        self._done(changed=changed_at is not None)
        self._fire(self._then)

    def _done(self, *, changed: bool, exited: bool = False) -> None:
        self._emit(
            ev.SESSION_HANDOFF,
            phase="done",
            changed=changed,
            exited=exited,
            waited_s=round(self._clock() - self._asked_at, 3),
        )

    def close(self) -> None:
        """The session is ending: stop waiting (say how it went, if it was)."""
        task, self._task, self._session = self._task, None, None
        if task is not None and not task.done():
            task.cancel()
            self._done(changed=fingerprint(self._state_dir) != self._before, exited=True)
