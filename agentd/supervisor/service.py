"""One unit's life: its state machine and the control of it.

A ``Service`` turns a validated ``Unit`` into sessions, one after another
(``sessionloop``): render the bootstrap -> plan the injection -> spawn the
``Session`` -> wait for the leader's exit or a trigger (sentinel, timeout,
idle, context, manual) -> end the whole tree (``sessionrun``) ->
``RestartPolicy.decide`` -> the next state, or a wait (``pauses``). Every
state change goes through ``_set_state`` (see ``agentd.supervisor.states``).

The parts it owns: its ``Definition``, the ``SessionLoop`` (and through it
each ``SessionRun``), its ``Pauses``, its ``UnitLock``, its ``Terminal``
for attached people and its ``Lifecycle`` (enablement, the state a person or
its end left it in, and the restart count, kept across daemon restarts). The
daemon and the CLIs use only the public methods below, through
``agentd.supervisor.api``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

from agentd import events as ev
from agentd.config.unit import Unit
from agentd.events import EventLog
from agentd.memory.bootstrap.render import Bootstrap
from agentd.paths import Paths
from agentd.session.redact import Redactor
from agentd.session.screen import ScreenCapture, ScreenRing
from agentd.session.session import Session
from agentd.session.transcript import Transcript
from agentd.supervisor.attach import Terminal
from agentd.supervisor.briefing import Briefing
from agentd.supervisor.definition import Definition
from agentd.supervisor.history import History
from agentd.supervisor.lifecycle import REMEMBERED, Lifecycle
from agentd.supervisor.pauses import Pauses, restored_pause
from agentd.supervisor.reclaim import StateDirLock, UnitLock
from agentd.supervisor.sessionloop import SessionLoop
from agentd.supervisor.sessionrecord import SessionRecords
from agentd.supervisor.sessionrun import Host
from agentd.supervisor.states import ACTIVE, TERMINAL, TRANSITIONS, State, TransitionError
from agentd.supervisor.triggers import Trigger

PRECOMPACT = "precompact"  # the sentinel name a PreCompact hook ends a session with


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
        self._wall = wall
        base = dict(os.environ if base_env is None else base_env)
        base.pop("NOTIFY_SOCKET", None)  # systemd's notify socket is the daemon's, not the agent's
        logs_dir = paths.unit_logs(unit.name)
        history = History(logs_dir / "history.jsonl", max_bytes=unit.logs.max_bytes,
                          health=events.health)
        self.lifecycle = Lifecycle(paths.unit_lifecycle(unit.name), events.health)
        kept = self.lifecycle.value
        self.state = kept.state or State.STOPPED  # done, failed... until someone starts it
        self.since = kept.since if kept.since is not None else wall()
        self.state_reason = kept.reason
        self.detail = kept.detail
        self._changed = asyncio.Event()
        self._stop_requested = False
        self._remember_stop = True  # False while the daemon (not a person) stops the unit
        self.briefing = Briefing(logs_dir, events.emit, events.health,
                                 given=paths.run / "units" / f"{unit.name}.bootstrap.md")
        self._definition = Definition(unit, base_env=base, logs_dir=logs_dir,
                                      briefing=self.briefing, health=events.health)
        self.terminal = Terminal(lambda: self.session if self.state == State.RUNNING else None)
        self._lock = UnitLock(paths.run / "units" / f"{unit.name}.lock")
        self._state_lock = StateDirLock(paths.run / "statedirs")
        self.pauses = Pauses(set_state=self._set_state, wall=wall, emit=events.emit,
                             on_deadline=lambda reason: self.loop.after_wait(reason),
                             restored=restored_pause(history.recent()))
        records = SessionRecords(paths.run_sessions, events.health)
        host = Host(emit=events.emit, history=history, records=records,
                    briefing=self.briefing, base_env=base,
                    socket=paths.socket, clock=clock, wall=wall, set_state=self._set_state,
                    stop_requested=lambda: self._stop_requested, on_raw=self.terminal.output,
                    notify=notify)
        self.loop = SessionLoop(host, self._definition, self.pauses, self._lock,
                                 force_state=self._force_state)
        self.loop.restarts = kept.restarts

    # -- control ---------------------------------------------------------------------
    def start(self, reason: str = "start", *, resume_pause: bool = False) -> str | None:
        """Start now (from stopped, a terminal state, backoff or pause); no-op if active.

        Why it cannot start, if it cannot: another agentd supervises it, or
        another unit uses its state dir (also said as a ``unit.error`` event).
        """
        if self.state in ACTIVE:
            return None
        refused = self.claim() or self._state_lock.claim(self.definition)
        if refused:
            self.events.emit(ev.UNIT_ERROR, level="error", unit=self.unit.name, error=refused)
            self.detail = refused  # status says why it is not running (e.g. at daemon start)
            return refused
        self.pauses.reset(resume=resume_pause)
        self._stop_requested = False
        self._remember_stop = True
        self._set_state(State.STARTING, reason)  # at once, so waiters see it is under way
        self.loop.start(reason)
        return None

    async def stop(self, *, remember: bool = True) -> None:
        """Stop the unit and wait until its session's processes are gone.

        ``remember``: a person stopped it, so it stays stopped across daemon
        restarts; the daemon's own shutdown (or a removed unit file) does not.
        """
        self._stop_requested = True
        self._remember_stop = remember
        if self.state in (State.BACKOFF, State.PAUSED):
            self.pauses.cancel()
            self._set_state(State.STOPPED, "manual")
        self.loop.fire(Trigger("manual", "stop"))
        if self.loop.task is not None:
            await asyncio.shield(self.loop.task)

    def restart(self, reason: str = "manual") -> None:
        """End the running session and start a fresh one at once (not a failure).
        A person's ``reason`` is kept and shown with the unit's secrets hidden."""
        reason = self.redactor.redact_text(reason)
        if self.state in (State.RUNNING, State.STARTING):
            self.loop.fire(Trigger(reason if reason.startswith("manual") else f"manual:{reason}"))
        elif self.state != State.STOPPING:
            self.start(reason)  # a refusal is an event

    def precompact(self, session: int) -> bool:
        """The CLI of session ``session`` is about to compact (its PreCompact hook):
        end it now, reason ``sentinel:precompact`` (outcome ``context``), so the
        CLI never sends its summary request. False if that session is not running."""
        if self.state != State.RUNNING or self.session is None or self.session_no != session:
            return False
        self.events.emit(ev.SESSION_SENTINEL, unit=self.unit.name, session=session,
                         name=PRECOMPACT, action="restart", line="(the CLI's PreCompact hook)")
        self.loop.fire(Trigger(f"sentinel:{PRECOMPACT}"))
        return True

    async def join(self) -> None:
        """Wait until the current run of sessions has settled (its task finished)."""
        await self.loop.join()

    def kill_now(self) -> list[int]:
        """SIGKILL every process of the running session at once (a second Ctrl-C)."""
        session = self.session
        return [] if session is None else session.kill_now()

    def reclaim(self) -> asyncio.Task[None]:
        """End what a previous agentd left of this unit's last session (once).

        Sessions start only after it; the daemon calls it for every unit it
        loads, so a unit that is not started again is cleaned up too.
        """
        return self.loop.reclaim()

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
        """Enabled, and not left stopped, done, failed or stalled (only a start leaves those)."""
        return self.enabled and self.lifecycle.value.state is None

    def claim(self) -> str | None:
        """Hold ``run/units/UNIT.lock`` while supervising this unit; why not, if another
        agentd (``serve`` or ``run``) already does (see ``reclaim``)."""
        return self._lock.claim(self.unit)

    def close(self) -> None:
        self.pauses.cancel()
        self.briefing.forget_given()  # no session runs: nothing reads it
        self._definition.close()
        self._lock.release()
        self._state_lock.release()

    def watch(self, listener: Callable[[bytes], None]) -> Callable[[], None]:
        """Have ``listener`` get the terminal output of this unit's sessions; the undo."""
        return self.terminal.watch(listener)

    def type_input(self, data: bytes) -> bool:
        """Type ``data`` into the live session (an attached person); False if none runs."""
        return self.terminal.type(data)

    def resize(self, cols: int, rows: int) -> None:
        """An attached terminal is ``cols`` x ``rows`` now: this session's and the next ones'."""
        self.loop.resize(cols, rows)

    def screen(self) -> ScreenCapture:
        """What to draw the last session's screen from (running or not; blank before one)."""
        run = self.loop.current
        ring = run.screen if run is not None else ScreenRing(self.unit.pty.cols,
                                                             self.unit.pty.rows)
        return ring.capture()

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
        run = self.loop.current
        return run.session if run is not None else None

    @property
    def session_no(self) -> int:
        """The number of the last session (of this unit, across agentd restarts)."""
        return self.loop.session_no

    @property
    def transcript(self) -> Transcript:
        return self._definition.transcript

    @property
    def redactor(self) -> Redactor:
        """Hides the unit's secrets (from its environment) in text."""
        return self._definition.redactor

    def preview_bootstrap(self) -> tuple[int, Bootstrap]:
        """The bootstrap the next session would get now, and its number (changes nothing)."""
        return self.loop.preview()

    async def wait(self, predicate: Callable[[State], bool]) -> State:
        while not predicate(self.state):
            self._changed.clear()
            await self._changed.wait()
        return self.state

    # -- state -----------------------------------------------------------------------
    def _set_state(self, new: State, reason: str = "", detail: str = "") -> None:
        if new == self.state:
            return
        if new not in TRANSITIONS[self.state]:
            raise TransitionError(f"{self.unit.name}: {self.state} -> {new} is not allowed")
        self._force_state(new, reason, detail)

    def _force_state(self, new: State, reason: str = "", detail: str = "") -> None:
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
        if new in TERMINAL:  # it will not run again by itself: its state dir is free
            self._state_lock.release()
        if new in REMEMBERED and (new != State.STOPPED or self._remember_stop):
            self.lifecycle.keep(state=new, reason=reason, detail=detail, since=self.since,
                                restarts=self.loop.restarts)
        elif new == State.STARTING:
            self.lifecycle.keep(state=None, reason="", detail="", since=None,
                                restarts=self.loop.restarts)
        self._changed.set()
        event = "restart" if (old, new) == (State.STOPPING, State.STARTING) else str(new)
        if self._notify is not None and event in self.unit.notify.on:
            self._notify(self.unit, event, self.session_no)
