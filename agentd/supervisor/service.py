"""One unit's life: its state machine, its sessions and the waits between them.

A ``Service`` turns a validated ``Unit`` into sessions, one after another::

    reclaim what a killed agentd left -> resume a pause it left, or
    [ a daily budget spent? -> one session -> the completion gate -> decide
      (``RestartPolicy``) -> record the outcome ] -> wait (backoff, pause) or settle

and one session is: make its worktree (first use) -> render the bootstrap -> plan
the injection -> spawn the
``Session`` -> wait for the leader's exit or a trigger (sentinel, timeout,
idle, context, manual) -> end the whole tree -> a ``SessionEnd`` for the
policy. Every state change goes through ``_set_state``, which checks
``agentd.supervisor.states.TRANSITIONS``; every arc is taken here::

                 start                 spawned
    STOPPED ────────────────> STARTING ───────> RUNNING
       ^                        ^  │               │ session ends / agentd ends it
       │ stop                   │  │ spawn error   v
       │                        │  └──────────> STOPPING ──> DONE | FAILED | STALLED
       │          deadline      │                  │   └───> STOPPED (stop)
    BACKOFF / PAUSED ───────────┘ <────────────────┘ restart after a delay / pause
       (restart now: STOPPING -> STARTING)

- ``start`` (STOPPED, a terminal state, BACKOFF, PAUSED -> STARTING): a
  person, autostart, or the end of a wait (``_after_wait``);
- ``_session``: STARTING -> RUNNING once spawned, STARTING -> STOPPING when the
  spawn fails; ``_end_session``: RUNNING -> STOPPING while the tree is ended;
- ``_gated``, while STOPPING: an end the policy would make DONE first runs the unit's
  check (``complete.verify``, ``agentd.supervisor.verify``); a failed check refuses
  the completion (its mark cleared), so the decision is STOPPING -> STARTING
  (reason ``verify-failed``) or, the ``attempts``-th time, STOPPING -> FAILED;
- ``_settle`` after the policy's decision: STOPPING -> BACKOFF, PAUSED, DONE,
  FAILED, STALLED or STOPPED; or STOPPING -> STARTING for the next session;
- ``_budget_spent``: STARTING -> PAUSED until midnight; ``stop`` of a waiting
  unit: BACKOFF/PAUSED -> STOPPED; ``_force_state`` -> FAILED for a bug;
- ``interrupt`` (a signal to ``agentd run``: an eviction, a drain): as ``stop``,
  but to INTERRUPTED (from STOPPING or BACKOFF/PAUSED), which the next start
  carries on from (INTERRUPTED -> STARTING, with the reason it was left in).

A wait is a state and one deadline: the loop sleeps until it (no periodic
tick while nothing is due). A unit whose state dir another unit holds does
not start: status shows it ``conflict``, naming that unit, and it tries again
every ``CONFLICT_RETRY`` s (one flock each) until the other lets the dir go
or a stop ends the wait. Each ended session's last screen is drawn once and
kept with the history (``records.screens``). A usage-limit pause recorded in the history
survives a daemon restart, and autostart honours it.

The record of the sessions (their number, the restarts, how the last one
ended) is read back from the history, so it survives a daemon restart. The
parts a service owns: its ``Definition``, its ``Briefing``, its locks
(``records.locks``), its ``Lifecycle`` (enablement, the state a person or
its end left it in, the restart count), its completion ``Checks``
(``agentd.supervisor.verify``) and the watchers of its terminal. The
daemon and the CLIs use only the public methods, through
``agentd.supervisor.api``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentd import events as ev
from agentd.config.complete import CompleteSpec
from agentd.config.convert import signal_name
from agentd.config.lint import STATE_IN_PS, state_in_argv
from agentd.config.unit import Unit
from agentd.errors import AgentdError, SpawnError
from agentd.events import EventLog
from agentd.memory.bootstrap.render import Bootstrap, render
from agentd.paths import Paths
from agentd.process import cgroup as cgroups
from agentd.process.tree import session_env_marker
from agentd.reasons import INTERNAL_ERROR, MANUAL, WORKTREE_ERROR, Outcome, Reason
from agentd.session import inject
from agentd.session.child import Child
from agentd.session.forkserver import ForkServer
from agentd.session.launch import Launch
from agentd.session.redact import Redactor, hide_token_shapes
from agentd.session.screen import ScreenCapture, ScreenRing
from agentd.session.session import Session
from agentd.session.transcript import Transcript
from agentd.supervisor import verify, worktree
from agentd.supervisor.briefing import Briefing
from agentd.supervisor.budget import Usage, any_set, next_midnight, reached, usage_today
from agentd.supervisor.definition import Definition
from agentd.supervisor.handoff import Handoff
from agentd.supervisor.policy import Decision, RestartPolicy, SessionEnd
from agentd.supervisor.records import screens
from agentd.supervisor.records.history import History, last_end, last_usage, restored_pause
from agentd.supervisor.records.lifecycle import REMEMBERED, Lifecycle
from agentd.supervisor.records.locks import StateDirLock, UnitLock
from agentd.supervisor.records.reclaim import LOST, reclaim_if_owner
from agentd.supervisor.records.sessions import Recorded, SessionRecords
from agentd.supervisor.states import ACTIVE, TERMINAL, TRANSITIONS, State, TransitionError
from agentd.supervisor.triggers import Trigger, Triggers, rules
from agentd.supervisor.usage import sources as usage_sources
from agentd.supervisor.usage.tally import Spent, estimate_record
from agentd.supervisor.usage.watch import UsageWatch
from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Hit
from agentd.times import iso

PRECOMPACT = "precompact"  # the sentinel name a PreCompact hook ends a session with
HISTORY_KEEP = 200  # the ends kept for the policy and the bootstrap
LAUNCH_KEEP = 1.0  # s: a backoff this short keeps the next session's process started ahead
SCREEN_DRAW_WAIT = 10.0  # s: drawing an ended session's last screen to keep it
CONFLICT_RETRY = 1.0  # s between tries of a unit waiting for its state dir (one flock each)


class SessionRun:
    """What one session of a unit has while it lives, and keeps after: its number, why
    it started, its ``Session`` (from the spawn until its tree is gone), its screens and
    what may end it. Its arcs are the service's."""

    def __init__(
        self, unit: Unit, transcript: Transcript, redactor: Redactor, number: int, reason: str
    ) -> None:
        self.unit = unit  # the definition it runs with, and what follows from it
        self.transcript = transcript
        self.redactor = redactor
        self.number = number
        self.reason = reason
        self.session: Session | None = None
        self.size = unit.pty.cols, unit.pty.rows  # the pty's: the unit's until resized
        self.screen = ScreenRing(*self.size, number)  # kept after the end
        self.triggers: Triggers | None = None
        self.handoff: Handoff | None = None
        self.usage: UsageWatch | None = None  # its CLI's usage records, read as it goes
        self.spent: dict[str, Any] | None = None  # its usage record, once it ended

    def fire(self, trigger: Trigger) -> None:
        """End the session for ``trigger`` (stop, restart); nothing if it is not armed."""
        if self.triggers is not None:
            self.triggers.fire(trigger)

    def resize(self, cols: int, rows: int) -> None:
        """The terminal is ``cols`` x ``rows`` now: the running session's pty and
        screens follow; a session not spawned yet is spawned at that size."""
        self.size = cols, rows
        if self.session is not None:
            self.session.resize(cols, rows)

    def on_output(self, hits: list[Hit]) -> None:
        if self.triggers is not None:
            self.triggers.on_hits(hits)
        if self.usage is not None:
            self.usage.poke()  # new output: maybe new usage in the CLI's records

    def on_usage(self, spent: Spent) -> None:
        if self.triggers is not None:
            self.triggers.on_usage(spent)

    def usage_record(self) -> dict[str, Any] | None:
        """What the session spent so far (running) or in all (ended), as recorded."""
        if self.spent is not None:
            return self.spent
        latest = self.usage.latest if self.usage is not None else None
        return latest.record(self.unit.usage) if latest is not None else None


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
        forks: ForkServer | None = None,
    ) -> None:
        self.paths = paths
        self._forks = forks  # clones the agents, where it can (agentd.session.forkserver)
        self.events = events
        self._emit = events.emit
        self._notify = notify
        self._clock = clock
        self._wall = wall
        base = dict(os.environ if base_env is None else base_env)
        base.pop("NOTIFY_SOCKET", None)  # systemd's notify socket is the daemon's, not the agent's
        self._base_env = base
        logs_dir = paths.unit_logs(unit.name)
        self._history = History(
            logs_dir / "history.jsonl", max_bytes=unit.logs.max_bytes, health=events.health
        )
        self._records = SessionRecords(paths.run_sessions, events.health)
        self.lifecycle = Lifecycle(paths.unit_lifecycle(unit.name), events.health)
        kept = self.lifecycle.value
        self.state = kept.state or State.STOPPED  # done, failed... until someone starts it
        self.since = kept.since if kept.since is not None else wall()
        self.state_reason = kept.reason
        self.detail = kept.detail
        self._changed = asyncio.Event()
        self._stop_requested = False
        self._remember_stop = True  # False while the daemon (not a person) stops the unit
        self._interrupted: str | None = None  # the reason, while a signal stops the unit
        self.briefing = Briefing(
            logs_dir,
            events.emit,
            events.health,
            given=paths.run / "units" / f"{unit.name}.bootstrap.md",
        )
        self._definition = Definition(
            unit, base_env=base, logs_dir=logs_dir, briefing=self.briefing, health=events.health
        )
        self._watchers: list[Callable[[bytes], None]] = []  # attached terminals
        self._lock = UnitLock(paths.run / "units" / f"{unit.name}.lock")
        self._state_lock = StateDirLock(paths.run / "statedirs")
        # the run of sessions, and its record (read back from the history)
        self.session_no = self._history.last_session()
        self.restarts = kept.restarts
        self.ends: list[SessionEnd] = []
        recent = self._history.recent()
        self.last_reason, self.last_at = last_end(recent)  # at: wall time
        self._last_usage = last_usage(recent)  # the last session's, from before this agentd
        self.current: SessionRun | None = None  # the last session, running or not
        self.task: asyncio.Task[None] | None = None
        self._reclaim_task: asyncio.Task[None] | None = None
        self._warned_ps = False  # the state in argv, visible in `ps`: said once
        # the wait between sessions: what it waits for and its one deadline
        self.paused_until: float | None = None
        self.usage: Usage | None = None  # today's, when the unit has a budget
        self._restored = restored_pause(self._history.recent())  # until the first start
        self._resume_at: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        # the next session's process, started ahead: (its number, its marker, the launch)
        self._launch: tuple[int, str, Launch] | None = None
        # what the last ended session leaves for after the next spawn: its pty, to close
        # (the kernel waits for its flush work), and its screen, taken at its end, to
        # draw and write (the emulator's run holds the GIL for milliseconds)
        self._screen_due: tuple[SessionRun, ScreenCapture, str, str] | None = None
        self._pty_due: Child | None = None
        # the history's fsync of a session's end and outcome, on a thread while the next
        # bootstrap renders; awaited before the next session's record (``_history_synced``)
        self._syncing: asyncio.Future[OSError | None] | None = None
        self._keeping: asyncio.Task[None] | None = None
        # another unit holds its state dir: why, and the next try (``start``)
        self.conflict: str | None = None
        self._conflict_timer: asyncio.TimerHandle | None = None
        # the completion gate and the worktree: their checks and git
        self._helpers: set[int] = set()  # the pids of checks and git running now
        self._refusals = 0  # completions refused since the unit was started
        self.checks = verify.Checks(
            emit=events.emit,
            history=self._history,
            records=self._records,
            wall=wall,
            owned=self._helpers,
            changed=self._changed.set,
        )

    # -- control ---------------------------------------------------------------------
    def start(self, reason: str = "start", *, resume_pause: bool = False) -> str | None:
        """Start now (from stopped, a terminal state, backoff or pause); no-op if active.

        Why it cannot start, if it cannot: another agentd supervises it, or
        another unit uses its state dir (also said as a ``unit.error`` event).
        """
        if self.state in ACTIVE:
            return None
        refused = self.claim()
        if refused:
            self._emit(ev.UNIT_ERROR, level="error", unit=self.unit.name, error=refused)
            self.detail = refused  # status says why it is not running (e.g. at daemon start)
            return refused
        shared = self._state_lock.claim(self.definition)
        if shared:  # `conflict` until the other unit lets the state dir go, then it starts
            if self.conflict is None or not self.conflict.startswith(shared):
                self._emit(ev.UNIT_ERROR, level="error", unit=self.unit.name, error=shared)
            self.conflict = f"{shared}; it starts by itself once that unit is no longer running"
            self._cancel_conflict()
            self._conflict_timer = asyncio.get_running_loop().call_later(
                CONFLICT_RETRY, lambda: self.start(reason, resume_pause=resume_pause)
            )
            return self.conflict
        self._cancel_conflict()
        self.conflict = None
        self._cancel_wait()
        self.paused_until = None
        carry_on = self.state == State.INTERRUPTED
        if carry_on and reason == "start":  # the first session says why the last one ended
            reason = self.state_reason or reason
        # autostart honours a pause the previous agentd left, and so does carrying on after
        # an interruption; a person's explicit start does not
        self._resume_at = self._restored if resume_pause or carry_on else None
        self._restored = None
        self._stop_requested = False
        self._remember_stop = True
        self._interrupted = None
        self._refusals = 0
        self._set_state(State.STARTING, reason)  # at once, so waiters see it is under way
        self._run_sessions(reason)
        return None

    async def stop(self, *, remember: bool = True) -> None:
        """Stop the unit and wait until its session's processes are gone.

        ``remember``: a person stopped it, so it stays stopped across daemon
        restarts; the daemon's own shutdown (or a removed unit file) does not.
        """
        self._stop_requested = True
        self._remember_stop = remember
        self._cancel_conflict()  # no longer waiting for its state dir
        self.conflict = None
        self.checks.abort()  # a check under way is ended with its tree
        if self.state in (State.BACKOFF, State.PAUSED):
            self._cancel_wait()
            self._drop_launch()
            self._set_state(*self._stopped_by())
        self._fire(Trigger(MANUAL, "stop"))
        if self.task is not None:
            await asyncio.shield(self.task)
        await self._kept()

    async def interrupt(self, signame: str) -> None:
        """A signal (``SIGTERM``...) asks the process to end: stop the unit gracefully as
        ``stop`` does and leave it ``interrupted`` (reason ``interrupted:SIGTERM``), not
        stopped, so that the next start carries on. A unit that ends ``done``, ``failed``
        or ``stalled`` by itself meanwhile keeps that state."""
        why = str(Reason.interrupted(signame))
        self._interrupted = why
        if self.state in (State.BACKOFF, State.PAUSED):
            self._cancel_wait()
            self._drop_launch()
            self._set_state(State.INTERRUPTED, why)
        self._stop_requested = True
        self._fire(Trigger(Reason.interrupted(signame), "stop"))
        if self.task is not None:
            await asyncio.shield(self.task)
        await self._kept()

    def restart(self, reason: str = "manual") -> None:
        """End the running session and start a fresh one at once (not a failure).
        A person's ``reason`` is kept and shown with the unit's secrets hidden."""
        reason = hide_token_shapes(self.redactor.redact_text(reason))
        if self.state in (State.RUNNING, State.STARTING):
            given = Reason.parse(reason)
            self._fire(Trigger(given if given.is_manual else Reason.manual(reason)))
        elif self.state != State.STOPPING:
            self.start(reason)  # a refusal is an event

    def precompact(self, session: int) -> bool:
        """The CLI of session ``session`` is about to compact (its PreCompact hook):
        end it now, reason ``sentinel:precompact`` (outcome ``context``), so the
        CLI never sends its summary request. False if that session is not running."""
        if self.state != State.RUNNING or self.session is None or self.session_no != session:
            return False
        self._emit(
            ev.SESSION_SENTINEL,
            unit=self.unit.name,
            session=session,
            name=PRECOMPACT,
            action="restart",
            line="(the CLI's PreCompact hook)",
        )
        self._fire(Trigger(Reason.sentinel(PRECOMPACT)))
        return True

    async def join(self) -> None:
        """Wait until the reclaim and the current run of sessions have settled."""
        if self._reclaim_task is not None:
            await asyncio.shield(self._reclaim_task)
        if self.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.task)

    def kill_now(self) -> list[int]:
        """SIGKILL every process of the running session at once (a second Ctrl-C)."""
        session = self.session
        return [] if session is None else session.kill_now()

    def reclaim(self) -> asyncio.Task[None]:
        """End what a previous agentd left of this unit's last session (once).

        Sessions start only after it; the daemon calls it for every unit it
        loads, so a unit that is not started again is cleaned up too.
        """
        if self._reclaim_task is None:
            self._reclaim_task = asyncio.get_running_loop().create_task(self._reclaim_safely())
        return self._reclaim_task

    def redefine(self, unit: Unit) -> None:
        """Use ``unit`` from the next session on; at once if none is under way."""
        self._definition.redefine(unit)
        if self.state not in ACTIVE and self.session is None:
            self._definition.apply()

    @property
    def enabled(self) -> bool:
        """Does the daemon start it when it starts (``agentctl enable``, else ``autostart``)?"""
        chosen = self.lifecycle.value.enabled
        return self.definition.autostart if chosen is None else chosen

    def set_enabled(self, enabled: bool) -> None:
        self.lifecycle.keep(enabled=enabled)

    def starts_with_daemon(self) -> bool:
        """Enabled, and not left stopped, done, failed or stalled (only a start leaves those;
        an interrupted unit carries on)."""
        return self.enabled and self.lifecycle.value.state in (None, State.INTERRUPTED)

    def owns(self, pid: int) -> bool:
        """Is ``pid`` this unit's to reap: its session's leader, or on its way to be one,
        or a check or a git command of this unit, which it waits for itself?"""
        if pid in self._helpers:
            return True
        if self._launch is not None and self._launch[2].pid == pid:
            return True
        session = self.session
        return session is not None and session.pid == pid and not session.child.reaped

    @property
    def helpers(self) -> set[int]:
        """The pids of this unit's checks and git commands (for ``oneshot.run``'s ``owned``)."""
        return self._helpers

    async def verify_now(self) -> verify.Verdict:
        """Run the unit's check now, by hand (``agentctl verify``); it changes no state.
        AgentdError when the unit has none, or one is running."""
        unit = self._definition.newest
        if unit.complete is None:
            raise AgentdError(
                f"{unit.name} has no completion check: give it complete: {{verify: COMMAND}}"
            )
        if self.checks.busy:
            raise AgentdError(f"{unit.name}: its check is running already; wait for it")
        return await self._check(unit, unit.complete, self.session_no, manual=True)

    def claim(self) -> str | None:
        """Hold ``run/units/UNIT.lock`` while supervising this unit; why not, if another
        agentd (``serve`` or ``run``) already does (see ``records.locks``)."""
        return self._lock.claim(self.unit)

    def close(self) -> None:
        self._cancel_wait()
        self._drop_launch()
        self._cancel_conflict()
        self.briefing.forget_given()  # no session runs: nothing reads it
        self._definition.close()
        self._lock.release()
        self._state_lock.release()

    def watch(self, listener: Callable[[bytes], None]) -> Callable[[], None]:
        """Have ``listener`` get the terminal output of every session of this unit, its
        secrets hidden as in the transcript; the undo. What they type goes to the live
        session only (``type_input``)."""
        stream = self.redactor.stream()

        def hidden(data: bytes) -> None:
            stream.redactor = self.redactor  # the newest definition's secrets
            if out := stream.redact(data):
                listener(out)

        self._watchers.append(hidden)
        return lambda: self._watchers.remove(hidden) if hidden in self._watchers else None

    def type_input(self, data: bytes) -> bool:
        """Type ``data`` into the live session (an attached person); False if none runs."""
        session = self.session if self.state == State.RUNNING else None
        if session is None:
            return False
        session.type(data)
        return True

    def resize(self, cols: int, rows: int) -> None:
        """An attached terminal is ``cols`` x ``rows`` now: this session's and the next ones'."""
        self._definition.resize(cols, rows)
        if self.current is not None:
            self.current.resize(cols, rows)

    def screen(self) -> ScreenCapture | screens.KeptScreen:
        """What to draw the last session's screen from: the running one's, the last one's
        of this agentd, else the last one kept on disk (``ran`` false: it never ran)."""
        run = self.current
        if run is None:
            logs, pty = self.paths.unit_logs(self.unit.name), self.unit.pty
            return screens.KeptScreen(logs, pty.cols, pty.rows, self.session_no)
        about: dict[str, Any] = {"running": run.session is not None, "ran": True}
        if run.session is None and self.last_reason:  # ended (or not spawned yet)
            at = iso(self.last_at) if self.last_at is not None else None
            about.update(reason=self.last_reason, detail=self.detail or None, ended_at=at)
        return run.screen.capture(about, mask=self.redactor.spans)  # its secrets hidden

    def session_usage(self) -> dict[str, Any] | None:
        """What the running session spent so far, or the last one in all (its CLI's
        records, or the screen estimate); None before any is known."""
        run = self.current
        return run.usage_record() if run is not None else self._last_usage

    def processes(self) -> list[int]:
        """The pids of the running session's processes (a scan: slow, off the loop)."""
        session = self.session
        return session.processes() if session is not None else []

    # -- what it is ------------------------------------------------------------------
    @property
    def unit(self) -> Unit:
        """The definition in use (by the running session, if any)."""
        return self._definition.unit

    @property
    def definition(self) -> Unit:
        """The newest definition as its file says it (the next session's, but for the size
        an attached terminal gave: ``resize``); what a reload compares the file with."""
        return self._definition.loaded

    @property
    def session(self) -> Session | None:
        """The running session: from its spawn until its tree is gone."""
        run = self.current
        return run.session if run is not None else None

    @property
    def transcript(self) -> Transcript:
        return self._definition.transcript

    @property
    def redactor(self) -> Redactor:
        """Hides the unit's secrets (from its environment) in text."""
        return self._definition.redactor

    def preview_bootstrap(self) -> tuple[int, Bootstrap]:
        """The bootstrap the next session would get now, and its number (changes nothing);
        its secrets hidden, as in the kept copies."""
        number = self.session_no + 1
        reason = self.last_reason or "start"
        unit = self._definition.newest
        boot = render(self.briefing.context(unit, number, reason, self.ends, self._wall()))
        hidden = self._definition.redactor.hide_state(boot.text, unit.secret_patterns)
        return number, dataclasses.replace(boot, text=hidden)

    async def wait(self, predicate: Callable[[State], bool]) -> State:
        while not predicate(self.state):
            self._changed.clear()
            await self._changed.wait()
        return self.state

    # -- the run of sessions -----------------------------------------------------------
    def _run_sessions(self, reason: str) -> None:
        """Run sessions from now on (the service is ``starting`` already)."""
        self.task = asyncio.get_running_loop().create_task(self._run(reason))

    def _fire(self, trigger: Trigger) -> None:
        if self.current is not None:
            self.current.fire(trigger)

    async def _run(self, reason: str) -> None:
        history = self._history
        try:
            await asyncio.shield(self.reclaim())
            if self._resume_pause(self.last_reason or "start"):
                return
            while True:
                if self._budget_spent(self._definition.newest):
                    await self._kept()
                    return
                end = await self._gated(await self._one_session(reason))
                decision = self._decide(end)
                history.append(
                    {
                        "kind": "outcome",
                        "session": end.session,
                        "outcome": decision.outcome,
                        "next": decision.next,
                        "detail": decision.detail or None,
                        "reset_at": iso(decision.until) if decision.until is not None else None,
                    },
                    durable=False,
                )
                self._sync_history_soon()  # with the end: durable before the next session
                if decision.next != "start" or self._stop_requested:
                    if decision.next != "backoff" or self._stop_requested:
                        await self._kept()  # no session comes soon: its screen first
                    self._settle(decision)
                    if not self._next_is_near():
                        self._keep_due()  # drawn during the wait; else once the next runs
                    return
                reason = decision.reason
                self.restarts += 1
        except Exception as exc:  # a bug must not leave the unit silently half-way
            self._emit(
                ev.UNIT_ERROR,
                level="error",
                unit=self._definition.unit.name,
                error=f"{type(exc).__name__}: {exc}",
            )
            run = self.current
            if run is not None and run.session is not None:
                await self._end_session(run, Trigger(INTERNAL_ERROR, "stop"))
            await self._kept()
            self._force_state(State.FAILED, "internal-error", f"{type(exc).__name__}: {exc}")
            raise
        finally:
            self._sync_history_soon()  # an end whose outcome was not written (a bug) too
            if not self._next_is_near():
                self._drop_launch()  # started ahead for a session that will not come soon

    async def _one_session(self, reason: str) -> SessionEnd:
        self._definition.apply()
        unit = self._definition.unit
        if not self._warned_ps and state_in_argv(unit):  # once per unit, not per session
            self._warned_ps = True
            self._emit(ev.UNIT_ERROR, level="warning", unit=unit.name, error=STATE_IN_PS)
        self._set_state(State.STARTING, reason)
        self.session_no += 1
        self.current = SessionRun(
            unit, self._definition.transcript, self._definition.redactor, self.session_no, reason
        )
        return await self._session(self.current, self.ends, self.usage)

    async def _reclaim_safely(self) -> None:
        wall = self._wall
        if await reclaim_if_owner(
            self._lock,
            self._history,
            self._records,
            self._definition.unit,
            emit=self._emit,
            at=iso(wall()),
        ):
            self.last_reason, self.last_at = LOST, wall()

    def _sync_history_soon(self) -> None:
        """Make what the history holds unsynced durable, on a thread (an fsync takes
        milliseconds, tens on a busy disk: the next bootstrap renders meanwhile)."""
        history = self._history
        if history.unsynced and (self._syncing is None or self._syncing.done()):
            syncing = asyncio.ensure_future(asyncio.to_thread(history.fsync))

            def told(done: asyncio.Future[OSError | None]) -> None:  # on the loop
                if not done.cancelled() and (failed := done.result()) is not None:
                    history.failed(failed)

            syncing.add_done_callback(told)
            self._syncing = syncing

    async def _history_synced(self) -> None:
        """Wait until the history's records are durable (before a session may run)."""
        syncing, self._syncing = self._syncing, None
        if syncing is not None:
            await asyncio.shield(syncing)
        self._history.sync()  # anything written since, here (nothing, as a rule)

    def _decide(self, end: SessionEnd) -> Decision:
        unit = self._definition.unit  # the one the session used
        policy = RestartPolicy(unit.restart, unit.limits)
        decision = policy.decide(end, self.ends, self._clock())
        self.ends = [*self.ends, end][-HISTORY_KEEP:]
        self.last_reason = end.reason
        self.last_at = self._wall()
        if self._stop_requested and self._interrupted is not None:
            if decision.next not in ("done", "failed", "stalled"):  # what it came to stays
                decision = Decision("interrupted", self._interrupted, outcome=Outcome.STOPPED)
        elif self._stop_requested and decision.next != "stopped":
            decision = Decision("stopped", "manual", outcome=Outcome.STOPPED)
        return decision

    # -- the completion gate ---------------------------------------------------------
    async def _gated(self, end: SessionEnd) -> SessionEnd:
        """``end``, or - when it would make the unit done and the unit has a check - the
        same end with its completion refused (``SessionEnd.refusal``) if the check fails."""
        unit = self._definition.unit  # the one the session used
        gate = unit.complete
        if gate is None or self._stop_requested:
            return end
        policy = RestartPolicy(unit.restart, unit.limits)
        if policy.decide(end, self.ends, self._clock()).next != "done":
            return end
        verdict = await self._check(unit, gate, end.session, manual=False)
        if verdict.ok or verdict.aborted:  # aborted: stopped meanwhile, ``_decide`` says so
            return end
        self._refusals += 1
        await self.briefing.clear_completion(unit)
        refused = verify.refusal(
            verdict, session=end.session, attempt=self._refusals, attempts=gate.attempts
        )
        return dataclasses.replace(end, refusal=refused, complete=None)

    async def _check(
        self, unit: Unit, gate: CompleteSpec, session: int, *, manual: bool
    ) -> verify.Verdict:
        return await self.checks.run(
            unit,
            gate,
            session=session,
            manual=manual,
            base_env=self._base_env,
            redactor=self._definition.redactor,
            transcript=self._definition.transcript,
        )

    async def _worktree(self, unit: Unit) -> None:
        """Make the unit's worktree if it is not there yet; SpawnError (permanent,
        reason ``worktree-error``) saying why it cannot be."""
        assert unit.worktree is not None
        try:
            made = await worktree.ensure(unit.worktree, worktree.Git(self._helpers))
        except worktree.WorktreeError as exc:
            raise SpawnError(str(exc), permanent=True, reason=str(WORKTREE_ERROR)) from None
        if made.created:
            self._emit(
                ev.UNIT_WORKTREE,
                unit=unit.name,
                path=str(made.path),
                branch=made.branch,
                base=made.base,
                created=True,
            )

    def _settle(self, decision: Decision) -> None:
        """Apply a decision that does not start a session at once."""
        reason, detail = decision.reason, decision.detail
        if decision.next == "backoff":
            self._backoff(decision.delay, reason, detail)
        elif decision.next == "paused":
            until = decision.until if decision.until is not None else self._wall() + 3600
            self._pause(until, reason, detail)
        elif decision.next == "start":  # a stop arrived as the decision was made
            self._set_state(*self._stopped_by())
        else:
            self._set_state(State(decision.next), reason, detail)

    def _fence(self, unit: Unit) -> None:
        """Hold the state dir's own lock (``records.locks``), its first session having
        made the dir; SpawnError (tried again) while another agentd holds it."""
        if refused := self._state_lock.claim_dir(unit):
            raise SpawnError(refused, unit=unit.name, permanent=False)
        if unfenced := self._state_lock.unfenced:
            self._state_lock.unfenced = None  # said once per unit
            self._emit(ev.STATE_ERROR, level="warning", unit=unit.name, error=unfenced)

    def _stopped_by(self) -> tuple[State, str]:
        """Where a stop leaves the unit: interrupted by a signal, or stopped."""
        if self._interrupted is not None:
            return State.INTERRUPTED, self._interrupted
        return State.STOPPED, "manual"

    # -- one session -------------------------------------------------------------------
    async def _session(
        self, run: SessionRun, ends: Sequence[SessionEnd], today: Usage | None
    ) -> SessionEnd:
        """Live session ``run`` through; ``ends`` (the earlier ones) feed the bootstrap."""
        unit, number, reason = run.unit, run.number, run.reason
        transcript, redactor = run.transcript, run.redactor
        started = self._clock()
        cgroup: Path | None = None
        try:
            # the process first: it starts and joins its cgroup while the bootstrap renders
            marker, launch = self._launch_for(number, run.size)
            cgroup = launch.cgroup
            if unit.worktree is not None:  # its workdir and state dir are in it
                await self._worktree(unit)
            prepared = await self.briefing.prepare(
                unit, number, reason, ends, self._wall(), redactor
            )
            boot, boot_file, state_before = prepared.boot, prepared.file, prepared.fingerprint
            self._fence(unit)
            plan = inject.plan(unit, number, boot.text, boot_file)
            env = inject.session_env(
                self._base_env,
                unit,
                plan,
                number=number,
                reason=reason,
                bootstrap_file=boot_file,
                marker=marker,
                socket=self.paths.socket,
            )
            usage = usage_sources.prepare(
                unit,
                plan.argv,
                env,
                number=number,
                logs_dir=self.paths.unit_logs(unit.name),
                now=self._wall(),
            )
            env = usage.env  # where its CLI keeps its usage records, fixed for this session
            transcript.note(f"{iso(self._wall())} session {number} starting ({reason})")
            await self._history_synced()  # how the one before ended, durable before this runs
            # before the agent may run: a kill -9 of agentd leaves what ends it
            self._records.begin(
                Recorded(
                    unit.name,
                    number,
                    marker,
                    str(cgroup) if cgroup else None,
                    int(unit.stop.signal),
                    unit.stop.grace,
                )
            )
            cols, rows = run.size  # resized while the bootstrap was prepared, maybe
            child = await launch.exec(usage.argv, cwd=unit.workdir, env=env, cols=cols, rows=rows)
            cgroup = launch.cgroup  # None if it could not be joined after all
        except SpawnError as exc:
            self._drop_launch()
            self._state_lock.release_dir()  # its state dir may be fixed (unmounted) meanwhile
            self._records.finish(unit.name, cgroup)
            self._spawn_failed(run, exc)
            return SessionEnd(
                number,
                started,
                self._clock(),
                spawn_error=str(exc),
                spawn_retry=not exc.permanent,
                spawn_reason=exc.reason,
                state_changed=False,
            )

        def emit(event: str, **fields: Any) -> None:
            self._emit(event, unit=unit.name, session=number, **fields)

        def notify(event: str) -> None:
            if self._notify is not None:
                self._notify(unit, event, number)

        run.usage = UsageWatch(unit.usage, usage.source, emit=emit, on_update=run.on_usage)
        injector = inject.Injector(plan, boot.text, boot.tokens, emit=emit)
        handoff = run.handoff = Handoff(
            unit.handoff,
            state_dir=unit.state_dir,
            submit=unit.inject.submit,
            paste=unit.inject.paste,
            emit=emit,
            fire=run.fire,
            clock=self._clock,
        )
        triggers = run.triggers = Triggers(
            unit,
            emit=emit,
            wall=self._wall,
            on_prompt=injector.on_prompt,
            notify=notify,
            usage=today,
            on_handoff=handoff.on_hit,
            ask_handoff=handoff.ask,
        )
        run.screen.resize(cols, rows)
        matcher = LineMatcher(rules(unit, triggers.sentinel_off), cols=cols, rows=rows)
        session = Session(
            number=number,
            child=child,
            marker=marker,
            matcher=matcher,
            transcript=transcript,
            on_output=run.on_output,
            clock=self._clock,
            on_raw=self._output,
            screen=run.screen,
            cgroup=cgroup,
        )
        run.session = session
        self._launch = None  # the session owns the pid from now on
        session.start()
        self._history.append(
            {
                "kind": "start",
                "session": number,
                "pid": child.pid,
                "reason": reason,
                "at": iso(self._wall()),
                "bootstrap": str(boot_file),
                "marker": marker,
            }
        )
        self._set_state(State.RUNNING, reason)
        emit(ev.SESSION_START, pid=child.pid)
        injector.begin(session)
        triggers.arm(session)
        handoff.arm(session)
        if self._stop_requested:  # asked before there were triggers to fire
            triggers.fire(Trigger(MANUAL, "stop"))
        self._keep_due()  # the screen of the session before, now that this one runs
        either: list[asyncio.Future[Any]] = [session.exited, triggers.fired]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        # The agent's own run, for min_uptime and the quick-end brake: from its exec to its
        # exit or the trigger, not agentd's work around it (the bootstrap before, the stop
        # and the records after), which takes seconds on a loaded machine.
        ran_until = self._clock()
        trigger = triggers.trigger
        if not self._stop_requested and (trigger is None or trigger.action == "restart"):
            self._prelaunch(number + 1, run.size)  # likely next: on its way while this one ends
        await self._end_session(run, trigger)
        state_after, done = await self.briefing.state_after(unit)
        return SessionEnd(
            number,
            session.started_at,
            ran_until,
            exit_code=child.exit_code,
            signal=child.signal,
            trigger=trigger.reason if trigger else None,
            action=trigger.action if trigger else "restart",
            pause_until=trigger.pause_until if trigger else None,
            detail=trigger.detail if trigger else "",
            pause_left=trigger.pause_left if trigger else None,
            state_changed=state_after != state_before or state_after is None,
            complete=done.summary if done is not None else None,
        )

    # -- the next session's process, started ahead (agentd.session.launch) ------------
    def _launch_for(self, number: int, size: tuple[int, int]) -> tuple[str, Launch]:
        """The marker and launch of session ``number``: the one started ahead, or a new one."""
        if self._launch is not None and self._launch[0] != number:
            self._drop_launch()
        if self._launch is None:
            self._launch = self._new_launch(number, size)
        return self._launch[1], self._launch[2]

    def _prelaunch(self, number: int, size: tuple[int, int]) -> None:
        """Start session ``number``'s process now, if it can be (else at its turn)."""
        self._drop_launch()
        with contextlib.suppress(SpawnError):
            self._launch = self._new_launch(number, size)

    def _new_launch(self, number: int, size: tuple[int, int]) -> tuple[int, str, Launch]:
        marker = session_env_marker(self.unit.name, number)
        cgroup = cgroups.session_cgroup(marker)
        try:
            launch = Launch.start(
                cgroup, marker=marker, cols=size[0], rows=size[1], server=self._forks
            )
            return number, marker, launch
        except SpawnError:
            cgroups.remove(cgroup)
            raise

    def _next_is_near(self) -> bool:
        """Is the next session due within ``LAUNCH_KEEP`` (a short backoff)? Then the
        process started ahead for it waits; else it is given up."""
        timer = self._timer
        if self.state != State.BACKOFF or timer is None:
            return False
        return timer.when() - asyncio.get_running_loop().time() <= LAUNCH_KEEP

    def _drop_launch(self) -> None:
        """Give up a process started ahead that no session took."""
        pending, self._launch = self._launch, None
        if pending is not None:
            pending[2].abandon()

    async def _end_session(self, run: SessionRun, trigger: Trigger | None) -> None:
        """End the session's whole process tree and record how it ended."""
        session = run.session
        assert session is not None, "_end_session() of a session that is not running"
        unit, number = run.unit, run.number
        if run.triggers is not None:
            run.triggers.cancel()
        if run.handoff is not None:
            run.handoff.close()
        exited_by_itself = trigger is None
        if exited_by_itself and run.usage is not None:
            run.usage.read_final()  # its CLI has exited: read while the tree is ended
        reason = str(trigger.reason) if trigger else _exit_reason(session.child)
        # from STARTING or RUNNING; after a failed end it is STOPPING already (no change)
        self._set_state(State.STOPPING, reason)

        def on_signal(sig: int, pids: list[int]) -> None:
            name = ev.SESSION_ORPHAN_KILLED if exited_by_itself else ev.SESSION_KILL
            self._emit(name, unit=unit.name, session=number, signal=signal_name(sig), pids=pids)

        await session.end(int(unit.stop.signal), unit.stop.grace, on_signal=on_signal)
        session.close(keep_pty=True)  # its pty is closed once the next session is spawned
        self._records.finish(unit.name, None)
        if session.cgroup is not None:  # empty now; its rmdir (ms) is not on the way to the next
            asyncio.get_running_loop().run_in_executor(None, cgroups.remove, session.cgroup)
        run.session = None
        run.triggers = None
        child = session.child
        duration = round(session.uptime, 3)
        tokens = session.matcher.tokens
        watch, run.usage = run.usage, None
        # read once its processes are gone: the CLIs write their totals on exit
        spent = await watch.final(tokens) if watch is not None else estimate_record(tokens)
        run.spent = spent
        self._emit(
            ev.SESSION_EXIT,
            unit=unit.name,
            session=number,
            code=child.exit_code,
            signal=signal_name(child.signal) if child.signal else None,
            reason=reason,
            duration_s=duration,
        )
        self._history.append(
            {
                "kind": "end",
                "session": number,
                "at": iso(self._wall()),
                "reason": reason,
                "code": child.exit_code,
                "signal": signal_name(child.signal) if child.signal else None,
                "duration_s": duration,
                "output_bytes": session.bytes_out,
                "tokens": tokens,
                "usage": spent,
            },
            durable=False,  # with the outcome that follows: one fsync, not two, on the way
        )
        run.transcript.note(f"{iso(self._wall())} session {number} ended ({reason})")
        await self._kept()  # the one before, if it is still being written: in order
        # Off the way to the next session (two trips to a thread and the emulator's
        # run over the output, which holds the GIL: milliseconds): the screen as it is
        # now, drawn once the next session is spawned (or the unit settles).
        capture = run.screen.capture(mask=run.redactor.spans)  # wrapped secrets too
        self._screen_due = (run, capture, reason, iso(self._wall()))
        self._pty_due = child if child.reaped else None

    def _keep_due(self) -> None:
        """What the last ended session left for later: close its pty, and start keeping
        its screen."""
        pty, self._pty_due = self._pty_due, None
        if pty is not None:
            pty.close()
        due, self._screen_due = self._screen_due, None
        if due is not None:
            self._keeping = asyncio.ensure_future(self._keep_screen(*due))

    async def _kept(self) -> None:
        """Wait until the last ended session's screen is kept (or given up)."""
        self._keep_due()
        keeping, self._keeping = self._keeping, None
        if keeping is not None:
            await keeping

    async def _keep_screen(
        self, run: SessionRun, capture: ScreenCapture, reason: str, ended_at: str
    ) -> None:
        """Keep the ended session's last screen (``capture``) with the history, its
        secrets hidden (``records.screens``): drawn and written off the loop."""
        logs_dir = self.paths.unit_logs(run.unit.name)
        try:
            drawn = await asyncio.wait_for(asyncio.to_thread(capture.draw), SCREEN_DRAW_WAIT)
            shown = {
                **drawn.as_json(),
                "rows": [run.redactor.redact_text(row) for row in drawn.rows],
                "reason": reason,
                "ended_at": ended_at,
            }
            await asyncio.to_thread(screens.keep, logs_dir, shown, health=self.events.health)
        except Exception as exc:  # the screen is a convenience: the session's end goes on
            self._emit(
                ev.UNIT_ERROR,
                level="warning",
                unit=run.unit.name,
                session=run.number,
                error=f"its last screen was not kept: {type(exc).__name__}: {exc}",
            )

    def _spawn_failed(self, run: SessionRun, exc: SpawnError) -> None:
        self._set_state(State.STOPPING, exc.reason)
        self._emit(
            ev.SESSION_EXIT,
            level="error",
            unit=run.unit.name,
            session=run.number,
            reason=exc.reason,
            error=str(exc),
            duration_s=0.0,
        )
        self._history.append(
            {
                "kind": "end",
                "session": run.number,
                "reason": exc.reason,
                "error": str(exc),
                "at": iso(self._wall()),
            }
        )

    def _output(self, data: bytes) -> None:
        """The terminal output of the running session, for every attached watcher."""
        for listener in list(self._watchers):
            listener(data)

    # -- the waits between sessions: backoff, pauses and daily budgets -----------------
    def _resume_pause(self, reason: str) -> bool:
        """Stay paused until the reset time a previous agentd recorded (a usage limit)."""
        until, self._resume_at = self._resume_at, None
        if until is None or until <= self._wall():
            return False
        self._pause(until, reason, "paused before agentd restarted")
        return True

    def _budget_spent(self, unit: Unit) -> bool:
        """Pause until midnight if a daily budget is used up; note today's usage otherwise."""
        self.usage = None
        budget = unit.budget
        if not any_set(budget):
            return False
        now = self._wall()
        usage = usage_today(self._history.recent(), now)
        name = reached(budget, usage)
        if name is None:
            self.usage = usage
            return False
        until = next_midnight(now)
        self._emit(
            ev.UNIT_BUDGET,
            unit=unit.name,
            budget=name,
            used=round(usage.used(name), 6),
            limit=getattr(budget, name),
            until=iso(until),
        )
        self._pause(until, str(Reason.budget(name)))
        return True

    def _pause(self, until: float, reason: str, detail: str = "") -> None:
        self.paused_until = until
        self._set_state(State.PAUSED, reason, detail)
        self._schedule(max(0.0, until - self._wall()), reason)

    def _backoff(self, delay: float, reason: str, detail: str = "") -> None:
        self._set_state(State.BACKOFF, reason, detail)
        self._schedule(delay, reason)

    def _cancel_conflict(self) -> None:
        if self._conflict_timer is not None:
            self._conflict_timer.cancel()
            self._conflict_timer = None

    def _cancel_wait(self) -> None:
        """Drop the deadline (a start or a stop came first)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self, delay: float, reason: str) -> None:
        # Sleep until the deadline: no periodic tick while nothing is due.
        self._cancel_wait()
        self._timer = asyncio.get_running_loop().call_later(delay, self._after_wait, reason)

    def _after_wait(self, reason: str) -> None:
        """A backoff or pause is over: the next session."""
        self._timer = None
        self.restarts += 1
        self._set_state(State.STARTING, reason)
        self._run_sessions(reason)

    # -- state -----------------------------------------------------------------------
    def _set_state(self, new: State, reason: str = "", detail: str = "") -> None:
        if new == self.state:
            return
        if new not in TRANSITIONS[self.state]:
            raise TransitionError(f"{self.unit.name}: {self.state} -> {new} is not allowed")
        self._force_state(new, reason, detail)

    def _force_state(self, new: State, reason: str = "", detail: str = "") -> None:
        """The one place a state changes: records it and emits ``unit.state``.

        ``reason`` stays one of the documented reasons (``exit:3``, ``sentinel:NAME``...);
        ``detail`` says more (``4 failures within 600s (burst 3)``).
        """
        old, self.state = self.state, new
        self.since = self._wall()
        self.state_reason = reason
        self.detail = detail
        self._emit(
            ev.UNIT_STATE,
            unit=self.unit.name,
            session=self.session_no or None,
            detail=detail or None,
            **{"from": str(old), "to": str(new), "reason": reason},
        )
        if new in TERMINAL:  # it will not run again by itself: its state dir is free
            self._state_lock.release()
        if new in REMEMBERED and (new != State.STOPPED or self._remember_stop):
            self.lifecycle.keep(
                state=new, reason=reason, detail=detail, since=self.since, restarts=self.restarts
            )
        elif new == State.STARTING:
            self.lifecycle.keep(
                state=None, reason="", detail="", since=None, restarts=self.restarts
            )
        self._changed.set()
        event = "restart" if (old, new) == (State.STOPPING, State.STARTING) else str(new)
        if self._notify is not None and event in self.unit.notify.on:
            self._notify(self.unit, event, self.session_no)


def _exit_reason(child: Child) -> str:
    if child.exit_code is not None:
        return f"exit:{child.exit_code}"
    if child.signal is not None:
        return f"signal:{signal_name(child.signal)}"
    return "exit:unknown"
