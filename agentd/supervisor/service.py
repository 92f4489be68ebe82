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
from agentd.config.convert import signal_name
from agentd.config.times import iso
from agentd.config.unit import Unit
from agentd.errors import SpawnError
from agentd.events import EventLog
from agentd.lockfile import Held, hold, release
from agentd.memory.bootstrap import Bootstrap, render
from agentd.memory.statedir import fingerprint
from agentd.paths import Paths
from agentd.process.ending import kill_now
from agentd.process.tree import session_env_marker
from agentd.session import inject
from agentd.session.child import Child
from agentd.session.session import Session
from agentd.session.transcript import Redactor, Transcript, secrets_from_env
from agentd.supervisor.briefing import Briefing
from agentd.supervisor.budget import Usage, any_set, next_midnight, reached, usage_today
from agentd.supervisor.history import History
from agentd.supervisor.policy import Decision, RestartPolicy, SessionEnd
from agentd.supervisor.reclaim import LOST, reclaim_lost_session
from agentd.supervisor.states import ACTIVE, TRANSITIONS, State, TransitionError
from agentd.supervisor.triggers import Trigger, Triggers
from agentd.terminal.hookline import PRECOMPACT_RULE
from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Hit, Rule

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
        self.unit = unit
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
        self.policy = RestartPolicy(unit.restart, unit.limits)
        self.state = State.STOPPED
        self.since = wall()
        self.state_reason = ""
        self.session: Session | None = None
        self.session_no = self.history_file.last_session()
        self.restarts = 0
        self.ends: list[SessionEnd] = []
        self.last_reason: str | None = None
        self.last_at: float | None = None  # wall time of the last session's end
        self._restore_last()
        self.paused_until: float | None = None
        self.detail = ""
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._triggers: Triggers | None = None
        self._stop_requested = False
        self._usage: Usage | None = None  # today's, when the unit has a budget
        self._resume_at: float | None = None
        self._lock: int | None = None
        self._watchers: list[Callable[[bytes], None]] = []  # attached terminals
        self.briefing = Briefing(self.logs_dir, events.emit)
        self._reclaim_task: asyncio.Task[None] | None = None
        self._next_unit: Unit | None = None  # a changed definition, for the next session
        self._changed = asyncio.Event()
        self.transcript = self._new_transcript()

    # -- public --------------------------------------------------------------
    def start(self, reason: str = "start", *, resume_pause: bool = False) -> None:
        """Start now (from stopped, a terminal state, backoff or pause); no-op if active."""
        if self.state in ACTIVE:
            return
        refused = self.claim()
        if refused:
            self.events.emit(ev.UNIT_ERROR, level="error", unit=self.unit.name, error=refused)
            return
        self._cancel_timer()
        self._stop_requested = False
        self.paused_until = None
        # autostart honours a pause the previous agentd left; an explicit start does not
        self._resume_at = self._restored_pause if resume_pause else None
        self._restored_pause = None
        self._set_state(State.STARTING, reason)  # at once, so waiters see it is under way
        self._task = asyncio.get_running_loop().create_task(self._run(reason))

    async def stop(self) -> None:
        """Stop the unit and wait until its session's processes are gone."""
        self._stop_requested = True
        if self.state in (State.BACKOFF, State.PAUSED):
            self._cancel_timer()
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
    def definition(self) -> Unit:
        """The newest definition: what the next session will use."""
        return self._next_unit or self.unit

    def redefine(self, unit: Unit) -> None:
        """Use ``unit`` from the next session on; at once if none is under way."""
        if unit.name != self.unit.name:
            raise ValueError(f"cannot redefine {self.unit.name} as {unit.name}")
        self._next_unit = unit
        if self.state not in ACTIVE and self.session is None:
            self._apply_definition()

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
        if self.state == State.PAUSED and self.paused_until is not None:
            out["paused_until"] = iso(self.paused_until)
        return out

    # -- the session loop ------------------------------------------------------
    async def _run(self, reason: str) -> None:
        try:
            await asyncio.shield(self.reclaim())
            if self._resume_pause():
                return
            while True:
                if self._budget_spent():
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
            if self.session is not None:
                await self._end_session(self.session, Trigger("internal-error", "stop"))
            self._force_state(State.FAILED, "internal-error", f"{type(exc).__name__}: {exc}")
            raise

    def _budget_spent(self) -> bool:
        """Pause until midnight if a daily budget is used up; note today's usage otherwise."""
        self._usage = None
        budget = self.definition.budget
        if not any_set(budget):
            return False
        now = self._wall()
        usage = usage_today(self.history_file.recent(), now)
        name = reached(budget, usage)
        if name is None:
            self._usage = usage
            return False
        until = next_midnight(now)
        used = {"max_sessions_per_day": usage.sessions, "max_runtime_per_day": usage.runtime_s,
                "max_output_tokens_per_day": usage.tokens}[name]
        self.events.emit(ev.UNIT_BUDGET, unit=self.unit.name, budget=name,
                         used=round(used, 1), limit=getattr(budget, name), until=iso(until))
        self.paused_until = until
        self._set_state(State.PAUSED, f"budget:{name}")
        self._schedule(until - now, f"budget:{name}")
        return True

    async def _one_session(self, reason: str) -> SessionEnd:
        self._apply_definition()
        self._set_state(State.STARTING, reason)
        number = self.session_no = self.session_no + 1
        boot = self.briefing.render(self.unit, number, reason, self.ends, self._wall())
        boot_file = self.briefing.write(self.unit, number, boot)
        plan = inject.plan(self.unit, number, boot.text, boot_file)
        marker = session_env_marker(self.unit.name, number)
        env = inject.session_env(self._base_env, self.unit, plan, number=number, reason=reason,
                                 bootstrap_file=boot_file, marker=marker,
                                 socket=self.paths.socket)
        state_before = fingerprint(self.unit.state_dir)
        started = self._clock()
        self.transcript.note(f"{iso(self._wall())} session {number} starting ({reason})")
        try:
            child = Child.spawn(plan.argv, cwd=self.unit.workdir, env=env,
                                cols=self.unit.pty.cols, rows=self.unit.pty.rows)
        except SpawnError as exc:
            self._spawn_failed(number, exc)
            return SessionEnd(number, started, self._clock(), spawn_error=str(exc),
                              state_changed=False)
        emit = self._emitter(number)
        injector = inject.Injector(plan, boot.text, boot.tokens, emit=emit)
        triggers = self._triggers = Triggers(
            self.unit, emit=emit, wall=self._wall, on_prompt=injector.on_prompt,
            notify=lambda event: self._notify(self.unit, event, number) if self._notify else None,
            usage=self._usage,
        )
        session = Session(number=number, child=child, marker=marker,
                          matcher=LineMatcher(self._rules(), cols=self.unit.pty.cols,
                                              rows=self.unit.pty.rows),
                          transcript=self.transcript,
                          on_output=self._on_output, clock=self._clock,
                          on_raw=self._on_raw)
        self.session = session
        session.start()
        self.history_file.append({"kind": "start", "session": number, "pid": child.pid,
                                  "reason": reason, "at": iso(self._wall()),
                                  "bootstrap": str(boot_file), "marker": marker})
        self._set_state(State.RUNNING, reason)
        emit(ev.SESSION_START, pid=child.pid)
        injector.begin(session)
        triggers.arm(session)
        if self._stop_requested:
            triggers.fire(Trigger("manual", "stop"))
        await asyncio.wait([session.exited, triggers.fired], return_when=asyncio.FIRST_COMPLETED)
        trigger = triggers.trigger
        await self._end_session(session, trigger)
        return SessionEnd(
            number, started, self._clock(),
            exit_code=child.exit_code, signal=child.signal,
            trigger=trigger.reason if trigger else None,
            action=trigger.action if trigger else "restart",
            pause_until=trigger.pause_until if trigger else None,
            state_changed=fingerprint(self.unit.state_dir) != state_before,
        )

    async def _reclaim_safely(self) -> None:
        # Only the agentd holding the unit's lock may end its last session: if
        # another one holds it, that session is alive and supervised, not lost.
        if self.claim() is not None:
            return
        try:
            if await reclaim_lost_session(self.history_file, self.unit, emit=self.events.emit,
                                          at=iso(self._wall())) is not None:
                self.last_reason, self.last_at = LOST, self._wall()
        except Exception as exc:  # report it; new sessions carry another marker
            self.events.emit(ev.UNIT_ERROR, level="error", unit=self.unit.name,
                             error=f"reclaiming the last session: {type(exc).__name__}: {exc}")

    def _restore_last(self) -> None:
        """How the last session ended, and a pause it left (survive a daemon restart)."""
        self._restored_pause: float | None = None
        records = self.history_file.recent()
        end = next((r for r in reversed(records) if r.get("kind") == "end"), None)
        if end is None:
            return
        self.last_reason = end.get("reason")
        with contextlib.suppress(TypeError, ValueError):
            self.last_at = datetime.fromisoformat(str(end.get("at"))).timestamp()
        last = records[-1]
        if last.get("kind") == "outcome" and last.get("next") == "paused" and last.get("reset_at"):
            with contextlib.suppress(TypeError, ValueError):
                until = datetime.fromisoformat(str(last["reset_at"]).replace("Z", "+00:00"))
                self._restored_pause = until.timestamp()

    def _resume_pause(self) -> bool:
        """Stay paused until the reset time a previous agentd recorded (a usage limit)."""
        until, self._resume_at = self._resume_at, None
        if until is None or until <= self._wall():
            return False
        self.paused_until = until
        self._set_state(State.PAUSED, self.last_reason or "start",
                        "paused before agentd restarted")
        self._schedule(until - self._wall(), self.last_reason or "start")
        return True

    def _spawn_failed(self, number: int, exc: SpawnError) -> None:
        self._set_state(State.STOPPING, "spawn-error")
        self.events.emit(ev.SESSION_EXIT, level="error", unit=self.unit.name, session=number,
                         reason="spawn-error", error=str(exc), duration_s=0.0)
        self.history_file.append({"kind": "end", "session": number, "reason": "spawn-error",
                                  "error": str(exc), "at": iso(self._wall())})

    def _emitter(self, number: int) -> Callable[..., None]:
        def emit(event: str, **fields: Any) -> None:
            self.events.emit(event, unit=self.unit.name, session=number, **fields)
        return emit

    async def _end_session(self, session: Session, trigger: Trigger | None) -> None:
        """End the session's whole process tree and record how it ended."""
        if self._triggers is not None:
            self._triggers.cancel()
        exited_by_itself = trigger is None
        reason = trigger.reason if trigger else _exit_reason(session.child)
        if self.state in (State.RUNNING, State.STARTING):
            self._set_state(State.STOPPING, reason)
        unit, number = self.unit.name, session.number

        def on_signal(sig: int, pids: list[int]) -> None:
            name = "session.orphan_killed" if exited_by_itself else ev.SESSION_KILL
            self.events.emit(name, unit=unit, session=number, signal=signal_name(sig), pids=pids)

        sig = int(self.unit.stop.signal)
        await session.end(sig, self.unit.stop.grace, on_signal=on_signal)
        session.close()
        self.session = None
        self._triggers = None
        child = session.child
        duration = round(session.uptime, 3)
        self.events.emit(ev.SESSION_EXIT, unit=unit, session=number, code=child.exit_code,
                         signal=signal_name(child.signal) if child.signal else None,
                         reason=reason, duration_s=duration)
        self.history_file.append({
            "kind": "end", "session": number, "at": iso(self._wall()), "reason": reason,
            "code": child.exit_code, "signal": signal_name(child.signal) if child.signal else None,
            "duration_s": duration, "output_bytes": session.bytes_out,
            "tokens": session.matcher.tokens,
        })
        self.transcript.note(f"{iso(self._wall())} session {number} ended ({reason})")

    def _decide(self, end: SessionEnd) -> Decision:
        decision = self.policy.decide(end, self.ends, self._clock())
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
            self._set_state(State.BACKOFF, reason, detail)
            self._schedule(decision.delay, reason)
        elif decision.next == "paused":
            until = decision.until if decision.until is not None else self._wall() + 3600
            self.paused_until = until
            self._set_state(State.PAUSED, reason, detail)
            self._schedule(max(0.0, until - self._wall()), reason)
        elif decision.next == "start":  # a stop arrived as the decision was made
            self._set_state(State.STOPPED, "manual")
        else:
            self._set_state(State(decision.next), reason, detail)

    def _schedule(self, delay: float, reason: str) -> None:
        # Sleep until the deadline: no periodic tick while nothing is due.
        self._cancel_timer()
        self._timer = asyncio.get_running_loop().call_later(delay, self._deadline, reason)

    def _deadline(self, reason: str) -> None:
        self._timer = None
        self.restarts += 1
        self._set_state(State.STARTING, reason)
        self._task = asyncio.get_running_loop().create_task(self._run(reason))

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

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
        if self._triggers is not None:
            self._triggers.fire(trigger)

    def watch(self, listener: Callable[[bytes], None]) -> Callable[[], None]:
        """Have ``listener`` get the terminal output of this unit's sessions; the undo."""
        self._watchers.append(listener)
        return lambda: self._watchers.remove(listener) if listener in self._watchers else None

    def type_input(self, data: bytes) -> bool:
        """Type ``data`` into the live session (an attached person); False if none runs."""
        if self.session is None or self.state != State.RUNNING:
            return False
        self.session.type(data)
        return True

    def _on_raw(self, data: bytes) -> None:
        for listener in list(self._watchers):
            listener(data)

    def _on_output(self, hits: list[Hit]) -> None:
        if self._triggers is not None:
            self._triggers.on_hits(hits)

    # -- bootstrap & injection ---------------------------------------------------------
    def _apply_definition(self) -> None:
        """Switch to the definition ``redefine`` left for the next session."""
        unit, self._next_unit = self._next_unit, None
        if unit is None or unit == self.unit:
            return
        if (unit.state_dir, unit.state.layout) != (self.unit.state_dir, self.unit.state.layout):
            self.briefing.forget_readonly()
        self.unit = unit
        self.policy = RestartPolicy(unit.restart, unit.limits)
        self.transcript.close()
        self.transcript = self._new_transcript()

    def _rules(self) -> list[Rule]:
        rules = [Rule(s.name, s.pattern, s.action) for s in self.unit.sentinels]
        # The PreCompact hook (`agentctl hooks`) announces compaction on the terminal.
        return [*rules, Rule("precompact", PRECOMPACT_RULE, "restart", echo_check=False)]

    def _new_transcript(self) -> Transcript:
        env = dict(self._base_env)
        env.update(self.unit.env)
        secrets = secrets_from_env(env)
        self.redactor = Redactor(secrets)
        return Transcript(self.logs_dir / "transcript.log", max_bytes=self.unit.logs.max_bytes,
                          backups=self.unit.logs.backups, redactor=self.redactor)

    def close(self) -> None:
        self._cancel_timer()
        self.transcript.close()
        release(self._lock)
        self._lock = None

    def claim(self) -> str | None:
        """Hold ``run/units/UNIT.lock`` while supervising this unit; why not, if another
        agentd (``serve`` or ``run``) already does: two supervisors of one unit would
        share session numbers, bootstraps and the state dir."""
        if self._lock is not None:
            return None
        try:
            self._lock = hold(self.paths.run / "units" / f"{self.unit.name}.lock",
                              str(self.unit.source or ""))
        except Held as held:
            return (f"{self.unit.name} is already supervised by another agentd (pid {held.pid}); "
                    f"use `agentctl` for that one, or stop it first")
        return None


def _exit_reason(child: Child) -> str:
    if child.exit_code is not None:
        return f"exit:{child.exit_code}"
    if child.signal is not None:
        return f"signal:{signal_name(child.signal)}"
    return "exit:unknown"

