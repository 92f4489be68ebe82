"""One session of a unit, from its bootstrap to its ``SessionEnd``.

render the bootstrap -> plan the injection -> spawn the ``Session`` -> wait
for the leader's exit or a trigger (sentinel, timeout, idle, context, manual)
-> end the whole tree -> ``SessionEnd``, for the restart policy. The states
it passes through (running, stopping) are set by its service's
``_set_state``; what comes after the end is the service's to decide.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentd import events as ev
from agentd.config.convert import signal_name
from agentd.config.unit import Unit
from agentd.errors import SpawnError
from agentd.memory.formats import complete
from agentd.process import cgroup as cgroups
from agentd.process.tree import session_env_marker
from agentd.session import inject
from agentd.session.child import Child
from agentd.session.redact import Redactor
from agentd.session.screen import ScreenRing
from agentd.session.session import Session
from agentd.session.transcript import Transcript
from agentd.supervisor.briefing import Briefing
from agentd.supervisor.budget import Usage
from agentd.supervisor.handoff import Handoff
from agentd.supervisor.history import History
from agentd.supervisor.policy import SessionEnd
from agentd.supervisor.sessionrecord import Recorded, SessionRecords
from agentd.supervisor.states import SetState, State
from agentd.supervisor.triggers import HANDOFF_RULE, Trigger, Triggers
from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Hit, Rule
from agentd.times import iso


@dataclass(frozen=True)
class Host:
    """What a service lends each of its sessions."""

    emit: Callable[..., None]
    history: History
    records: SessionRecords  # run/sessions: what a later agentd must end after a kill -9
    briefing: Briefing
    base_env: dict[str, str]
    socket: Path  # the control socket, for `agentctl` inside the session
    clock: Callable[[], float]
    wall: Callable[[], float]
    set_state: SetState
    stop_requested: Callable[[], bool]
    on_raw: Callable[[bytes], None]  # the terminal output, for attached watchers
    notify: Callable[[Unit, str, int], None] | None


class SessionRun:
    def __init__(self, host: Host, unit: Unit, transcript: Transcript, redactor: Redactor,
                 number: int, reason: str) -> None:
        self.host = host
        self.unit = unit
        self.transcript = transcript
        self.redactor = redactor
        self.number = number
        self.reason = reason
        self.session: Session | None = None  # from the spawn until the tree is gone
        self.size = unit.pty.cols, unit.pty.rows  # the pty's: the unit's until resized
        self.screen = ScreenRing(*self.size, number)  # kept after the end
        self._triggers: Triggers | None = None
        self._handoff: Handoff | None = None

    async def run(self, ends: Sequence[SessionEnd], usage: Usage | None) -> SessionEnd:
        """Live the session through; ``ends`` (the earlier ones) feed the bootstrap."""
        host, unit, number, reason = self.host, self.unit, self.number, self.reason
        started = host.clock()
        cgroup: Path | None = None
        try:
            prepared = await host.briefing.prepare(unit, number, reason, ends, host.wall(),
                                                   self.redactor)
            boot, boot_file, state_before = prepared.boot, prepared.file, prepared.fingerprint
            plan = inject.plan(unit, number, boot.text, boot_file)
            marker = session_env_marker(unit.name, number)
            env = inject.session_env(host.base_env, unit, plan, number=number, reason=reason,
                                     bootstrap_file=boot_file, marker=marker, socket=host.socket)
            self.transcript.note(f"{iso(host.wall())} session {number} starting ({reason})")
            cgroup = cgroups.session_cgroup(marker)
            host.records.begin(Recorded(unit.name, number, marker, str(cgroup) if cgroup else None,
                                        int(unit.stop.signal), unit.stop.grace))
            cols, rows = self.size  # resized while the bootstrap was prepared, maybe
            child = Child.spawn(plan.argv, cwd=unit.workdir, env=env, cols=cols, rows=rows,
                                cgroup_procs=str(cgroup / "cgroup.procs") if cgroup else None)
        except SpawnError as exc:
            host.records.finish(unit.name, cgroup)
            self._spawn_failed(exc)
            return SessionEnd(number, started, host.clock(), spawn_error=str(exc),
                              spawn_retry=not exc.permanent, state_changed=False)
        injector = inject.Injector(plan, boot.text, boot.tokens, emit=self._emit)
        handoff = self._handoff = Handoff(unit.handoff, state_dir=unit.state_dir,
                                          submit=unit.inject.submit, emit=self._emit,
                                          fire=self.fire, clock=host.clock)
        triggers = self._triggers = Triggers(
            unit, emit=self._emit, wall=host.wall, on_prompt=injector.on_prompt,
            notify=self._notify, usage=usage, on_handoff=handoff.on_hit,
        )
        self.screen.resize(cols, rows)
        matcher = LineMatcher(rules(unit), cols=cols, rows=rows)
        session = Session(number=number, child=child, marker=marker,
                          matcher=matcher, transcript=self.transcript,
                          on_output=self._on_output, clock=host.clock, on_raw=host.on_raw,
                          screen=self.screen, cgroup=cgroup)
        self.session = session
        session.start()
        host.history.append({"kind": "start", "session": number, "pid": child.pid,
                             "reason": reason, "at": iso(host.wall()),
                             "bootstrap": str(boot_file), "marker": marker})
        host.set_state(State.RUNNING, reason)
        self._emit(ev.SESSION_START, pid=child.pid)
        injector.begin(session)
        triggers.arm(session)
        handoff.arm(session)
        if host.stop_requested():  # asked before there were triggers to fire
            triggers.fire(Trigger("manual", "stop"))
        await asyncio.wait([session.exited, triggers.fired], return_when=asyncio.FIRST_COMPLETED)
        trigger = triggers.trigger
        await self.end(trigger)
        state_after, done = await host.briefing.state_after(unit)
        return SessionEnd(
            number, started, host.clock(),
            exit_code=child.exit_code, signal=child.signal,
            trigger=trigger.reason if trigger else None,
            action=trigger.action if trigger else "restart",
            pause_until=trigger.pause_until if trigger else None,
            state_changed=state_after != state_before or state_after is None,
            complete=_summary(done),
        )

    def resize(self, cols: int, rows: int) -> None:
        """The terminal is ``cols`` x ``rows`` now: the running session's pty and
        screens follow; a session not spawned yet is spawned at that size."""
        self.size = cols, rows
        if self.session is not None:
            self.session.resize(cols, rows)

    def fire(self, trigger: Trigger) -> None:
        """End the session for ``trigger`` (stop, restart); nothing if it is not armed."""
        if self._triggers is not None:
            self._triggers.fire(trigger)

    async def end(self, trigger: Trigger | None) -> None:
        """End the session's whole process tree and record how it ended."""
        session = self.session
        assert session is not None, "end() of a session that is not running"
        if self._triggers is not None:
            self._triggers.cancel()
        if self._handoff is not None:
            self._handoff.close()
        exited_by_itself = trigger is None
        reason = trigger.reason if trigger else _exit_reason(session.child)
        # from STARTING or RUNNING; after a failed end it is STOPPING already (no change)
        self.host.set_state(State.STOPPING, reason)

        def on_signal(sig: int, pids: list[int]) -> None:
            name = "session.orphan_killed" if exited_by_itself else ev.SESSION_KILL
            self._emit(name, signal=signal_name(sig), pids=pids)

        await session.end(int(self.unit.stop.signal), self.unit.stop.grace, on_signal=on_signal)
        session.close()
        self.host.records.finish(self.unit.name, session.cgroup)
        self.session = None
        self._triggers = None
        child = session.child
        duration = round(session.uptime, 3)
        self._emit(ev.SESSION_EXIT, code=child.exit_code,
                   signal=signal_name(child.signal) if child.signal else None,
                   reason=reason, duration_s=duration)
        self.host.history.append({
            "kind": "end", "session": self.number, "at": iso(self.host.wall()), "reason": reason,
            "code": child.exit_code, "signal": signal_name(child.signal) if child.signal else None,
            "duration_s": duration, "output_bytes": session.bytes_out,
            "tokens": session.matcher.tokens,
        })
        self.transcript.note(f"{iso(self.host.wall())} session {self.number} ended ({reason})")

    def _spawn_failed(self, exc: SpawnError) -> None:
        self.host.set_state(State.STOPPING, "spawn-error")
        self._emit(ev.SESSION_EXIT, level="error", reason="spawn-error", error=str(exc),
                   duration_s=0.0)
        self.host.history.append({"kind": "end", "session": self.number, "reason": "spawn-error",
                                  "error": str(exc), "at": iso(self.host.wall())})

    def _emit(self, event: str, **fields: Any) -> None:
        self.host.emit(event, unit=self.unit.name, session=self.number, **fields)

    def _notify(self, event: str) -> None:
        if self.host.notify is not None:
            self.host.notify(self.unit, event, self.number)

    def _on_output(self, hits: list[Hit]) -> None:
        if self._triggers is not None:
            self._triggers.on_hits(hits)


def rules(unit: Unit) -> list[Rule]:
    """What the session's output is matched against: the unit's sentinels and its
    handoff rule (the PreCompact hook reaches agentd through the socket instead)."""
    found = [Rule(s.name, s.pattern, s.action) for s in unit.sentinels]
    if unit.handoff.pattern is not None:
        found.append(Rule(HANDOFF_RULE, unit.handoff.pattern, "handoff"))
    return found


def _summary(done: complete.Completion | None) -> str | None:
    return done.summary if done is not None else None


def _exit_reason(child: Child) -> str:
    if child.exit_code is not None:
        return f"exit:{child.exit_code}"
    if child.signal is not None:
        return f"signal:{signal_name(child.signal)}"
    return "exit:unknown"
