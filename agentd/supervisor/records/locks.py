"""Which agentd owns a unit, and which unit owns a state dir (and a worktree).

An agentd (``serve`` or ``run``) holds ``run/units/UNIT.lock`` while it
supervises the unit (``UnitLock``): two supervisors of one unit would share
session numbers, bootstraps and the state dir.

A unit holds ``run/statedirs/HASH.lock`` (of its state dir's real path) while
it runs or waits to run again (``StateDirLock``): two units that share a state
dir would overwrite each other's memory, so the second one refuses to start;
so does a unit whose git worktree another unit holds (``worktree-HASH.lock``).

Those files are one ``AGENTD_HOME``'s (and a pod's ``run`` dir is its own). So
once its state dir exists (its first session makes it; ``lock_state_dir``
never creates it: a deleted workdir must stay deleted, a git worktree is added
into an empty place) the unit also holds ``STATE_DIR/.agentd.lock`` (``PID
UNIT HOST``), until it no longer runs or waits to run again: two agentds of
two homes, two users, or two hosts on a shared volume (a pod rescheduled while
the first still lives, a Slurm job started twice) do not both use one state
dir, nor the history beside it (in a job the home is on the same volume). It
is let go while the unit waits for a session that could not start: a state
dir to be fixed can be unmounted meanwhile.

It is a file opened for writing, not the directory itself: over NFS an
exclusive ``flock`` is emulated as a whole-file POSIX lock, which needs a
descriptor open for writing (flock(2), "NFS details"), and a directory cannot
be opened so. ``flock`` on NFS (v3 with NLM, v4), CephFS and local filesystems
is seen by every client; it goes with the process, and with the client's lease
when a host dies. Where it cannot be taken at all (a read-only state dir,
whose session fails anyway; NFS mounted ``nolock``) the unit runs fenced by its
home's lock only, and says so once (``StateDirLock.unfenced``).
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Callable
from pathlib import Path

from agentd.config.unit import Unit
from agentd.fileio import OWNER_LOCK_NAME, Held, hold, release


class StateDirInUse(Exception):
    """Another process (another agentd, of another home, user or host) holds the lock of
    the state dir ``path``; ``pid`` and ``note`` (``UNIT HOST``) are what it wrote."""

    def __init__(self, path: str, pid: str, note: str) -> None:
        self.path, self.pid, self.note = path, pid, note
        super().__init__(f"{path} is locked by pid {pid}")


def lock_state_dir(state_dir: Path | str, note: str) -> int | None:
    """Take ``STATE_DIR/.agentd.lock`` without waiting, writing ``PID NOTE`` in it; the
    descriptor that holds it (``release`` it, or close it, to let go), or None when the
    directory does not exist (yet): it is never created here. Raises ``StateDirInUse``
    when another holds it, ``OSError`` when it cannot be made or locked (read-only, a
    filesystem without locks)."""
    real = os.path.realpath(state_dir)
    if not os.path.isdir(real):
        return None
    try:
        return hold(Path(real) / OWNER_LOCK_NAME, note)
    except Held as held:
        raise StateDirInUse(real, held.pid, held.note) from None


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
    and the state dir's own lock (``lock_state_dir``) once it exists."""

    def __init__(self, directory: Path) -> None:
        super().__init__()
        self.directory = directory
        self._worktree = _Lock()
        self._dir_fd: int | None = None  # STATE_DIR/.agentd.lock's
        self.unfenced: str | None = None  # why the state dir's own lock cannot be had
        self._said: str | None = None

    def claim(self, unit: Unit) -> str | None:
        """Hold the locks of ``unit``'s state dir (and worktree; the dir's own lock
        once the dir exists) if not yet; why not, if another unit, or another agentd,
        has one. All or nothing."""
        refused = self._claim_files(unit)
        if refused is None and (refused := self.claim_dir(unit)) is not None:
            self.release()
        return refused

    def claim_dir(self, unit: Unit) -> str | None:
        """The state dir's own lock, if the dir exists and it is not held yet; why not,
        if another agentd (another home, user or host) holds it."""
        if self._dir_fd is not None:
            return None
        here = socket.gethostname()
        try:
            self._dir_fd = lock_state_dir(unit.state_dir, f"{unit.name} {here}")
        except StateDirInUse as exc:
            name, _, host = exc.note.partition(" ")
            where = f"pid {exc.pid}" + (f" on host {host}" if host and host != here else "")
            if name == unit.name:
                return (
                    f"{unit.name}: its state dir {exc.path} is in use by another agentd "
                    f"running it ({where}); stop that copy first: two would overwrite each "
                    "other's memory and history"
                )
            return (
                f"{unit.name}: its state dir {exc.path} is in use by another agentd, for "
                f"unit {name or '?'} ({where}); two units must not share one: give each its "
                "own state.dir"
            )
        except OSError as exc:  # read-only, or no locks on this filesystem
            lock = Path(os.path.realpath(unit.state_dir)) / OWNER_LOCK_NAME
            why = (
                f"{unit.name}: cannot lock {lock}: {exc.strerror or exc}; another agentd "
                "(of another home or host) using this state dir is not kept out"
            )
            if why != self._said:  # once, not at every session
                self.unfenced = self._said = why
        return None

    def release_dir(self) -> None:
        """Let the state dir's own lock go (the unit waits for a session that could not
        start); the file locks stay."""
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
