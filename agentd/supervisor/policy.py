"""The restart policy: a pure decision about what follows a session's end.

``RestartPolicy.decide(end, history, now)`` takes how the session ended and
the ends before it and returns a ``Decision``; it reads no clock and touches
no process, so it is tested from tables (like jupyter_client's restarter and
tenacity's wait strategies).

How an end is classified, first match wins:

=========================================  ==========  =================
end                                         next        counts as failure
=========================================  ==========  =================
agentd stopped it (manual / sentinel stop)  stopped     no
sentinel ``fail`` (a setup error)           failed      yes
its completion failed the unit's check      start now   no (``attempts``
                                                        refusals: failed)
the state says the mission is complete      done        no
sentinel ``pause`` (the reset still ahead)  paused      no
manual restart                              start now   no
exit code in ``success_codes``              done        no
a command that cannot be executed          failed      yes
exit code in ``exit_codes``; sentinel       start now   only if shorter
``restart``; timeout / idle / context; a                than min_uptime, or
``pause`` whose reset time is already past              the ``QUICK_IN_A_ROW``th
                                                        quick end in a row
anything else (other exit, signal, spawn)   backoff     yes
=========================================  ==========  =================

A failure waits ``delay`` doubled for each failure in a row, capped at
``max_delay``; more than ``burst`` failures within ``window`` -> ``failed``;
``on_failure: false`` -> ``failed`` at the first one. A refused completion
(``complete.verify`` failed; ``Refusal``) hands over to a fresh session told
why, reason ``verify-failed``: not a crash, but the ``complete.attempts``-th
refusal ends the unit ``failed``. The brake on quick
ends holds whatever ``min_uptime`` says (also 0): sessions that each end
within ``QUICK_END`` of their start, ``QUICK_IN_A_ROW`` times in a row, are
a loop (a sentinel that matches at once, an agent that exits 42 at once),
not hand-overs. Every way back to a session counts: a ``pause`` whose reset
time is already past (a CLI printing a stale epoch) waits for nothing, so it
is a restart at once and braked like one; a real pause is its own brake. A
restart is refused (``failed``) once ``max_sessions``
sessions ran, and (``stalled``) when ``stall_sessions`` sessions in a row
left the state dir unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentd.config.convert import signal_name
from agentd.config.sections import Limits, RestartSpec
from agentd.memory.bootstrap.refusal import Refusal
from agentd.reasons import CONTEXT, IDLE, TIMEOUT, VERIFY_FAILED, Outcome, Reason

Next = Literal["start", "backoff", "done", "failed", "stopped", "paused", "stalled", "interrupted"]

_CONTEXT_NAME = re.compile(r"compact|context", re.IGNORECASE)

# The ends agentd itself triggers that hand over to a fresh session (besides sentinels).
HANDOFF_TRIGGERS = frozenset({TIMEOUT, IDLE, CONTEXT})
QUICK_END = 1.0  # seconds from start to end...
QUICK_IN_A_ROW = 3  # ...this many sessions in a row: a failure, whatever min_uptime says


@dataclass(frozen=True)
class SessionEnd:
    """How one session ended. Times are from one monotonic clock: the agent's exec, and
    its exit or the trigger that ended it (``uptime``: how long the agent itself ran)."""

    session: int
    started_at: float
    ended_at: float
    exit_code: int | None = None
    signal: int | None = None
    # Why agentd ended it, if it did: sentinel:NAME, timeout, idle, context,
    # manual...; None when the agent ended by itself. Given as text, it is parsed.
    trigger: Reason | None = None
    # What the trigger asked for: "restart", "stop", "fail" or "pause".
    action: str = "restart"
    pause_until: float | None = None  # wall clock
    # How far ahead ``pause_until`` was when the CLI said it: not at all (a reset time
    # already past: a stale epoch) and the pause waits for nothing: a restart at once.
    pause_left: float | None = None
    detail: str = ""  # what a `fail` sentinel saw
    spawn_error: str | None = None
    spawn_retry: bool = False  # the spawn error may go away by itself (out of processes)
    spawn_reason: str = "spawn-error"  # or worktree-error: the worktree could not be made
    state_changed: bool = True
    # The summary of ``agentctl state complete`` when the state said the
    # mission was complete as the session ended: the unit is done, whatever the code.
    complete: str | None = None
    # The completion it claimed (a success code, or the mark), refused by the unit's
    # check (``complete.verify``): the next session is told why, or the unit fails.
    refusal: Refusal | None = None

    def __post_init__(self) -> None:
        if isinstance(self.trigger, str):  # "sentinel:NAME", as tables and records write it
            object.__setattr__(self, "trigger", Reason.parse(self.trigger))

    @property
    def waits(self) -> bool:
        """A pause that waits for something (its reset time still ahead)."""
        return self.action == "pause" and (self.pause_left is None or self.pause_left > 0)

    @property
    def uptime(self) -> float:
        return max(0.0, self.ended_at - self.started_at)

    @property
    def reason(self) -> str:
        """The reason, as kept and shown: exit:N, signal:NAME, sentinel:NAME, ..."""
        if self.refusal is not None:
            return str(VERIFY_FAILED)
        if self.trigger:
            return str(self.trigger)
        if self.spawn_error is not None:
            return self.spawn_reason
        if self.exit_code is not None:
            return f"exit:{self.exit_code}"
        if self.signal is not None:
            return f"signal:{signal_name(self.signal)}"
        return "exit:unknown"


@dataclass(frozen=True)
class Decision:
    next: Next
    reason: str
    delay: float = 0.0
    until: float | None = None
    failure: bool = False
    outcome: Outcome = Outcome.CRASHED
    detail: str = ""


class RestartPolicy:
    def __init__(self, restart: RestartSpec, limits: Limits) -> None:
        self.restart = restart
        self.limits = limits

    def is_failure(self, end: SessionEnd, before: Sequence[SessionEnd] = ()) -> bool:
        """Does ``end`` count as a failure (``before``: the ends before it, oldest first)?"""
        if end.action == "stop" or end.waits or _is_manual(end.trigger) or end.complete is not None:
            return False
        if end.refusal is not None:  # it claimed completion too early: attempts bound it
            return False
        if end.trigger is None and end.exit_code in self.restart.success_codes:
            return False
        if self._is_handoff(end):
            return end.uptime < self.restart.min_uptime or _quick_run(end, before)
        return True

    def _is_handoff(self, end: SessionEnd) -> bool:
        if end.action == "pause":  # one that waits for nothing (``waits`` is False)
            return True
        if end.trigger is not None:
            return end.trigger.is_sentinel or end.trigger in HANDOFF_TRIGGERS
        return end.spawn_error is None and end.exit_code in self.restart.exit_codes

    def decide(self, end: SessionEnd, history: Sequence[SessionEnd], now: float) -> Decision:
        """What follows ``end``; ``history`` holds the earlier ends, oldest first."""
        reason = end.reason
        outcome = _outcome(end)
        if end.action == "stop":
            return Decision("stopped", reason, outcome=Outcome.STOPPED)
        if end.action == "fail":  # restarting cannot help: someone must fix the setup
            return Decision("failed", reason, failure=True, detail=end.detail)
        if end.refusal is not None:
            return self._refused(end, end.refusal)
        if end.complete is not None:
            return Decision(
                "done", "complete", outcome=Outcome.DONE, detail=f"mission complete: {end.complete}"
            )
        if end.waits:
            return Decision("paused", reason, until=end.pause_until, outcome=outcome)
        if end.trigger is None and end.exit_code in self.restart.success_codes:
            return Decision("done", reason, outcome=Outcome.DONE)
        if end.spawn_error is not None and not end.spawn_retry:
            # trying again changes nothing until someone fixes the command
            return Decision("failed", reason, failure=True, detail=end.spawn_error)
        failure = self.is_failure(end, history)
        if failure:
            outcome = Outcome.CRASHED
            verdict = self._failure(end, history, now, reason)
            if verdict.next == "failed":
                return verdict
        stalled = self._stalled(end, history)
        if stalled:
            return Decision(
                "stalled", reason, failure=failure, outcome=Outcome.STALLED, detail=stalled
            )
        if capped := self._capped(end):
            return Decision("failed", reason, failure=failure, outcome=outcome, detail=capped)
        if failure:
            return verdict
        return Decision("start", reason, outcome=outcome)

    def _refused(self, end: SessionEnd, refusal: Refusal) -> Decision:
        """A completion the check refused: a fresh session, until ``attempts`` refusals."""
        said = f"the check `{refusal.command}` {refusal.said}"
        if refusal.attempt >= refusal.attempts:
            detail = (
                f"the completion was refused {refusal.attempt} times "
                f"(complete.attempts {refusal.attempts}); the last time {said}"
            )
            return Decision("failed", end.reason, outcome=Outcome.VERIFY_FAILED, detail=detail)
        if capped := self._capped(end):
            detail = f"{capped}; {said}"
            return Decision("failed", end.reason, outcome=Outcome.VERIFY_FAILED, detail=detail)
        detail = f"refusal {refusal.attempt} of {refusal.attempts}: {said}"
        return Decision("start", end.reason, outcome=Outcome.VERIFY_FAILED, detail=detail)

    def _capped(self, end: SessionEnd) -> str:
        """Why no session may follow ``end`` (``max_sessions`` ran), or ""."""
        cap = self.restart.max_sessions
        if cap and end.session >= cap:
            return f"max_sessions reached ({cap})"
        return ""

    def _failure(
        self, end: SessionEnd, history: Sequence[SessionEnd], now: float, reason: str
    ) -> Decision:
        detail = ""
        if self._is_handoff(end):
            detail = (
                f"ran {end.uptime:.1f}s, less than min_uptime"
                if end.uptime < self.restart.min_uptime
                else f"{QUICK_IN_A_ROW} sessions in a row ended within {QUICK_END:g}s"
            )
        if not self.restart.on_failure:
            return Decision("failed", reason, failure=True, detail=detail or "on_failure is off")
        failed = [self.is_failure(e, history[:i]) for i, e in enumerate(history)]
        failures = 1 + sum(
            1
            for e, f in zip(history, failed, strict=True)
            if f and now - e.ended_at <= self.restart.window
        )
        if failures > self.restart.burst:
            detail = (
                f"{failures} failures within {self.restart.window:g}s (burst {self.restart.burst})"
            )
            return Decision("failed", reason, failure=True, detail=detail)
        in_a_row = 1
        for f in reversed(failed):
            if not f:
                break
            in_a_row += 1
        delay = min(self.restart.delay * 2 ** (in_a_row - 1), self.restart.max_delay)
        return Decision("backoff", reason, delay=delay, failure=True, detail=detail)

    def _stalled(self, end: SessionEnd, history: Sequence[SessionEnd]) -> str:
        need = self.limits.stall_sessions
        if not need or end.state_changed:
            return ""
        unchanged = 1
        for e in reversed(history):
            if e.state_changed:
                break
            unchanged += 1
        if unchanged >= need:
            return f"{unchanged} sessions in a row left the state dir unchanged"
        return ""


def _quick_run(end: SessionEnd, before: Sequence[SessionEnd]) -> bool:
    """``end`` is the last of ``QUICK_IN_A_ROW`` sessions in a row that each ended at once."""
    run = [*before[-(QUICK_IN_A_ROW - 1) :], end]
    return len(run) >= QUICK_IN_A_ROW and all(e.uptime < QUICK_END for e in run)


def _outcome(end: SessionEnd) -> Outcome:
    trigger = end.trigger
    if trigger in HANDOFF_TRIGGERS:
        return Outcome(str(trigger))
    if end.action == "pause":
        return Outcome.USAGE_LIMITED
    if trigger is not None and trigger.is_sentinel:
        # A sentinel about compaction or a full context is the `context`
        # outcome; any other restart sentinel is a hand-over.
        return Outcome.CONTEXT if _CONTEXT_NAME.search(trigger.arg) else Outcome.HANDOFF
    if _is_manual(trigger):  # a restart: ``decide`` gave a stop its outcome before
        return Outcome.MANUAL
    return Outcome.HANDOFF


def _is_manual(trigger: Reason | None) -> bool:
    """``manual`` or ``manual:TEXT`` (agentctl restart --reason TEXT)."""
    return trigger is not None and trigger.is_manual
