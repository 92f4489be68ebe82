"""A unit's sessions, one after another, and their record.

From a start, or the end of a wait, until the restart policy says to wait or
to stop::

    reclaim what a killed agentd left -> resume a pause it left, or
    [ a daily budget spent? -> one session (``SessionRun``) -> decide
      (``RestartPolicy``) -> record the outcome ] -> wait (``Pauses``) or settle

The record (session number, restarts, how the last session ended) is read
back from the history, so it survives a daemon restart. States change only
through the service's ``_set_state`` (lent in ``Host``) and ``_force_state``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from datetime import datetime
from typing import Any

from agentd import events as ev
from agentd.config.lint import STATE_IN_PS, state_in_argv
from agentd.memory.bootstrap.render import Bootstrap, render
from agentd.supervisor.definition import Definition
from agentd.supervisor.pauses import Pauses
from agentd.supervisor.policy import Decision, RestartPolicy, SessionEnd
from agentd.supervisor.reclaim import LOST, UnitLock, reclaim_if_owner
from agentd.supervisor.sessionrun import Host, SessionRun
from agentd.supervisor.states import SetState, State
from agentd.supervisor.triggers import Trigger
from agentd.times import iso

HISTORY_KEEP = 200  # the ends kept for the policy and the bootstrap


def last_end(records: list[dict[str, Any]]) -> tuple[str | None, float | None]:
    """How the last session ended: its reason and wall time, as far as known."""
    end = next((r for r in reversed(records) if r.get("kind") == "end"), None)
    if end is None:
        return None, None
    try:
        return end.get("reason"), datetime.fromisoformat(str(end.get("at"))).timestamp()
    except (TypeError, ValueError):
        return end.get("reason"), None


class SessionLoop:
    """The sessions of one unit: runs them, and keeps their record."""

    def __init__(self, host: Host, definition: Definition, pauses: Pauses, lock: UnitLock, *,
                 force_state: SetState) -> None:
        self.host = host
        self._definition = definition
        self._pauses = pauses
        self._lock = lock
        self._force_state = force_state
        self.session_no = host.history.last_session()
        self.restarts = 0
        self.ends: list[SessionEnd] = []
        self.last_reason, self.last_at = last_end(host.history.recent())  # at: wall time
        self.current: SessionRun | None = None  # the last session, running or not
        self.task: asyncio.Task[None] | None = None
        self._reclaim_task: asyncio.Task[None] | None = None
        self._warned_ps = False  # the state in argv, visible in `ps`: said once

    def start(self, reason: str) -> None:
        """Run sessions from now on (the service is ``starting`` already)."""
        self.task = asyncio.get_running_loop().create_task(self._run(reason))

    def after_wait(self, reason: str) -> None:
        """A backoff or pause is over: the next session."""
        self.restarts += 1
        self.host.set_state(State.STARTING, reason)
        self.start(reason)

    def fire(self, trigger: Trigger) -> None:
        if self.current is not None:
            self.current.fire(trigger)

    def resize(self, cols: int, rows: int) -> None:
        """The terminal is ``cols`` x ``rows`` now: the current session's and the next ones'."""
        self._definition.resize(cols, rows)
        if self.current is not None:
            self.current.resize(cols, rows)

    def reclaim(self) -> asyncio.Task[None]:
        """End what a previous agentd left of the unit's last session (once)."""
        if self._reclaim_task is None:
            self._reclaim_task = asyncio.get_running_loop().create_task(self._reclaim_safely())
        return self._reclaim_task

    async def join(self) -> None:
        """Wait until the reclaim and the current run of sessions are over."""
        if self._reclaim_task is not None:
            await asyncio.shield(self._reclaim_task)
        if self.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.task)

    def preview(self) -> tuple[int, Bootstrap]:
        """The bootstrap the next session would get now, and its number (changes nothing);
        its secrets hidden, as in the kept copies."""
        number = self.session_no + 1
        reason = self.last_reason or "start"
        unit = self._definition.newest
        boot = render(self.host.briefing.context(unit, number, reason, self.ends,
                                                 self.host.wall()))
        hidden = self._definition.redactor.hide_state(boot.text, unit.secret_patterns)
        return number, dataclasses.replace(boot, text=hidden)

    async def _run(self, reason: str) -> None:
        history = self.host.history
        try:
            await asyncio.shield(self.reclaim())
            if self._pauses.resume_pause(self.last_reason or "start"):
                return
            while True:
                if self._pauses.budget_spent(self._definition.newest, history):
                    return
                end = await self._one_session(reason)
                decision = self._decide(end)
                history.append({
                    "kind": "outcome", "session": end.session, "outcome": decision.outcome,
                    "next": decision.next, "detail": decision.detail or None,
                    "reset_at": iso(decision.until) if decision.until is not None else None,
                })
                if decision.next != "start" or self.host.stop_requested():
                    self._settle(decision)
                    return
                reason = decision.reason
                self.restarts += 1
        except Exception as exc:  # a bug must not leave the unit silently half-way
            self.host.emit(ev.UNIT_ERROR, level="error", unit=self._definition.unit.name,
                           error=f"{type(exc).__name__}: {exc}")
            run = self.current
            if run is not None and run.session is not None:
                await run.end(Trigger("internal-error", "stop"))
            self._force_state(State.FAILED, "internal-error", f"{type(exc).__name__}: {exc}")
            raise

    async def _one_session(self, reason: str) -> SessionEnd:
        self._definition.apply()
        unit = self._definition.unit
        if not self._warned_ps and state_in_argv(unit):  # once per unit, not per session
            self._warned_ps = True
            self.host.emit(ev.UNIT_ERROR, level="warning", unit=unit.name, error=STATE_IN_PS)
        self.host.set_state(State.STARTING, reason)
        self.session_no += 1
        self.current = SessionRun(self.host, unit, self._definition.transcript,
                                  self._definition.redactor, self.session_no, reason)
        return await self.current.run(self.ends, self._pauses.usage)

    async def _reclaim_safely(self) -> None:
        wall = self.host.wall
        if await reclaim_if_owner(self._lock, self.host.history, self.host.records,
                                  self._definition.unit, emit=self.host.emit, at=iso(wall())):
            self.last_reason, self.last_at = LOST, wall()

    def _decide(self, end: SessionEnd) -> Decision:
        unit = self._definition.unit  # the one the session used
        policy = RestartPolicy(unit.restart, unit.limits)
        decision = policy.decide(end, self.ends, self.host.clock())
        self.ends = [*self.ends, end][-HISTORY_KEEP:]
        self.last_reason = end.reason
        self.last_at = self.host.wall()
        if self.host.stop_requested() and decision.next != "stopped":
            decision = Decision("stopped", "manual", outcome="stopped")
        return decision

    def _settle(self, decision: Decision) -> None:
        """Apply a decision that does not start a session at once."""
        reason, detail = decision.reason, decision.detail
        if decision.next == "backoff":
            self._pauses.backoff(decision.delay, reason, detail)
        elif decision.next == "paused":
            until = decision.until if decision.until is not None else self.host.wall() + 3600
            self._pauses.pause(until, reason, detail)
        elif decision.next == "start":  # a stop arrived as the decision was made
            self.host.set_state(State.STOPPED, "manual")
        else:
            self.host.set_state(State(decision.next), reason, detail)
