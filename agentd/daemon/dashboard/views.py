"""What the dashboard's pages show of a unit, in words: pure functions of a
unit's status (``Supervisor.status``), today's usage and its budget."""

from __future__ import annotations

import time
from typing import Any

from agentd.config.sections import Budget
from agentd.spent import cost_text, usage_line
from agentd.supervisor.budget import Usage
from agentd.times import parse_iso, span


def summary(status: dict[str, Any], usage: Usage, budget: Budget, now: float) -> dict[str, Any]:
    """``status`` with what a person reads: uptime, the last reason and when, the
    pause, today's budget use, what the running or last session spent."""
    running = status.get("pid") is not None
    last = status.get("last_reason") or "-"
    at = parse_iso(status.get("last_at"))
    if at is not None and status.get("last_reason"):
        last += f" ({span(now - at)} ago)"
    problem = status.get("invalid")
    if problem:  # its file does not load: what is wrong, where (as `agentctl status` says)
        where = str(problem.get("file")) + (f":{problem['line']}" if problem.get("line") else "")
        key = f"{problem['key']}: " if problem.get("key") else ""
        last = f"{where}: {key}{problem.get('message') or problem.get('error')}"
    until = parse_iso(status.get("paused_until"))
    since = parse_iso(status.get("since"))
    return {
        **status,
        "running": running,
        "uptime": span(status.get("uptime_s")) if running else "-",
        "last": last,
        "paused": clock(until) if until is not None else None,
        "since_text": f"{clock(since)} ({span(now - since)} ago)" if since else "-",
        "budget": budget_used(usage, budget),
        "spent": usage_line(status["usage"]) if status.get("usage") else None,
        "check": check(status, now),  # None: the unit has no completion check
    }


def check(status: dict[str, Any], now: float) -> str | None:
    """The unit's completion check in words: running, passed or failed, and when;
    None when the unit has none."""
    running = status.get("verifying")
    if running:
        since = parse_iso(running.get("since"))
        took = f" ({span(now - since)})" if since is not None else ""
        return f"checking `{running.get('command')}`{took}"
    if "verify" not in status:
        return None
    last = status["verify"]
    if not last:
        return "not run yet"
    at = parse_iso(last.get("at"))
    ago = f", {span(now - at)} ago" if at is not None else ""
    how = "passed" if last.get("ok") else f"failed: it {last.get('said')}"
    by = " by hand" if last.get("manual") else f" after session {last.get('session')}"
    return f"{how} (`{last.get('command')}`{by}, {last.get('duration_s')}s{ago})"


def budget_used(usage: Usage, budget: Budget) -> str:
    """Today's sessions, runtime, tokens and cost, each of its daily limit when set
    (output tokens only when they have a limit of their own; ``~`` and a note when
    some sessions had no usage records, only the screen estimate)."""

    def part(used: str, limit: str | None, what: str) -> str:
        return f"{used}/{limit} {what}" if limit else f"{used} {what}"

    return ", ".join(
        [
            part(
                str(usage.sessions),
                str(budget.max_sessions_per_day or "") or None,
                "session"
                if usage.sessions == 1 and not budget.max_sessions_per_day
                else "sessions",
            ),
            part(
                span(usage.runtime_s),
                span(budget.max_runtime_per_day) if budget.max_runtime_per_day else None,
                "run",
            ),
            *(
                [
                    part(
                        f"{usage.tokens:,}",
                        f"{budget.max_output_tokens_per_day:,}",
                        "output tokens",
                    )
                ]
                if budget.max_output_tokens_per_day
                else []
            ),
            part(
                ("~" if usage.estimated else "") + f"{usage.all_tokens:,}",
                f"{budget.max_tokens_per_day:,}" if budget.max_tokens_per_day else None,
                f"tokens ({usage.estimated} of the sessions estimated from the screen)"
                if usage.estimated
                else "tokens",
            ),
            *(
                [
                    part(
                        cost_text(usage.cost_usd),
                        cost_text(budget.max_cost_per_day) if budget.max_cost_per_day else None,
                        "spent",
                    )
                ]
                if usage.cost_usd or budget.max_cost_per_day
                else []
            ),
        ]
    )


def clock(epoch: float) -> str:
    """A moment in local time, to the second."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


def when(stamp: str | None) -> str:
    """An ISO stamp of the history (UTC) in local time; ``-`` when there is none."""
    at = parse_iso(stamp)
    return clock(at) if at is not None else "-"
