"""Ending what a previous owner of a unit left running.

Who owns a unit and its state dir is ``agentd.supervisor.records.locks``'s.

An agentd that died hard (``kill -9``) leaves a record of each session it
ran in ``run/sessions`` (``agentd.supervisor.records.sessions``; from before
those records, a history whose last record is a ``start`` without an
``end``); that session's processes still carry its marker in their
environment and sit in its cgroup where it had one, so they are found and
ended like any session's (the leader's pid is not used: after the old daemon
died it may belong to someone else by now). Only the unit lock's holder may
do that: if another agentd holds it, that session is alive and supervised,
not lost. A unit that loads again ends its own (``reclaim_if_owner``); the
sessions of units that did not load again (a unit file deleted or broken in
between) are ended by ``reclaim_orphans``, with the stop signal and grace
they were started with.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Collection
from pathlib import Path

from agentd import events as ev
from agentd.config.convert import signal_name
from agentd.config.names import UNIT_NAME
from agentd.config.unit import Unit
from agentd.process.ending import end_session_tree
from agentd.supervisor.records.history import History
from agentd.supervisor.records.locks import UnitLock
from agentd.supervisor.records.sessions import Recorded, SessionRecords, checked

LOST = "agentd-lost"


async def reclaim_if_owner(
    lock: UnitLock,
    history: History,
    records: SessionRecords,
    unit: Unit,
    *,
    emit: Callable[..., None],
    at: str,
) -> bool:
    """End the unit's lost last session if we may (we hold the lock); whether there was one."""
    if lock.claim(unit) is not None:
        return False
    try:
        return await reclaim_lost_session(history, records, unit, emit=emit, at=at) is not None
    except Exception as exc:  # report it; new sessions carry another marker
        emit(
            ev.UNIT_ERROR,
            level="error",
            unit=unit.name,
            error=f"reclaiming the last session: {type(exc).__name__}: {exc}",
        )
        return False


async def reclaim_lost_session(
    history: History, records: SessionRecords, unit: Unit, *, emit: Callable[..., None], at: str
) -> int | None:
    """End the unit's last session if a previous agentd left it; its number, or None."""
    recorded = records.read(unit.name) or _from_history(history, unit.name)
    if recorded is None:
        return None
    await _end(recorded, int(unit.stop.signal), unit.stop.grace, emit)
    _record_end(history, recorded.session, at)
    records.finish(unit.name, recorded.cgroup_path)
    return recorded.session


async def reclaim_orphans(
    records: SessionRecords,
    loaded: Collection[str],
    *,
    locks: Path,
    logs: Path,
    emit: Callable[..., None],
    at: Callable[[], str],
) -> list[str]:
    """End the recorded sessions of units not in ``loaded`` (their files are gone or
    broken) whose lock no other agentd holds; the units whose sessions were ended."""
    ended = []
    for recorded in records.all():
        name = recorded.unit
        if name in loaded or not re.fullmatch(UNIT_NAME, name):
            continue
        lock = UnitLock(locks / f"{name}.lock")
        if lock.claim_name(name, "reclaiming a lost session") is not None:
            continue  # another agentd supervises it: alive, not lost
        try:
            await _end(recorded, recorded.signal, recorded.grace, emit)
            _record_end(History(logs / name / "history.jsonl"), recorded.session, at())
            records.finish(name, recorded.cgroup_path)
            ended.append(name)
        except Exception as exc:  # report it, go on with the others
            emit(
                ev.UNIT_ERROR,
                level="error",
                unit=name,
                error=f"reclaiming a lost session: {type(exc).__name__}: {exc}",
            )
        finally:
            lock.release()
    return ended


def _from_history(history: History, unit: str) -> Recorded | None:
    """The session a history's last ``start`` without an ``end`` names (older agentds)."""
    records = history.recent()
    last = records[-1] if records else None
    if not last or last.get("kind") != "start" or not last.get("marker"):
        return None
    return checked(Recorded(unit, int(last.get("session", 0)), str(last["marker"]), None, 0, 0.0))


async def _end(recorded: Recorded, sig: int, grace: float, emit: Callable[..., None]) -> None:
    def on_signal(sent: int, pids: list[int]) -> None:
        emit(
            ev.SESSION_ORPHAN_KILLED,
            unit=recorded.unit,
            session=recorded.session,
            signal=signal_name(sent),
            pids=pids,
            why="left running by an agentd that did not stop cleanly",
        )

    await end_session_tree(
        leader=None,
        marker=recorded.marker,
        sid=None,
        sig=sig,
        grace=grace,
        on_signal=on_signal,
        cgroup=recorded.cgroup_path,
    )


def _record_end(history: History, number: int, at: str) -> None:
    """Close the session's ``start`` in the history with an ``end`` (if it is open)."""
    records = history.recent()
    last = records[-1] if records else None
    if last and last.get("kind") == "start" and int(last.get("session", 0)) == number:
        with contextlib.suppress(OSError):  # counted by the history's health, if it has one
            history.append({"kind": "end", "session": number, "at": at, "reason": LOST})
