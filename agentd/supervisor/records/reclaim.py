"""Which agentd owns a unit, which unit owns a state dir, and ending what a
previous owner left running.

An agentd (``serve`` or ``run``) holds ``run/units/UNIT.lock`` while it
supervises the unit: two supervisors of one unit would share session
numbers, bootstraps and the state dir. A unit holds
``run/statedirs/HASH.lock`` (of its state dir's real path) while it runs or
waits to run again: two units that share a state dir would overwrite each
other's memory, so the second one refuses to start; so does a unit whose git
worktree another unit holds (``worktree-HASH.lock``).

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
import hashlib
import os
import re
from collections.abc import Callable, Collection
from pathlib import Path

from agentd import events as ev
from agentd.config.convert import signal_name
from agentd.config.names import UNIT_NAME
from agentd.config.unit import Unit
from agentd.fileio import Held, hold, release
from agentd.process.ending import end_session_tree
from agentd.supervisor.records.history import History
from agentd.supervisor.records.sessions import Recorded, SessionRecords

LOST = "agentd-lost"


class _Lock:
    """One lock file, held from the first ``claim`` until ``release``."""

    def __init__(self) -> None:
        self._fd: int | None = None

    def _claim(self, name: str, path: Path, note: str, taken: Callable[[Held], str]) -> str | None:
        """Hold ``path`` (if not yet); ``taken(held)`` says why not when another has it."""
        if self._fd is not None:
            return None
        try:
            self._fd = hold(path, note)
        except Held as held:
            return taken(held)
        except OSError as exc:
            return f"{name}: cannot take {path}: {exc.strerror or exc}"
        return None

    def release(self) -> None:
        release(self._fd)
        self._fd = None


class UnitLock(_Lock):
    """``run/units/UNIT.lock``: held by the one agentd that supervises the unit."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def claim(self, unit: Unit) -> str | None:
        """Hold the lock (if not yet); why not, if another agentd already does."""
        return self.claim_name(unit.name, str(unit.source or ""))

    def claim_name(self, name: str, note: str = "") -> str | None:
        """``claim`` for a unit known only by its name (one that did not load)."""
        return self._claim(
            name,
            self.path,
            note,
            lambda held: (
                f"{name} is already supervised by another agentd (pid {held.pid}); "
                "use `agentctl` for that one, or stop it first"
            ),
        )


class StateDirLock(_Lock):
    """``run/statedirs/HASH.lock``: held by the one unit that may use a state dir now;
    for a unit with a ``worktree``, also ``run/statedirs/worktree-HASH.lock`` of it."""

    def __init__(self, directory: Path) -> None:
        super().__init__()
        self.directory = directory
        self._worktree = _Lock()

    def claim(self, unit: Unit) -> str | None:
        """Hold the lock of ``unit``'s state dir (and worktree) if not yet; why not, if
        another unit does."""
        if unit.worktree is not None:
            tree = os.path.realpath(unit.worktree.path)
            refused = self._worktree._claim(
                unit.name,
                self._path("worktree-", tree),
                f"{unit.name} {tree}",
                lambda held: (
                    f"{unit.name}: its worktree {tree} is in use by unit "
                    f"{held.note.split(' ', 1)[0] or 'another unit'} (pid {held.pid}); two "
                    "units may share a repository, not a worktree: give each its own branch"
                ),
            )
            if refused:
                return refused
        real = os.path.realpath(unit.state_dir)
        refused = self._claim(
            unit.name,
            self._path("", real),
            f"{unit.name} {real}",
            lambda held: (
                f"{unit.name}: its state dir {real} is in use by unit "
                f"{held.note.split(' ', 1)[0] or 'another unit'} (pid {held.pid}); two units "
                "must not share one: give each its own state.dir"
            ),
        )
        if refused:
            self._worktree.release()
        return refused

    def release(self) -> None:
        super().release()
        self._worktree.release()

    def _path(self, kind: str, real: str) -> Path:
        return self.directory / f"{kind}{hashlib.sha256(real.encode()).hexdigest()[:32]}.lock"


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
    return Recorded(unit, int(last.get("session", 0)), str(last["marker"]), None, 0, 0.0)


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
