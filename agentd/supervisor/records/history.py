"""A unit's session history on disk: ``logs/UNIT/history.jsonl``.

One JSON line per event of a session's life (``start`` and ``end``), appended
and fsync'd at once, so session numbers and history survive a daemon restart,
a ``kill -9`` or a node lost with its pod (the last ``start`` without an
``end`` shows what was running). A record appended with ``durable=False``
(a session's ``end``, followed within milliseconds by its ``outcome``) is
fsync'd with the next one, or by ``sync``: written at once all the same, so a
``kill -9`` of agentd loses nothing; only a node lost in between would.

Past ``max_bytes`` (the unit's ``logs.max_bytes``) the older half of the file
moves to ``history.jsonl.1`` (replacing the one before) and the newer half
stays: the recent sessions, their numbers and a pause in force are never cut.

A record that cannot be written (a full disk) is lost and counted by
``health`` (``agentd.events``), never raised: the session goes on. A history
that cannot be read reads as empty.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from agentd.events import WriteHealth
from agentd.fileio import fsync_dir, write_atomic

TAIL_BYTES = 256 * 1024


@dataclass
class History:
    path: Path
    max_bytes: int = 0  # 0: never rotated
    health: WriteHealth | None = None  # None: a failed write raises
    unsynced: bool = False  # a record was written and not fsync'd yet

    def append(self, record: dict[str, Any], *, durable: bool = True) -> None:
        try:
            self._append(record, durable=durable)
        except OSError as exc:
            self.failed(exc)
            return
        if self.health is not None:
            self.health.ok(f"history:{self.path.parent.name}")

    def sync(self) -> None:
        """Make what was appended without ``durable`` durable now (a failure is
        counted by ``health``, as an append's)."""
        failed = self.fsync()
        if failed is not None:
            self.failed(failed)

    def fsync(self) -> OSError | None:
        """``sync`` for any thread: the error, if it failed, is returned, not told."""
        if not self.unsynced:
            return None
        self.unsynced = False  # first: a record appended meanwhile sets it again
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            return exc
        return None

    def failed(self, exc: OSError) -> None:
        """A write of the history failed: counted by ``health`` (raised without it)."""
        if self.health is None:
            raise exc
        self.health.failed(f"history:{self.path.parent.name}", self.path, exc)

    def _append(self, record: dict[str, Any], *, durable: bool) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        line = json.dumps(record, ensure_ascii=False) + "\n"
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            end = os.fstat(fd).st_size
            if end and os.pread(fd, 1, end - 1) != b"\n":
                line = "\n" + line  # the last record was cut (a full disk): end it first
            os.write(fd, line.encode("utf-8"))
            if durable:  # before the step it records goes on (hard evictions)
                os.fsync(fd)
            self.unsynced = not durable
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if not end:
            fsync_dir(self.path.parent)  # a new file: its name must be durable too
        if self.max_bytes and size > self.max_bytes:
            self._rotate()

    def _rotate(self) -> None:
        """The older half to ``history.jsonl.1``, the newer half stays (whole lines)."""
        data = self.path.read_bytes()
        cut = data.find(b"\n", len(data) // 2) + 1
        if cut <= 0 or cut >= len(data):
            return  # one huge line: nothing sensible to split
        write_atomic(self.path.with_name(self.path.name + ".1"), data[:cut], mode=0o600)
        write_atomic(self.path, data[cut:], mode=0o600)

    def recent(self, limit: int = 1000) -> list[dict[str, Any]]:
        """The newest records (read from the end of the file), oldest first."""
        try:
            with self.path.open("rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(0, size - TAIL_BYTES))
                data = f.read()
        except OSError:  # missing, or under a file of that name: nothing recorded
            return []
        lines = data.split(b"\n")
        if len(data) < size:
            lines = lines[1:]  # the first line may be cut
        out: list[dict[str, Any]] = []
        for raw in lines:
            if raw.strip():
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue  # a torn last line after a crash is skipped, not fatal
                if isinstance(record, dict):  # a damaged or hand-edited line: skipped too
                    out.append(record)
        return out[-limit:]

    def last_session(self) -> int:
        return max((int(r.get("session", 0)) for r in self.recent()), default=0)


def recent_events_of(events_file: Path, unit: str | None, lines: int) -> list[dict[str, Any]]:
    """The last ``lines`` events of ``events_file`` (``logs/agentd.jsonl``), of ``unit``
    only when named."""
    if not lines:
        return []
    found = History(events_file).recent(limit=1_000_000)
    if unit is not None:
        found = [e for e in found if e.get("unit") == unit]
    return found[-lines:]


def sessions(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """History records (start, end, outcome per session) merged into one row per session."""
    rows: dict[int, dict[str, Any]] = {}
    for rec in records:
        with contextlib.suppress(TypeError, ValueError):
            number = int(rec.get("session", 0))
            row = rows.setdefault(
                number,
                {
                    "session": number,
                    "started_at": None,
                    "duration_s": None,
                    "outcome": None,
                    "reason": None,
                },
            )
            kind = rec.get("kind")
            if kind == "start":
                row.update(
                    started_at=rec.get("at"),
                    started_by=rec.get("reason"),
                    pid=rec.get("pid"),
                    bootstrap=rec.get("bootstrap"),
                )
            elif kind == "end":
                row.update(
                    ended_at=rec.get("at"),
                    reason=rec.get("reason"),
                    duration_s=rec.get("duration_s"),
                    code=rec.get("code"),
                    signal=rec.get("signal"),
                )
                if rec.get("error"):
                    row["error"] = rec["error"]
                if isinstance(rec.get("usage"), dict):  # what it spent (agentd.supervisor.usage)
                    row["usage"] = rec["usage"]
            elif kind == "verify" and not rec.get("manual"):  # the check of its completion
                row["verify"] = {
                    k: rec.get(k) for k in ("ok", "command", "exit_code", "said", "duration_s")
                }
            elif kind == "outcome":
                row.update(outcome=rec.get("outcome"), detail=rec.get("detail"))
                if rec.get("reset_at"):  # usage-limited / budget: when it may go on
                    row["reset_at"] = rec["reset_at"]
    return [rows[n] for n in sorted(rows)]


def last_end(records: list[dict[str, Any]]) -> tuple[str | None, float | None]:
    """How the last session ended: its reason and wall time, as far as known."""
    end = next((r for r in reversed(records) if r.get("kind") == "end"), None)
    if end is None:
        return None, None
    try:
        return end.get("reason"), datetime.fromisoformat(str(end.get("at"))).timestamp()
    except (TypeError, ValueError):
        return end.get("reason"), None


def last_usage(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What the last ended session spent, as its ``end`` record says (None: not recorded)."""
    end = next((r for r in reversed(records) if r.get("kind") == "end"), None)
    usage = end.get("usage") if end is not None else None
    return usage if isinstance(usage, dict) else None


def last_verify(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last completion check the history holds (``kind: verify``), as status shows it."""
    found = next((r for r in reversed(records) if r.get("kind") == "verify"), None)
    if found is None:
        return None
    keys = ("ok", "command", "exit_code", "said", "duration_s", "session", "manual", "at")
    return {key: found.get(key) for key in keys} | {"manual": bool(found.get("manual"))}


def restored_pause(records: list[dict[str, Any]]) -> float | None:
    """Until when the last session's outcome paused the unit, if it did (wall time)."""
    last = records[-1] if records else {}
    if last.get("kind") != "outcome" or last.get("next") != "paused" or not last.get("reset_at"):
        return None
    with contextlib.suppress(ValueError):
        return datetime.fromisoformat(str(last["reset_at"])).timestamp()  # "Z" too (3.11)
    return None
