"""What each control command does (SPEC 9)."""

from __future__ import annotations

import contextlib
from typing import Any


def sessions(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """History records (start, end, outcome per session) merged into one row per session."""
    rows: dict[int, dict[str, Any]] = {}
    for rec in records:
        with contextlib.suppress(TypeError, ValueError):
            number = int(rec.get("session", 0))
            row = rows.setdefault(number, {"session": number, "started_at": None,
                                           "duration_s": None, "outcome": None, "reason": None})
            kind = rec.get("kind")
            if kind == "start":
                row.update(started_at=rec.get("at"), started_by=rec.get("reason"),
                           pid=rec.get("pid"), bootstrap=rec.get("bootstrap"))
            elif kind == "end":
                row.update(ended_at=rec.get("at"), reason=rec.get("reason"),
                           duration_s=rec.get("duration_s"), code=rec.get("code"),
                           signal=rec.get("signal"))
                if rec.get("error"):
                    row["error"] = rec["error"]
            elif kind == "outcome":
                row.update(outcome=rec.get("outcome"), detail=rec.get("detail"))
                if rec.get("reset_at"):  # usage-limited / budget: when it may go on
                    row["reset_at"] = rec["reset_at"]
    return [rows[n] for n in sorted(rows)]
