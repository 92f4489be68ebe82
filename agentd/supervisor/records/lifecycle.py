"""What a unit's life keeps across daemon restarts and reboots: ``lifecycle/UNIT.json``.

::

    {"enabled": true, "state": "done", "reason": "exit:0", "detail": "",
     "since": "2026-11-30T14:32:00Z", "restarts": 7}

- ``enabled`` (``agentctl enable|disable``; null: the unit's ``autostart``):
  an enabled unit starts when the daemon starts.
- ``state``: a state only a person's ``start`` leaves. Set when a person
  stops the unit (or a sentinel does) and when it ends ``done``, ``failed``
  or ``stalled``; cleared when it starts. A daemon that shuts down, or a unit
  file that is removed, stops the unit without remembering it: what ran
  before a restart runs after it. ``interrupted`` (a signal stopped ``agentd
  run``: an eviction, a drain) is kept too, but means the same to the next
  start as nothing kept: carry on.
- ``restarts``: counted across daemon restarts, as session numbers are.

Written atomically (temp file, fsync, rename, fsync of the dir) and only when
something changed: a pod evicted with no grace at all finds what the last step
wrote. A change of state or enablement is written at once; the restart count
(written at each session's start) at once too, but on a thread beside the
event loop, not on the way to the next session: a durable rename costs a
millisecond or more (tens on a busy disk). One write at a time, each of the
values as they are then: the last one written is the newest.
A missing, unreadable or torn file reads as "nothing remembered".
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from agentd.events import WriteHealth
from agentd.fileio import write_atomic
from agentd.supervisor.states import State
from agentd.times import iso

REMEMBERED = frozenset({State.STOPPED, State.DONE, State.FAILED, State.STALLED, State.INTERRUPTED})


@dataclass(frozen=True)
class Remembered:
    enabled: bool | None = None
    state: State | None = None
    reason: str = ""
    detail: str = ""
    since: float | None = None  # wall time of the state change
    restarts: int = 0


class Lifecycle:
    """One unit's ``lifecycle/UNIT.json``: read once, written on change."""

    def __init__(self, path: Path, health: WriteHealth | None = None) -> None:
        self.path = path
        self.value = read(path)
        self._health = health
        self._later = False  # a restart count to write, on a thread beside the loop
        self._writing = threading.Lock()  # one write of the file at a time

    def keep(self, **changes: Any) -> None:
        """``update``, a failure counted and reported (``health``), not raised: the
        state change itself has happened."""
        what = f"lifecycle:{self.path.stem}"
        try:
            self.update(**changes)
        except OSError as exc:
            if self._health is None:
                raise
            self._health.failed(what, self.path, exc)
        else:
            if self._health is not None:
                self._health.ok(what)

    def update(self, **changes: Any) -> None:
        """Change the remembered values; OSError if they cannot be written."""
        old, new = self.value, dataclasses.replace(self.value, **changes)
        if new == old:
            return
        self.value = new
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if (new.state, new.enabled) != (old.state, old.enabled):
            self._later = False  # what a pending write would have written is in this one
            self._write()
            return
        # only the restart count, at each session's start: off the respawn's way
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._write()
            return
        if not self._later:
            self._later = True
            loop.run_in_executor(None, self._write_later, loop)

    def _write_later(self, loop: asyncio.AbstractEventLoop) -> None:
        """On a thread: the values as they are now, unless a write on the loop took them."""
        if not self._later:
            return
        self._later = False
        try:
            self._write()
        except OSError as exc:
            if self._health is not None:
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody to tell
                    loop.call_soon_threadsafe(
                        self._health.failed, f"lifecycle:{self.path.stem}", self.path, exc
                    )

    def _write(self) -> None:
        """The values as they are now, fsync'd (the restart count too: an eviction with
        no grace finds it)."""
        with self._writing:
            text = json.dumps(_to_json(self.value), indent=1) + "\n"
            write_atomic(self.path, text, mode=0o600)


def read(path: Path) -> Remembered:
    """What ``path`` remembers; nothing when it is missing or cannot be understood."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Remembered()
    if not isinstance(data, dict):
        return Remembered()
    out = Remembered()
    enabled, restarts = data.get("enabled"), data.get("restarts")
    if isinstance(enabled, bool):
        out = dataclasses.replace(out, enabled=enabled)
    if isinstance(restarts, int) and not isinstance(restarts, bool) and restarts >= 0:
        out = dataclasses.replace(out, restarts=restarts)
    with contextlib.suppress(ValueError, TypeError):
        state = State(str(data.get("state")))
        if state in REMEMBERED:
            since = datetime.fromisoformat(str(data.get("since")).replace("Z", "+00:00"))
            out = dataclasses.replace(
                out,
                state=state,
                since=since.timestamp(),
                reason=str(data.get("reason") or ""),
                detail=str(data.get("detail") or ""),
            )
    return out


def _to_json(value: Remembered) -> dict[str, Any]:
    return {
        "enabled": value.enabled,
        "state": str(value.state) if value.state else None,
        "reason": value.reason or None,
        "detail": value.detail or None,
        "since": iso(value.since) if value.since is not None else None,
        "restarts": value.restarts,
    }
