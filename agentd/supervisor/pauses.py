"""The waits between a unit's sessions: backoff, pauses and daily budgets.

A wait is a state (``backoff`` or ``paused``) and a deadline: the loop sleeps
until it (no periodic tick while nothing is due), then the service starts
the next session. A pause comes from a usage limit or a spent daily budget
(until the next local midnight); a usage-limit pause recorded in the history
survives a daemon restart, and autostart honours it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

from agentd import events as ev
from agentd.config.unit import Unit
from agentd.supervisor.budget import Usage, any_set, next_midnight, reached, usage_today
from agentd.supervisor.history import History
from agentd.supervisor.states import SetState, State
from agentd.times import iso


def restored_pause(records: list[dict[str, Any]]) -> float | None:
    """Until when the last session's outcome paused the unit, if it did (wall time)."""
    last = records[-1] if records else {}
    if last.get("kind") != "outcome" or last.get("next") != "paused" or not last.get("reset_at"):
        return None
    with contextlib.suppress(TypeError, ValueError):
        return datetime.fromisoformat(str(last["reset_at"]).replace("Z", "+00:00")).timestamp()
    return None


class Pauses:
    """A unit's waits: what it waits for (``paused_until``) and the one deadline."""

    def __init__(self, *, set_state: SetState, wall: Callable[[], float],
                 emit: Callable[..., None], on_deadline: Callable[[str], None],
                 restored: float | None) -> None:
        self._set_state = set_state
        self._wall = wall
        self._emit = emit
        self._on_deadline = on_deadline  # start the next session (the reason)
        self.paused_until: float | None = None
        self.usage: Usage | None = None  # today's, when the unit has a budget
        self._restored = restored  # a pause the previous agentd left, until the first start
        self._resume_at: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    def reset(self, *, resume: bool) -> None:
        """A start: no deadline, no pause; ``resume`` keeps the one a previous agentd left."""
        self.cancel()
        self.paused_until = None
        # autostart honours a pause the previous agentd left; an explicit start does not
        self._resume_at = self._restored if resume else None
        self._restored = None

    def resume_pause(self, reason: str) -> bool:
        """Stay paused until the reset time a previous agentd recorded (a usage limit)."""
        until, self._resume_at = self._resume_at, None
        if until is None or until <= self._wall():
            return False
        self.pause(until, reason, "paused before agentd restarted")
        return True

    def budget_spent(self, unit: Unit, history: History) -> bool:
        """Pause until midnight if a daily budget is used up; note today's usage otherwise."""
        self.usage = None
        budget = unit.budget
        if not any_set(budget):
            return False
        now = self._wall()
        usage = usage_today(history.recent(), now)
        name = reached(budget, usage)
        if name is None:
            self.usage = usage
            return False
        until = next_midnight(now)
        used = {"max_sessions_per_day": usage.sessions, "max_runtime_per_day": usage.runtime_s,
                "max_output_tokens_per_day": usage.tokens}[name]
        self._emit(ev.UNIT_BUDGET, unit=unit.name, budget=name,
                   used=round(used, 1), limit=getattr(budget, name), until=iso(until))
        self.pause(until, f"budget:{name}")
        return True

    def pause(self, until: float, reason: str, detail: str = "") -> None:
        self.paused_until = until
        self._set_state(State.PAUSED, reason, detail)
        self._schedule(max(0.0, until - self._wall()), reason)

    def backoff(self, delay: float, reason: str, detail: str = "") -> None:
        self._set_state(State.BACKOFF, reason, detail)
        self._schedule(delay, reason)

    def cancel(self) -> None:
        """Drop the deadline (a start or a stop came first)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self, delay: float, reason: str) -> None:
        # Sleep until the deadline: no periodic tick while nothing is due.
        self.cancel()
        self._timer = asyncio.get_running_loop().call_later(delay, self._deadline, reason)

    def _deadline(self, reason: str) -> None:
        self._timer = None
        self._on_deadline(reason)
