"""How ``agentctl``'s daemon verbs show results to people: tables, status rows,
event lines and transcript text (pure functions of their input); durations are
``agentd.times.span``."""

from __future__ import annotations

import json
import time
from typing import Any

from agentd.times import parse_iso, span


def table(rows: list[list[str]]) -> str:
    """Columns padded to their widest cell; the last column is not padded."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] for r in rows
    ).rstrip()


def status_rows(statuses: list[dict[str, Any]], now: float) -> str:
    rows = [["UNIT", "STATE", "PID", "SESSION", "UPTIME", "RESTARTS", "LAST"]]
    for s in statuses:
        last = s.get("last_reason") or "-"
        at = parse_iso(s.get("last_at"))
        if at is not None and s.get("last_reason"):
            last += f" ({span(now - at)} ago)"
        until = parse_iso(s.get("paused_until"))
        if until is not None:
            last += f"; paused until {until_text(until, now)}"
        if s.get("detail") and s["state"] in ("failed", "stalled", "stopped"):
            last += f": {s['detail']}"
        if s.get("invalid"):
            last = (
                problem_line(s["invalid"])
                if s["state"] == "invalid"
                else f"{last}; its file does not load (agentctl status --json)"
            )
        running = s.get("pid") is not None
        shown = "paused-by-signal" if s.get("process") == "stopped" else s["state"]
        rows.append(
            [
                s["unit"],
                shown,
                str(s["pid"]) if running else "-",
                str(s.get("session", 0)),
                span(s.get("uptime_s")) if running else "-",
                str(s.get("restarts", 0)),
                last,
            ]
        )
    return table(rows)


def until_text(until: float, now: float) -> str:
    """When a pause ends: its time of day within a day, else its date too."""
    shown = "%H:%M" if 0 <= until - now < 86400 else "%Y-%m-%d %H:%M"
    try:
        return time.strftime(shown, time.localtime(until))
    except (OverflowError, OSError, ValueError):
        return "much later"


def problem_line(problem: dict[str, Any]) -> str:
    """``units/ww.yaml:5: restart.exit_code: unknown key (did you mean exit_codes?)``."""
    where = str(problem.get("file")) + (f":{problem['line']}" if problem.get("line") else "")
    key = f"{problem['key']}: " if problem.get("key") else ""
    more = len(problem.get("problems") or []) - 1
    return f"{where}: {key}{problem.get('message')}" + (f" (and {more} more)" if more > 0 else "")


def format_event(e: dict[str, Any]) -> str:
    head = ("timestamp", "level", "event", "unit", "session")
    where = str(e.get("unit", "-")) + (f"#{e['session']}" if e.get("session") else "")
    rest = " ".join(
        f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
        for k, v in e.items()
        if k not in head
    )
    stamp = str(e.get("timestamp", ""))[:19].replace("T", " ")
    return f"{stamp}  {e.get('event', '?'):<22} {where:<14} {rest}".rstrip()
