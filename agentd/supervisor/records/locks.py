"""Which agentd owns a unit, and which unit owns a state dir (and a worktree).

An agentd (``serve`` or ``run``) holds ``run/units/UNIT.lock`` while it
supervises the unit (``UnitLock``): two supervisors of one unit would share
session numbers, bootstraps and the state dir.

A unit holds ``run/statedirs/HASH.lock`` (of its state dir's real path) while
it runs or waits to run again (``StateDirLock``): two units that share a state
dir would overwrite each other's memory, so the second one refuses to start;
so does a unit whose git worktree another unit holds (``worktree-HASH.lock``).
Those files are one ``AGENTD_HOME``'s. So while a session runs the unit also
holds an ``flock`` on the state dir itself (``lock_state_dir``: on the
directory's own descriptor, no file made in it), which every agentd sees
alike, of any home or user: the second one's session does not start. Only
while a session runs: an open directory cannot be unmounted, and a unit may
wait for hours for its state dir to be fixed. ``lock_state_dir`` is the one
place that takes that flock; it never creates the directory (a deleted
workdir must stay deleted: the session is a spawn error).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from agentd.config.unit import Unit
from agentd.fileio import Held, hold, release


class StateDirInUse(Exception):
    """Another process (another agentd, of another home or user) holds the flock on
    the state dir ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"{path} is locked by another process")


def lock_state_dir(state_dir: Path | str) -> int | None:
    """Take the exclusive ``flock`` on the directory ``state_dir`` itself, without
    waiting; the descriptor that holds it (``release`` it, or close it, to let go),
    or None when the directory does not exist (yet). Raises ``StateDirInUse`` when
    another open descriptor of it holds the lock, ``OSError`` when it cannot be
    opened as a directory for another reason (permissions, not a directory)."""
    try:
        fd = os.open(state_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StateDirInUse(os.path.realpath(state_dir)) from None
    except OSError:
        os.close(fd)
        raise
    return fd


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
    """``run/statedirs/HASH.lock`` (and ``worktree-HASH.lock`` for a unit with a
    ``worktree``): held by the one unit of this home that may use a state dir now;
    and the state dir's own flock (``lock_state_dir``) while a session runs."""

    def __init__(self, directory: Path) -> None:
        super().__init__()
        self.directory = directory
        self._worktree = _Lock()
        self._dir_fd: int | None = None  # the state dir's, flock'ed

    def claim(self, unit: Unit) -> str | None:
        """Hold the locks of ``unit``'s state dir (and worktree; the dir's own flock
        once the dir exists) if not yet; why not, if another unit, or another agentd,
        has one. All or nothing."""
        refused = self._claim_files(unit)
        if refused is None and (refused := self.claim_dir(unit)) is not None:
            self.release()
        return refused

    def claim_dir(self, unit: Unit) -> str | None:
        """The flock on the state dir itself, if it exists and is not held yet; why
        not, if another agentd (another AGENTD_HOME, another user) holds it."""
        if self._dir_fd is not None:
            return None
        try:
            self._dir_fd = lock_state_dir(unit.state_dir)
        except StateDirInUse as exc:
            return (
                f"{unit.name}: its state dir {exc.path} is in use by another agentd (of "
                "another AGENTD_HOME, or another user); two supervisors must not share "
                "one: stop the other, or give this unit its own state.dir"
            )
        except OSError:
            return None  # not usable as a directory: the session says why when it starts
        return None

    def release_dir(self) -> None:
        """The state dir's own flock goes (a session ended; the file locks stay)."""
        release(self._dir_fd)
        self._dir_fd = None

    def release(self) -> None:
        super().release()
        self._worktree.release()
        self.release_dir()

    def _claim_files(self, unit: Unit) -> str | None:
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

    def _path(self, kind: str, real: str) -> Path:
        return self.directory / f"{kind}{hashlib.sha256(real.encode()).hexdigest()[:32]}.lock"
