"""The last screen of each session, kept with its history: ``logs/UNIT/screens/N.json``.

When a session ends its screen is drawn once (``agentd.session.screen``) and
written here, its secrets hidden as in the transcript, with how the session
ended; the newest ``KEEP`` are kept. So ``agentctl screen`` and the dashboard
still show why a unit failed after the daemon restarted (the screen of a
running session lives only in memory), and can tell a unit that never ran.

A screen that cannot be written (a full disk) is lost and counted by
``health``, never raised; one that cannot be read is None.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentd.events import WriteHealth
from agentd.fileio import write_atomic
from agentd.session.screen import Drawn

KEEP = 20  # screens per unit (a few KiB each: rows of text, no escape sequences)
_KEPT = re.compile(r"([0-9]+)\.json")


def folder(logs_dir: Path) -> Path:
    return logs_dir / "screens"


def keep(
    logs_dir: Path, shown: dict[str, Any], *, health: WriteHealth | None = None, keep: int = KEEP
) -> None:
    """Write ``shown`` (``Drawn.as_json()`` and ``reason``, ``ended_at``) as the screen
    of its session; drop those older than the newest ``keep``."""
    number = int(shown["session"])
    path = folder(logs_dir) / f"{number}.json"
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(path, json.dumps(shown, ensure_ascii=False), mode=0o600)
        for old in path.parent.iterdir():
            found = _KEPT.fullmatch(old.name)
            if found and int(found.group(1)) <= number - keep:
                with contextlib.suppress(FileNotFoundError):
                    old.unlink()
    except OSError as exc:
        if health is None:
            raise
        health.failed(f"screen:{logs_dir.name}", path, exc)
        return
    if health is not None:
        health.ok(f"screen:{logs_dir.name}")


def last(logs_dir: Path) -> dict[str, Any] | None:
    """The newest kept screen, or None (none kept, or unreadable)."""
    try:
        numbers = [
            int(found.group(1))
            for p in folder(logs_dir).iterdir()
            if (found := _KEPT.fullmatch(p.name))
        ]
    except OSError:
        return None
    for number in sorted(numbers, reverse=True):
        shown = of_session(logs_dir, number)
        if shown is not None:
            return shown
    return None


def of_session(logs_dir: Path, number: int) -> dict[str, Any] | None:
    """Session ``number``'s kept screen, or None."""
    try:
        data = json.loads((folder(logs_dir) / f"{number}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("rows"), list) else None


@dataclass(frozen=True)
class KeptScreen:
    """What to draw a unit's screen from when no session of it ran in this agentd: the
    newest kept screen (``last_session``: the history's newest session number)."""

    logs_dir: Path
    cols: int
    rows: int
    last_session: int

    def draw(self, *, redraw: bool = False) -> Drawn:
        """The kept screen (reads a file: off the loop); blank, ``ran`` false, when the
        unit never ran; blank with ``kept`` false when its screen was not kept."""
        shown = last(self.logs_dir)
        if shown is None:
            about: dict[str, Any] = {
                "running": False,
                "ran": self.last_session > 0,
                "kept": False,
            }
            return Drawn(self.last_session, self.cols, [], (0, 0), about=about)
        cursor = shown.get("cursor") or [0, 0]
        about = {
            "running": False,
            "ran": True,
            "kept": True,
            "reason": shown.get("reason"),
            "detail": shown.get("detail"),
            "ended_at": shown.get("ended_at"),
        }
        return Drawn(
            int(shown.get("session", 0)),
            int(shown.get("cols", self.cols)),
            [str(row) for row in shown["rows"]],
            (int(cursor[0]), int(cursor[1])),
            about=about,
        )
