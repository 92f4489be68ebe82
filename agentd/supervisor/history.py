"""A unit's session history on disk: ``logs/UNIT/history.jsonl``.

One JSON line per event of a session's life (``start`` and ``end``), appended
and flushed at once, so session numbers and history survive a daemon restart
or a ``kill -9`` (the last ``start`` without an ``end`` shows what was running).

Past ``max_bytes`` (the unit's ``logs.max_bytes``) the older half of the file
moves to ``history.jsonl.1`` (replacing the one before) and the newer half
stays: the recent sessions, their numbers and a pause in force are never cut.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentd.memory.statedir import write_atomic

TAIL_BYTES = 256 * 1024


@dataclass
class History:
    path: Path
    max_bytes: int = 0  # 0: never rotated

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        line = json.dumps(record, ensure_ascii=False) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
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
        except FileNotFoundError:
            return []
        lines = data.split(b"\n")
        if len(data) < size:
            lines = lines[1:]  # the first line may be cut
        out: list[dict[str, Any]] = []
        for raw in lines:
            if raw.strip():
                try:
                    out.append(json.loads(raw))
                except ValueError:
                    continue  # a torn last line after a crash is skipped, not fatal
        return out[-limit:]

    def last_session(self) -> int:
        return max((int(r.get("session", 0)) for r in self.recent()), default=0)
