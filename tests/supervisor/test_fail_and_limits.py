"""A `fail` sentinel fails the unit with what it saw; a limit with a reset time
beats one without when both come in the same output; a pause says until when."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from agentd.config.unit import Unit
from agentd.supervisor.policy import RestartPolicy, SessionEnd
from agentd.supervisor.triggers import Trigger, Triggers
from agentd.terminal.rules import Hit, Rule


def _unit(**more: Any) -> Unit:
    return Unit.model_validate({"name": "u", "command": ["x"], "workdir": "/", **more})


def test_a_fail_sentinel_fails_the_unit_at_once_with_its_line() -> None:
    unit = _unit()
    policy = RestartPolicy(unit.restart, unit.limits)
    end = SessionEnd(
        1,
        0.0,
        5.0,
        trigger="sentinel:missing",
        action="fail",
        detail="/x/msg: file not found error",
    )
    decision = policy.decide(end, [], 5.0)
    assert decision.next == "failed"
    assert decision.reason == "sentinel:missing"
    assert decision.detail == "/x/msg: file not found error"
    assert decision.failure


def _fired(unit: Unit, hits: list[Hit]) -> tuple[Trigger | None, list[dict[str, Any]]]:
    emitted: list[dict[str, Any]] = []

    async def main() -> Trigger | None:
        triggers = Triggers(
            unit,
            emit=lambda event, **f: emitted.append({"event": event, **f}),
            wall=lambda: 1_796_000_000.0,  # 2026-12-01T... UTC
            on_prompt=lambda: None,
        )
        triggers.on_hits(hits)
        return triggers.trigger

    return asyncio.run(main()), emitted


def test_a_fail_sentinel_hit_fires_a_fail_trigger_with_the_line() -> None:
    unit = _unit(
        sentinels=[{"name": "missing", "match": "file not found error$", "action": "fail"}]
    )
    rule = Rule("missing", re.compile("file not found error$"), "fail")
    trigger, _ = _fired(unit, [Hit(rule, "  /x/msg: file not found error  ", {})])
    assert trigger is not None and trigger.action == "fail"
    assert trigger.detail == "/x/msg: file not found error"
    assert str(trigger.reason) == "sentinel:missing"


def test_a_reset_time_in_the_same_output_wins_over_a_limit_without_one() -> None:
    """Codex wraps `You’ve hit your usage limit. ... or try again at 3:45 PM.` onto two
    rows; both are judged at the end of one frame, the first one first."""
    unit = Unit.model_validate({"name": "u", "preset": "codex", "workdir": "/"})
    by_name = {s.name: s for s in unit.sentinels}
    no_time = Rule("usage-limit", by_name["usage-limit"].pattern, "pause")
    timed = Rule("usage-limit-reset", by_name["usage-limit-reset"].pattern, "pause")
    hits = [
        Hit(no_time, "■ You’ve hit your usage limit. Upgrade to Pro (https://x), visit", {}),
        Hit(timed, "usage to purchase more credits or try again at 3:45 PM.", {"until": "3:45 PM"}),
    ]
    trigger, emitted = _fired(unit, hits)
    assert trigger is not None and str(trigger.reason) == "sentinel:usage-limit-reset"
    first = next(e for e in emitted if e["event"] == "session.sentinel")
    assert first["name"] == "usage-limit-reset" and first["until"].endswith("15:45:00Z")
