"""``run/sessions/UNIT.json``: the session a unit runs now, for whoever must end it.

Written before the agent may run (its exec waits for it) and removed once
its tree is gone, so an agentd killed with ``kill -9`` leaves a record of
every session it ran (not fsync'd: a reboot ends the sessions too): its
marker, its cgroup (``agentd.process.cgroup``, when there is one) and how to
stop it (signal, grace). The next agentd ends those sessions whether or not
their units load again (a unit file deleted or broken in between): see
``agentd.supervisor.records.reclaim``.

A record is obeyed only as far as it names this unit's own: a marker of its
unit and session, the cgroup agentd makes for that marker (``cgroup.recorded``).
A record that cannot be written (a full disk) is counted by ``health`` as
``run:UNIT`` and the session starts anyway: the history's ``start`` record
(which carries the marker too) is the fallback.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from agentd.events import WriteHealth
from agentd.fileio import write_atomic
from agentd.process import cgroup as cgroups


@dataclass(frozen=True)
class Recorded:
    unit: str
    session: int
    marker: str
    cgroup: str | None  # the session's own cgroup (v2), if it had one
    signal: int  # the unit's stop signal and grace when the session started
    grace: float

    @property
    def cgroup_path(self) -> Path | None:
        """The session's cgroup, if the record names agentd's own for its marker (a
        record is a file anyone of this uid may have written: ``cgroup.recorded``)."""
        return cgroups.recorded(self.cgroup, self.marker)


class SessionRecords:
    """The directory ``run/sessions``: one record per unit with a live session."""

    def __init__(self, directory: Path, health: WriteHealth | None = None) -> None:
        self.directory = directory
        self._health = health

    def begin(self, record: Recorded) -> None:
        """Record the session about to be spawned (a failure is counted, not raised)."""
        what = f"run:{record.unit}"
        path = self.directory / f"{record.unit}.json"
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_atomic(path, json.dumps(asdict(record)) + "\n", mode=0o600, durable=False)
        except OSError as exc:
            if self._health is not None:
                self._health.failed(what, path, exc)
            return
        if self._health is not None:
            self._health.ok(what)

    def finish(self, unit: str, cgroup: Path | None) -> None:
        """The session's tree is gone: its cgroup and its record go too."""
        cgroups.remove(cgroup)
        with contextlib.suppress(OSError):
            (self.directory / f"{unit}.json").unlink()

    def read(self, unit: str) -> Recorded | None:
        return _load(self.directory / f"{unit}.json")

    def all(self) -> list[Recorded]:
        """Every session recorded (unreadable records skipped)."""
        try:
            paths = sorted(self.directory.glob("*.json"))
        except OSError:
            return []
        return [found for path in paths if (found := _load(path)) is not None]


# The marker of a unit's completion check names ``UNIT.verify`` (``agentd.supervisor.
# verify.check_marker``): a record's marker may name its unit or that.
VERIFY_SUFFIX = ".verify"
OWN_SUFFIXES = ("", VERIFY_SUFFIX)


def checked(record: Recorded) -> Recorded | None:
    """``record`` if its marker is one agentd makes for its unit (or its completion
    check) and session (``agentd.process.tree.session_env_marker``): it picks the
    processes to end."""
    prefix = os.environ.get("AGENTD_MARKER_PREFIX", "")
    owners = "|".join(re.escape(f"{record.unit}{suffix}") for suffix in OWN_SUFFIXES)
    shape = f"{re.escape(prefix)}(?:{owners}){re.escape(f':{record.session}:')}[0-9a-f]{{12}}"
    return record if re.fullmatch(shape, record.marker) else None


def _load(path: Path) -> Recorded | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return checked(
            Recorded(
                unit=str(data["unit"]),
                session=int(data["session"]),
                marker=str(data["marker"]),
                cgroup=data.get("cgroup") or None,
                signal=int(data["signal"]),
                grace=float(data["grace"]),
            )
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
