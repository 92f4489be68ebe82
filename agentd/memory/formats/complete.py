"""The mission's completion mark: ``STATE_DIR/complete.json``.

``agentctl state complete "SUMMARY"`` writes it: the mission is done. When a
session ends and the mark is there, agentd ends the unit ``done`` (reason
``complete``) whatever the exit code, so a CLI that always exits 0, or 143
when ended by a signal, can still finish. ``agentctl state mission`` (a new
mission) removes it. One file for every layout, so the supervisor needs no
layout to read it::

    {"summary": "...", "at": "2026-12-01 14:32", "session": 12}
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

from agentd import fileio
from agentd.memory import statedir

NAME = "complete.json"
MAX_BYTES = 64 << 10


class Completion(NamedTuple):
    summary: str
    at: str  # YYYY-MM-DD HH:MM, local time
    session: int | None = None


def read(state_dir: Path) -> Completion | None:
    """The completion mark of ``state_dir``; None when there is none (or it is unreadable)."""
    try:
        raw, _ = statedir.read_head(state_dir / NAME, MAX_BYTES)
        data = json.loads(raw)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("summary"), str):
        return None
    session = data.get("session")
    return Completion(
        data["summary"], str(data.get("at") or ""), session if isinstance(session, int) else None
    )


def mark(state_dir: Path, summary: str, at: str) -> Path:
    """Write the mark (the caller holds the state dir lock)."""
    value = os.environ.get("AGENTD_SESSION", "")
    record = {"summary": summary, "at": at, "session": int(value) if value.isdigit() else None}
    path = state_dir / NAME
    fileio.write_atomic(path, json.dumps(record, ensure_ascii=False, indent=2) + "\n")
    return path


def clear(state_dir: Path) -> bool:
    """Remove the mark; whether there was one."""
    try:
        (state_dir / NAME).unlink()
    except FileNotFoundError:
        return False
    return True
