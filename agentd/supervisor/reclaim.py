"""Which agentd owns a unit, which unit owns a state dir, and ending what a
previous owner left running.

An agentd (``serve`` or ``run``) holds ``run/units/UNIT.lock`` while it
supervises the unit: two supervisors of one unit would share session
numbers, bootstraps and the state dir. A unit holds
``run/statedirs/HASH.lock`` (of its state dir's real path) while it runs or
waits to run again: two units that share a state dir would overwrite each
other's memory, so the second one refuses to start.

An agentd that died hard (``kill -9``) leaves a history whose last record is
a session ``start`` without an ``end``; that session's processes still carry
its marker in their environment, so they are found and ended like any
session's (the leader's pid is not used: after the old daemon died it may
belong to someone else by now). Only the lock's holder may do that: if
another agentd holds it, that session is alive and supervised, not lost.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from agentd import events as ev
from agentd.config.convert import signal_name
from agentd.config.unit import Unit
from agentd.lockfile import Held, hold, release
from agentd.process.ending import end_session_tree
from agentd.supervisor.history import History

LOST = "agentd-lost"


class _Lock:
    """One lock file, held from the first ``claim`` until ``release``."""

    def __init__(self) -> None:
        self._fd: int | None = None

    def _claim(self, unit: Unit, path: Path, note: str,
               taken: Callable[[Held], str]) -> str | None:
        """Hold ``path`` (if not yet); ``taken(held)`` says why not when another has it."""
        if self._fd is not None:
            return None
        try:
            self._fd = hold(path, note)
        except Held as held:
            return taken(held)
        except OSError as exc:
            return f"{unit.name}: cannot take {path}: {exc.strerror or exc}"
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
        return self._claim(unit, self.path, str(unit.source or ""), lambda held: (
            f"{unit.name} is already supervised by another agentd (pid {held.pid}); "
            "use `agentctl` for that one, or stop it first"))


class StateDirLock(_Lock):
    """``run/statedirs/HASH.lock``: held by the one unit that may use a state dir now."""

    def __init__(self, directory: Path) -> None:
        super().__init__()
        self.directory = directory

    def claim(self, unit: Unit) -> str | None:
        """Hold the lock of ``unit``'s state dir (if not yet); why not, if another unit does."""
        real = os.path.realpath(unit.state_dir)
        path = self.directory / f"{hashlib.sha256(real.encode()).hexdigest()[:32]}.lock"
        return self._claim(unit, path, f"{unit.name} {real}", lambda held: (
            f"{unit.name}: its state dir {real} is in use by unit "
            f"{held.note.split(' ', 1)[0] or 'another unit'} (pid {held.pid}); two units "
            "must not share one: give each its own state.dir"))


async def reclaim_if_owner(lock: UnitLock, history: History, unit: Unit, *,
                           emit: Callable[..., None], at: str) -> bool:
    """End the unit's lost last session if we may (we hold the lock); whether there was one."""
    if lock.claim(unit) is not None:
        return False
    try:
        return await reclaim_lost_session(history, unit, emit=emit, at=at) is not None
    except Exception as exc:  # report it; new sessions carry another marker
        emit(ev.UNIT_ERROR, level="error", unit=unit.name,
             error=f"reclaiming the last session: {type(exc).__name__}: {exc}")
        return False


async def reclaim_lost_session(history: History, unit: Unit, *, emit: Callable[..., None],
                               at: str) -> int | None:
    """End the unit's last session if a previous agentd left it; its number, or None."""
    records = history.recent()
    last = records[-1] if records else None
    if not last or last.get("kind") != "start" or not last.get("marker"):
        return None
    number = int(last.get("session", 0))

    def on_signal(sig: int, pids: list[int]) -> None:
        emit(ev.SESSION_ORPHAN_KILLED, unit=unit.name, session=number, signal=signal_name(sig),
             pids=pids, why="left running by an agentd that did not stop cleanly")

    await end_session_tree(leader=None, marker=str(last["marker"]), sid=None,
                           sig=int(unit.stop.signal), grace=unit.stop.grace, on_signal=on_signal)
    history.append({"kind": "end", "session": number, "at": at, "reason": LOST})
    return number
