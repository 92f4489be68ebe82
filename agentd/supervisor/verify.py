"""The completion gate: a unit's ``complete.verify``, run before it may end ``done``.

``check`` runs the unit's check once, in its workdir, with the session's
environment (agentd's, the unit's ``env``, ``AGENTD_UNIT``, ``AGENTD_SESSION``
of the session that claimed completion, ``AGENTD_STATE_DIR``), bounded by
``complete.timeout`` and then ended with its whole tree as the unit's sessions are
(``stop.signal``, SIGKILL after ``stop.grace``; ``agentd.process.oneshot``),
and returns a ``Verdict``: whether it passed, how it ended, and the end of its
output with the unit's secrets hidden (``agentd.session.redact``). The service
runs it when a session's end would make the unit done (and ``agentctl
verify`` by hand); ``record`` writes what one check said: the ``unit.verify``
event, a ``verify`` record in the history and its output in the transcript.

``refusal`` turns a failed verdict into what the next bootstrap says
(``agentd.memory.bootstrap.refusal``). ``Checks`` is a unit's checks over its
life: one at a time, ended by a stop, the last one kept for ``status``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping, MutableSet
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentd import events as ev
from agentd.config.complete import CompleteSpec
from agentd.config.convert import signal_name
from agentd.config.placeholders import fill_placeholders
from agentd.config.unit import Unit
from agentd.memory.bootstrap.refusal import Refusal
from agentd.process import oneshot
from agentd.process.tree import session_env_marker
from agentd.session.inject import placeholder_values
from agentd.session.redact import Redactor
from agentd.session.transcript import Transcript
from agentd.supervisor.records.history import History, last_verify
from agentd.supervisor.records.sessions import Recorded, SessionRecords
from agentd.terminal.ansi import rewrite
from agentd.times import iso, span

TAIL_LINES = 30  # lines of its output the next bootstrap shows...
TAIL_CHARS = 3000  # ...at most this many characters of them
EVENT_CHARS = 1000  # the end of its output in the ``unit.verify`` event
_BLANKS = re.compile(r"\n{3,}")


@dataclass(frozen=True)
class Verdict:
    """What one run of a unit's check came to."""

    ok: bool
    command: str  # as the unit file gave it
    exit_code: int | None
    signal: str | None  # the signal that ended it, if one did
    timed_out: bool
    aborted: bool  # cut short: the unit was stopped meanwhile
    duration_s: float
    output: str  # what was kept of its output (the end), secrets hidden
    total_bytes: int  # how much it printed in all
    error: str | None = None  # it could not be started at all
    timeout_s: float = 0.0
    ended: tuple[int, ...] = ()  # the pids of its tree agentd signalled to end it

    @property
    def said(self) -> str:
        """How it ended, in words: ``exited with code 1``, ``ran past its timeout (10m)``."""
        if self.error is not None:
            return f"could not be started: {self.error}"
        if self.timed_out:
            return f"ran past its timeout ({span(self.timeout_s)}) and was ended"
        if self.aborted:
            return "was cut short (the unit was stopped)"
        if self.exit_code is not None:
            return f"exited with code {self.exit_code}"
        return f"was ended by signal {self.signal}" if self.signal else "ended, status unknown"

    def tail(self, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str:
        """The last ``lines`` lines of its output, at most ``chars`` characters."""
        kept = self.output.rstrip("\n").split("\n")[-lines:]
        text = "\n".join(kept)
        if len(text) > chars:
            text = text[-chars:]
            text = text[text.find("\n") + 1 :] if "\n" in text else text
        return text

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["said"] = self.said
        return out


def check_marker(unit: str, session: int) -> str:
    """The ``AGENTD_SESSION_ID`` of the check after session ``session``."""
    return session_env_marker(f"{unit}.verify", session)


def gate_env(base: Mapping[str, str], unit: Unit, session: int) -> dict[str, str]:
    """The check's environment: agentd's own, the unit's ``env``, the AGENTD_* it needs."""
    values = placeholder_values(unit, session, "", Path(""))
    env = dict(base)
    env.update({k: fill_placeholders(v, values) for k, v in unit.env.items()})
    env.update(
        {
            "AGENTD_UNIT": unit.name,
            "AGENTD_SESSION": str(session),
            "AGENTD_STATE_DIR": str(unit.state_dir),
        }
    )
    for name in ("AGENTD_SOCKET", "AGENTD_BOOTSTRAP_FILE", "AGENTD_RESTART_REASON"):
        env.pop(name, None)  # a session's, not the check's
    return env


async def check(
    unit: Unit,
    gate: CompleteSpec,
    *,
    base_env: Mapping[str, str],
    redactor: Redactor,
    session: int,
    owned: MutableSet[int] | None = None,
    abort: asyncio.Event | None = None,
    marker: str | None = None,
) -> Verdict:
    """Run ``gate.verify`` for ``unit`` once (see the module docstring); ``marker`` (else
    a new one: ``check_marker``) finds its processes, also after a ``kill -9`` of agentd."""
    marker = marker or check_marker(unit.name, session)
    try:
        done = await oneshot.run(
            gate.verify,
            cwd=unit.workdir,
            env=gate_env(base_env, unit, session),
            timeout=gate.timeout,
            sig=int(unit.stop.signal),
            grace=unit.stop.grace,
            marker=marker,
            owned=owned,
            abort=abort,
        )
    except OSError as exc:
        return Verdict(
            ok=False,
            command=gate.command,
            exit_code=None,
            signal=None,
            timed_out=False,
            aborted=False,
            duration_s=0.0,
            output="",
            total_bytes=0,
            error=f"{gate.verify[0]}: {exc.strerror or exc}",
            timeout_s=gate.timeout,
        )
    text = redactor.hide_state(
        _readable(done.output.decode("utf-8", "replace")), unit.secret_patterns
    )
    if done.total > len(done.output):
        text = text[text.find("\n") + 1 :] if "\n" in text else text  # a cut first line
    return Verdict(
        ok=done.ok,
        command=gate.command,
        exit_code=None if done.timed_out or done.aborted else done.code,  # agentd ended it
        signal=signal_name(done.signal) if done.signal else None,
        timed_out=done.timed_out,
        aborted=done.aborted,
        duration_s=done.duration_s,
        output=text,
        total_bytes=done.total,
        timeout_s=gate.timeout,
        ended=tuple(done.ended),
    )


def _readable(text: str) -> str:
    """Terminal escapes rewritten (colours dropped, carriage returns as line breaks),
    trailing blanks and runs of empty lines dropped."""
    lines = [line.rstrip() for line in rewrite(text).split("\n")]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip("\n") + ("\n" if text else "")


def record(
    verdict: Verdict,
    *,
    unit: str,
    session: int,
    manual: bool,
    emit: Callable[..., None],
    history: History,
    transcript: Transcript,
    at: float,
) -> None:
    """What one check said: the ``unit.verify`` event, the history, the transcript."""
    emit(
        ev.UNIT_VERIFY,
        level="info" if verdict.ok else "warning",
        unit=unit,
        session=session,
        ok=verdict.ok,
        exit_code=verdict.exit_code,
        duration_s=verdict.duration_s,
        command=verdict.command,
        said=verdict.said,
        timed_out=verdict.timed_out or None,
        manual=manual or None,
        tail=verdict.tail(lines=TAIL_LINES, chars=EVENT_CHARS) or None,
        pids=list(verdict.ended) or None,
    )
    history.append(
        {
            "kind": "verify",
            "session": session,
            "at": iso(at),
            "ok": verdict.ok,
            "command": verdict.command,
            "exit_code": verdict.exit_code,
            "said": verdict.said,
            "duration_s": verdict.duration_s,
            "manual": manual or None,
        }
    )
    kept = f" (the last {len(verdict.output.encode())} of {verdict.total_bytes} bytes)"
    cut = kept if verdict.total_bytes > len(verdict.output.encode()) else ""
    transcript.note(f"{iso(at)} session {session} check `{verdict.command}`{cut}:")
    if verdict.output:
        transcript.write(verdict.output.encode("utf-8"))
    outcome = "passed" if verdict.ok else "failed"
    transcript.note(f"check {outcome}: it {verdict.said} after {verdict.duration_s:g}s")


def refusal(verdict: Verdict, *, session: int, attempt: int, attempts: int) -> Refusal:
    """What the next session is told of a failed check."""
    return Refusal(
        session=session,
        command=verdict.command,
        said=verdict.said,
        tail=verdict.tail(),
        attempt=attempt,
        attempts=attempts,
    )


def summary(verdict: Verdict, *, session: int, manual: bool, at: float) -> dict[str, Any]:
    """The last check as ``agentctl status`` shows it (the history's ``verify`` record)."""
    return {
        "ok": verdict.ok,
        "command": verdict.command,
        "exit_code": verdict.exit_code,
        "said": verdict.said,
        "duration_s": verdict.duration_s,
        "session": session,
        "manual": manual,
        "at": iso(at),
    }


class Checks:
    """One unit's completion checks: one at a time, ended when ``abort`` is called (a
    stop), each recorded (``record``); what the last one said (``last``, read back from
    the history) and the one running now (``running``: command, since) for status.

    A check run by the gate is recorded in ``run/sessions`` as the unit's running
    session is, so an agentd killed meanwhile has the next one end what is left of it
    (``records.reclaim``); a check by hand is not (a session may run or start then)."""

    def __init__(
        self,
        *,
        emit: Callable[..., None],
        history: History,
        records: SessionRecords,
        wall: Callable[[], float],
        owned: MutableSet[int],
        changed: Callable[[], None],
    ) -> None:
        self._emit = emit
        self._history = history
        self._records = records
        self._wall = wall
        self._owned = owned
        self._changed = changed
        self._lock = asyncio.Lock()
        self._abort: asyncio.Event | None = None
        self.running: tuple[str, float] | None = None
        self.last = last_verify(history.recent())

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    def abort(self) -> None:
        """End the check under way, if any, with its whole tree."""
        if self._abort is not None:
            self._abort.set()

    async def run(
        self,
        unit: Unit,
        gate: CompleteSpec,
        *,
        session: int,
        manual: bool,
        base_env: Mapping[str, str],
        redactor: Redactor,
        transcript: Transcript,
    ) -> Verdict:
        """Run ``gate``'s check for ``unit`` (after the others under way) and record it."""
        async with self._lock:
            self._abort = asyncio.Event()
            self.running = (gate.command, self._wall())
            self._changed()
            marker = check_marker(unit.name, session)
            if not manual:
                self._records.begin(
                    Recorded(
                        unit.name, session, marker, None, int(unit.stop.signal), unit.stop.grace
                    )
                )
            try:
                verdict = await check(
                    unit,
                    gate,
                    base_env=base_env,
                    redactor=redactor,
                    session=session,
                    owned=self._owned,
                    abort=self._abort,
                    marker=marker,
                )
            finally:
                self.running = None
                self._abort = None
                if not manual:
                    self._records.finish(unit.name, None)
            at = self._wall()
            record(
                verdict,
                unit=unit.name,
                session=session,
                manual=manual,
                emit=self._emit,
                history=self._history,
                transcript=transcript,
                at=at,
            )
            self.last = summary(verdict, session=session, manual=manual, at=at)
            self._changed()
            return verdict
