"""One unit's life: its state machine and the loop of sessions.

A ``Service`` turns a validated ``Unit`` into sessions, one after another:
render the bootstrap -> plan the injection -> spawn the ``Session`` -> wait
for the leader's exit or a trigger (sentinel, timeout, idle, context, manual)
-> end the whole tree -> ``RestartPolicy.decide`` -> the next state. Every
state change goes through ``_set_state`` (see ``agentd.supervisor.states``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from agentd import events as ev
from agentd.config.convert import iso
from agentd.config.unit import Unit
from agentd.events import EventLog
from agentd.memory.bootstrap import Bootstrap, render
from agentd.paths import Paths
from agentd.process.tree import kill_now
from agentd.session.session import Session
from agentd.session.transcript import Redactor, Transcript
from agentd.supervisor.attach import Terminal
from agentd.supervisor.briefing import Briefing
from agentd.supervisor.definition import Definition
from agentd.supervisor.history import History
from agentd.supervisor.pauses import Pauses, restored_pause
from agentd.supervisor.policy import Decision, RestartPolicy, SessionEnd
from agentd.supervisor.reclaim import LOST, UnitLock, reclaim_if_owner
from agentd.supervisor.sessionrun import Host, SessionRun
from agentd.supervisor.states import ACTIVE, TRANSITIONS, State, TransitionError
from agentd.supervisor.triggers import Trigger

HISTORY_KEEP = 200


class Service:
    def __init__(
        self,
        unit: Unit,
        *,
        paths: Paths,
        events: EventLog,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        base_env: dict[str, str] | None = None,
        notify: Callable[[Unit, str, int], None] | None = None,
    ) -> None:
        self.paths = paths
        self.events = events
        self._notify = notify
        self._clock = clock
        self._wall = wall
        self._base_env = dict(os.environ if base_env is None else base_env)
        # systemd's notify socket is the daemon's, not the agent's
        self._base_env.pop("NOTIFY_SOCKET", None)
        self.logs_dir = paths.unit_logs(unit.name)
        self.history_file = History(self.logs_dir / "history.jsonl")
        self.state = State.STOPPED
        self.since = wall()
        self.state_reason = ""
        self._current: SessionRun | None = None  # the last session, running or not
        self.session_no = self.history_file.last_session()
        self.restarts = 0
        self.ends: list[SessionEnd] = []
        self.last_reason: str | None = None
        self.last_at: float | None = None  # wall time of the last session's end
        records = self.history_file.recent()
        self._restore_last(records)
        self.pauses = Pauses(set_state=self._set_state, wall=wall, emit=events.emit,
                             on_deadline=self._deadline, restored=restored_pause(records))
        self.detail = ""
        self._task: asyncio.Task[None] | None = None
        self._stop_requested = False
        self._lock = UnitLock(paths.run / "units" / f"{unit.name}.lock")
        self.terminal = Terminal(lambda: self.session if self.state == State.RUNNING else None)
        self.briefing = Briefing(self.logs_dir, events.emit)
        self._reclaim_task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        self._definition = Definition(unit, base_env=self._base_env, logs_dir=self.logs_dir,
                                      briefing=self.briefing)
        self._host = Host(
            emit=events.emit, history=self.history_file, briefing=self.briefing,
            base_env=self._base_env, socket=paths.socket, clock=clock, wall=wall,
            set_state=self._set_state, stop_requested=lambda: self._stop_requested,
            on_raw=self.terminal.output, notify=notify)

    # -- public --------------------------------------------------------------
    def start(self, reason: str = "start", *, resume_pause: bool = False) -> None:
        """Start now (from stopped, a terminal state, backoff or pause); no-op if active."""
        if self.state in ACTIVE:
            return
        refused = self.claim()
        if refused:
            self.events.emit(ev.UNIT_ERROR, level="error", unit=self.unit.name, error=refused)
            return
        self.pauses.reset(resume=resume_pause)
        self._stop_requested = False
        self._set_state(State.STARTING, reason)  # at once, so waiters see it is under way
        self._task = asyncio.get_running_loop().create_task(self._run(reason))

    async def stop(self) -> None:
        """Stop the unit and wait until its session's processes are gone."""
        self._stop_requested = True
        if self.state in (State.BACKOFF, State.PAUSED):
            self.pauses.cancel()
            self._set_state(State.STOPPED, "manual")
        self._fire(Trigger("manual", "stop"))
        if self._task is not None:
            await asyncio.shield(self._task)

    def restart(self, reason: str = "manual") -> None:
        """End the running session and start a fresh one at once (not a failure)."""
        if self.state in (State.RUNNING, State.STARTING):
            self._fire(Trigger(reason if reason.startswith("manual") else f"manual:{reason}"))
        elif self.state != State.STOPPING:
            self.start(reason)

    async def join(self) -> None:
        """Wait until the current run of sessions has settled (its task finished)."""
        if self._reclaim_task is not None:
            await asyncio.shield(self._reclaim_task)
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._task)

    @property
    def session(self) -> Session | None:
        """The running session: from its spawn until its tree is gone."""
        return self._current.session if self._current is not None else None

    def kill_now(self) -> list[int]:
        """SIGKILL every process of the running session at once (a second Ctrl-C)."""
        session = self.session
        if session is None:
            return []
        leader = None if session.child.reaped else session.pid  # a reaped pid may be reused
        return kill_now(leader=leader, marker=session.marker, sid=session.pid)

    def reclaim(self) -> asyncio.Task[None]:
        """End what a previous agentd left of this unit's last session (once).

        Sessions start only after it; the daemon calls it for every unit it
        loads, so a unit that is not started again is cleaned up too.
        """
        if self._reclaim_task is None:
            self._reclaim_task = asyncio.get_running_loop().create_task(self._reclaim_safely())
        return self._reclaim_task

    @property
    def unit(self) -> Unit:
        """The definition in use (by the running session, if any)."""
        return self._definition.unit

    @property
    def definition(self) -> Unit:
        """The newest definition: what the next session will use."""
        return self._definition.newest

    def redefine(self, unit: Unit) -> None:
        """Use ``unit`` from the next session on; at once if none is under way."""
        self._definition.redefine(unit)
        if self.state not in ACTIVE and self.session is None:
            self._definition.apply()

    @property
    def transcript(self) -> Transcript:
        return self._definition.transcript

    @property
    def redactor(self) -> Redactor:
        """Hides the unit's secrets (from its environment) in text."""
        return self._definition.redactor

    def preview_bootstrap(self) -> tuple[int, Bootstrap]:
        """The bootstrap the next session would get now, and its number (changes nothing)."""
        number = self.session_no + 1
        reason = self.last_reason or "start"
        return number, render(
            self.briefing.context(self.definition, number, reason, self.ends, self._wall()))

    async def wait(self, predicate: Callable[[State], bool]) -> State:
        while not predicate(self.state):
            self._changed.clear()
            await self._changed.wait()
        return self.state

    def status(self) -> dict[str, Any]:
        session = self.session
        out: dict[str, Any] = {
            "unit": self.unit.name,
            "state": str(self.state),
            "pid": session.pid if session and self.state == State.RUNNING else None,
            "session": self.session_no,
            "uptime_s": round(session.uptime, 3) if session else 0.0,
            "restarts": self.restarts,
            "last_reason": self.last_reason,
            "last_at": iso(self.last_at) if self.last_at is not None else None,
            "since": iso(self.since),
        }
        if self.state == State.PAUSED and self.pauses.paused_until is not None:
            out["paused_until"] = iso(self.pauses.paused_until)
        return out

    # -- the session loop ------------------------------------------------------
    async def _run(self, reason: str) -> None:
        try:
            await asyncio.shield(self.reclaim())
            if self.pauses.resume_pause(self.last_reason or "start"):
                return
            while True:
                if self.pauses.budget_spent(self.definition, self.history_file):
                    return
                end = await self._one_session(reason)
                decision = self._decide(end)
                self.history_file.append({
                    "kind": "outcome", "session": end.session, "outcome": decision.outcome,
                    "next": decision.next, "detail": decision.detail or None,
                    "reset_at": iso(decision.until) if decision.until is not None else None,
                })
                if decision.next != "start" or self._stop_requested:
                    self._settle(decision)
                    return
                reason = decision.reason
                self.restarts += 1
        except Exception as exc:  # a bug must not leave the unit silently half-way
            self.events.emit(ev.UNIT_ERROR, level="error", unit=self.unit.name,
                             error=f"{type(exc).__name__}: {exc}")
            run = self._current
            if run is not None and run.session is not None:
                await run.end(Trigger("internal-error", "stop"))
            self._force_state(State.FAILED, "internal-error", f"{type(exc).__name__}: {exc}")
            raise

    async def _one_session(self, reason: str) -> SessionEnd:
        self._definition.apply()
        self._set_state(State.STARTING, reason)
        self.session_no += 1
        self._current = SessionRun(self._host, self.unit, self.transcript, self.session_no, reason)
        return await self._current.run(self.ends, self.pauses.usage)

    async def _reclaim_safely(self) -> None:
        if await reclaim_if_owner(self._lock, self.history_file, self.unit,
                                  emit=self.events.emit, at=iso(self._wall())):
            self.last_reason, self.last_at = LOST, self._wall()

    def _restore_last(self, records: list[dict[str, Any]]) -> None:
        """How the last session ended (survives a daemon restart)."""
        end = next((r for r in reversed(records) if r.get("kind") == "end"), None)
        if end is None:
            return
        self.last_reason = end.get("reason")
        with contextlib.suppress(TypeError, ValueError):
            self.last_at = datetime.fromisoformat(str(end.get("at"))).timestamp()

    def _decide(self, end: SessionEnd) -> Decision:
        policy = RestartPolicy(self.unit.restart, self.unit.limits)
        decision = policy.decide(end, self.ends, self._clock())
        self.ends = [*self.ends, end][-HISTORY_KEEP:]
        self.last_reason = end.reason
        self.last_at = self._wall()
        if self._stop_requested and decision.next != "stopped":
            decision = Decision("stopped", "manual", outcome="stopped")
        return decision

    def _settle(self, decision: Decision) -> None:
        """Apply a decision that does not start a session at once."""
        reason, detail = decision.reason, decision.detail
        if decision.next == "backoff":
            self.pauses.backoff(decision.delay, reason, detail)
        elif decision.next == "paused":
            until = decision.until if decision.until is not None else self._wall() + 3600
            self.pauses.pause(until, reason, detail)
        elif decision.next == "start":  # a stop arrived as the decision was made
            self._set_state(State.STOPPED, "manual")
        else:
            self._set_state(State(decision.next), reason, detail)

    def _deadline(self, reason: str) -> None:
        """A backoff or pause is over: the next session."""
        self.restarts += 1
        self._set_state(State.STARTING, reason)
        self._task = asyncio.get_running_loop().create_task(self._run(reason))

    # -- state -----------------------------------------------------------------
    def _set_state(self, new: State, reason: str = "", detail: str = "") -> None:
        if new == self.state:
            return
        if new not in TRANSITIONS[self.state]:
            raise TransitionError(f"{self.unit.name}: {self.state} -> {new} is not allowed")
        self._force_state(new, reason, detail)

    def _force_state(self, new: State, reason: str, detail: str = "") -> None:
        """The one place a state changes: records it and emits ``unit.state``.

        ``reason`` stays one of SPEC 5's reasons (``exit:3``, ``sentinel:NAME``...);
        ``detail`` says more (``4 failures within 600s (burst 3)``).
        """
        old, self.state = self.state, new
        self.since = self._wall()
        self.state_reason = reason
        self.detail = detail
        self.events.emit(ev.UNIT_STATE, unit=self.unit.name, session=self.session_no or None,
                         detail=detail or None,
                         **{"from": str(old), "to": str(new), "reason": reason})
        self._changed.set()
        event = "restart" if (old, new) == (State.STOPPING, State.STARTING) else str(new)
        if self._notify is not None and event in self.unit.notify.on:
            self._notify(self.unit, event, self.session_no)

    # -- triggers ----------------------------------------------------------------------
    def _fire(self, trigger: Trigger) -> None:
        if self._current is not None:
            self._current.fire(trigger)

    def watch(self, listener: Callable[[bytes], None]) -> Callable[[], None]:
        """Have ``listener`` get the terminal output of this unit's sessions; the undo."""
        return self.terminal.watch(listener)

    def type_input(self, data: bytes) -> bool:
        """Type ``data`` into the live session (an attached person); False if none runs."""
        return self.terminal.type(data)

    def close(self) -> None:
        self.pauses.cancel()
        self._definition.close()
        self._lock.release()

    def claim(self) -> str | None:
        """Hold ``run/units/UNIT.lock`` while supervising this unit; why not, if another
        agentd (``serve`` or ``run``) already does (see ``reclaim``)."""
        return self._lock.claim(self.unit)

