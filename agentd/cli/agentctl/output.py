"""How ``agentctl``'s daemon verbs show results to people: tables, status rows,
event lines and transcript text (pure functions of their input); durations are
``agentd.times.span``."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from agentd.cli.colour import Painter
from agentd.spent import cost_cell, cost_text, tokens_cell, tokens_text, usage_line
from agentd.times import local, parse_iso, span

Paint = Callable[[int, int, str], str]  # (row, column, padded text) -> text; row 0: the head


def table(rows: list[list[str]], paint: Paint | None = None) -> str:
    """Columns padded to their widest cell; the last column is not padded. ``paint``
    colours a cell once padded (escape sequences take no width)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)] + [0]
    out = []
    for y, row in enumerate(rows):
        cells = [
            c.ljust(w) if x < len(row) - 1 else c
            for x, (c, w) in enumerate(zip(row, widths, strict=False))
        ]
        if paint is not None:
            cells = [paint(y, x, c) for x, c in enumerate(cells)]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out).rstrip()


def status_rows(statuses: list[dict[str, Any]], now: float, painter: Painter | None = None) -> str:
    rows = [["UNIT", "STATE", "PID", "SESSION", "UPTIME", "RESTARTS", "LAST"]]
    for s in statuses:
        last = s.get("last_reason") or "-"
        at = parse_iso(s.get("last_at"))
        if at is not None and s.get("last_reason"):
            last += f" ({span(now - at)} ago)"
        until = parse_iso(s.get("paused_until"))
        if until is not None:
            last += f"; paused until {until_text(until, now)}"
        if s.get("detail") and s["state"] in ("failed", "stalled", "stopped", "conflict"):
            last = s["detail"] if last == "-" else f"{last}: {s['detail']}"
        if s.get("verifying"):  # a completion is being checked
            last += f"; {check_said(s, now)}"
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
    if painter is None or not painter.on:
        return table(rows)
    states = [""] + [str(r[1]) for r in rows[1:]]
    return table(
        rows,
        lambda y, x, c: painter.bold(c) if y == 0 else painter.state(c, states[y]) if x == 1 else c,
    )


def until_text(until: float, now: float) -> str:
    """When a pause ends: its time of day within a day, else its date too."""
    shown = "%H:%M" if 0 <= until - now < 86400 else "%Y-%m-%d %H:%M"
    try:
        return time.strftime(shown, time.localtime(until))
    except (OverflowError, OSError, ValueError):
        return "much later"


def check_said(status: dict[str, Any], now: float, *, short: bool = False) -> str | None:
    """A unit's completion check in a few words, from its status (``verify``,
    ``verifying``); None when the unit has no check. ``short``: for a table cell."""
    checking = status.get("verifying")
    if checking:
        since = parse_iso(checking.get("since"))
        took = f" ({span(now - since)})" if since is not None and not short else ""
        return "checking" + ("" if short else f" `{checking.get('command')}`") + took
    if "verify" not in status:
        return None
    last = status["verify"]
    if not last:
        return "not run yet"
    at = parse_iso(last.get("at"))
    ago = f", {span(now - at)} ago" if at is not None else ""
    if short:
        return "passed" if last.get("ok") else f"failed ({last.get('said')})"
    how = "passed" if last.get("ok") else f"failed: it {last.get('said')}"
    by = " by hand" if last.get("manual") else f" after session {last.get('session')}"
    return f"{how} (`{last.get('command')}`{by}, {last.get('duration_s')}s{ago})"


def problem_line(problem: dict[str, Any]) -> str:
    """``units/ww.yaml:5: restart.exit_code: unknown key (did you mean exit_codes?)``."""
    where = str(problem.get("file")) + (f":{problem['line']}" if problem.get("line") else "")
    key = f"{problem['key']}: " if problem.get("key") else ""
    more = len(problem.get("problems") or []) - 1
    return f"{where}: {key}{problem.get('message')}" + (f" (and {more} more)" if more > 0 else "")


def format_event(e: dict[str, Any], painter: Painter | None = None) -> str:
    """One event as a line: local time, name, unit#session, the rest as key=value
    (coloured by its level: errors red, warnings yellow)."""
    head = ("timestamp", "level", "event", "unit", "session")
    where = str(e.get("unit", "-")) + (f"#{e['session']}" if e.get("session") else "")
    rest = " ".join(
        f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
        for k, v in e.items()
        if k not in head
    )
    name = f"{e.get('event', '?'):<22}"
    if painter is not None:
        name = painter.level(name, str(e.get("level") or "")) if e.get("level") else name
        if e.get("event") == "unit.state":
            name = painter.state(name, str(e.get("to") or ""))
    return f"{local(e.get('timestamp'))}  {name} {where:<14} {rest}".rstrip()


def history_rows(unit: str, sessions: list[dict[str, Any]], painter: Painter | None = None) -> str:
    """``agentctl history``: one row per session, its outcome coloured."""
    rows = [["SESSION", "STARTED", "DURATION", "OUTCOME", "REASON", "TOKENS", "COST", "BOOTSTRAP"]]
    for s in sessions:
        ended = s.get("reason") is not None
        rows.append(
            [
                str(s["session"]),
                local(s.get("started_at")),
                span(s.get("duration_s")) if s.get("duration_s") is not None else "-",
                (s.get("outcome") or ("-" if ended else "running"))
                + (" (checked)" if (s.get("verify") or {}).get("ok") else ""),  # its check passed
                (s.get("reason") or "-") + (f": {s['error']}" if s.get("error") else ""),
                tokens_cell(s.get("usage")),
                cost_cell(s.get("usage")),
                s.get("bootstrap") or "-",
            ]
        )
    if len(rows) == 1:
        return f"{unit}: no sessions yet"
    if painter is None or not painter.on:
        return table(rows)
    return table(
        rows,
        lambda y, x, c: (
            painter.bold(c) if y == 0 else painter.outcome(c, c.split()[0]) if x == 3 else c
        ),
    )


def details(d: dict[str, Any], now: float, painter: Painter) -> str:
    """``agentctl status UNIT``, as ``systemctl status`` shows a unit: what it is, where
    it is defined, what it runs, how it is doing and why, and its last output."""
    state = "paused-by-signal" if d.get("process") == "stopped" else str(d["state"])
    dot = painter.state("●", state)
    head = f"{dot} {painter.bold(d['unit'])}" + (
        f" - {d['description']}" if d.get("description") else ""
    )
    loaded = d.get("unit_file") or "-"
    extra = [f"preset {d['preset']}"] if d.get("preset") else []
    extra.append("enabled" if d.get("enabled") else "disabled")
    since = parse_iso(d.get("since"))
    active = painter.state(state)
    if since is not None:
        active += f" since {local(since)} ({span(now - since)} ago)"
    why = _why(d, state)
    facts: list[tuple[str, str]] = [
        ("Loaded", f"{loaded} ({'; '.join(extra)})"),
        ("Active", active + (f": {why}" if why else "")),
    ]
    if d.get("invalid"):
        facts.append(("Problem", painter.state(problem_line(d["invalid"]), "invalid")))
    if d.get("command") is not None:
        facts.append(("Command", shell_words(d["command"])))
    for key, label in (("workdir", "Workdir"), ("state_dir", "State dir")):
        if d.get(key):
            facts.append((label, str(d[key])))
    if d.get("worktree"):
        facts.append(("Worktree", f"{d['worktree']['path']} (branch {d['worktree']['branch']})"))
    if d.get("pid") is not None:
        n = int(d.get("processes") or 0)
        tree = f" ({n} process{'es' if n != 1 else ''} in its tree)" if n else ""
        facts.append(("Main PID", f"{d['pid']}{tree}, up {span(d.get('uptime_s'))}"))
    session = str(d.get("session", 0))
    if d.get("session_reason") and d.get("session"):
        session += f" (started by {d['session_reason']})"
    facts.append(("Session", session))
    facts.append(("Restarts", str(d.get("restarts", 0))))
    last = d.get("last_reason")
    if last:
        at = parse_iso(d.get("last_at"))
        facts.append(("Last end", last + (f" ({span(now - at)} ago)" if at is not None else "")))
    if d.get("usage") is not None:
        which = "Usage" if d.get("pid") is None else "Usage so far"
        facts.append((which, usage_line(d["usage"])))
    check = check_said(d, now)
    if check is not None:  # the completion check (complete.verify)
        facts.append(("Check", check))
    if d.get("today") is not None:
        facts.append(("Today", _today(d["today"], d.get("budget") or {})))
    width = max(len(label) for label, _ in facts)
    out = [head, *(f"  {label:>{width}}: {value}" for label, value in facts)]
    lines = d.get("last_lines") or []
    if lines:
        said = "The last line" if len(lines) == 1 else f"The last {len(lines)} lines"
        out += ["", painter.dim(f"{said} (agentctl logs {d['unit']}):")]
        out += [f"  {line}" for line in lines]
    return "\n".join(out)


def _why(d: dict[str, Any], state: str) -> str:
    """What a state that is not running says more: the reason, the detail, the pause."""
    parts = []
    if state in (
        "failed",
        "stalled",
        "backoff",
        "paused",
        "done",
        "stopped",
        "interrupted",
    ) and d.get("last_reason"):
        parts.append(str(d["last_reason"]))
    if d.get("detail") and state not in ("running", "starting", "stopping"):
        parts.append(str(d["detail"]))
    until = parse_iso(d.get("paused_until"))
    if until is not None:
        parts.append(f"until {local(until)}")
    return "; ".join(parts)


def _today(today: dict[str, Any], budget: dict[str, Any]) -> str:
    def part(used: str, limit: object, what: str) -> str:
        return f"{used} of {limit} {what}" if limit else f"{used} {what}"

    runtime = budget.get("max_runtime_per_day")
    guessed = int(today.get("estimated_sessions") or 0)  # no usage records: the estimate
    return ", ".join(
        [
            part(
                str(today.get("sessions", 0)),
                budget.get("max_sessions_per_day"),
                "session" if today.get("sessions") == 1 else "sessions",
            ),
            part(span(today.get("runtime_s")), span(runtime) if runtime else None, "running"),
            part(
                f"{int(today.get('output_tokens', 0)):,}",
                budget.get("max_output_tokens_per_day"),
                "output tokens",
            ),
            part(
                ("~" if guessed else "") + tokens_text(float(today.get("tokens") or 0)),
                tokens_text(budget["max_tokens_per_day"])
                if budget.get("max_tokens_per_day")
                else None,
                f"tokens ({guessed} of the sessions estimated from the screen)"
                if guessed
                else "tokens",
            ),
            part(
                cost_text(float(today.get("cost_usd") or 0)),
                cost_text(budget["max_cost_per_day"]) if budget.get("max_cost_per_day") else None,
                "spent",
            ),
        ]
    )


def shell_words(argv: list[str]) -> str:
    """``argv`` quoted as a shell would need it (``shlex.join``)."""
    import shlex

    return shlex.join(argv)
