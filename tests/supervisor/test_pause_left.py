"""How far ahead a pause's reset time is, measured when the CLI says it (issue 27): a
session that takes long to end (a stop grace, a slow tree) must not turn a reset still
ahead into a stale one, which would be a braked restart instead of a pause."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from agentd.config.sections import Limits, RestartSpec
from agentd.config.unitfile import load_unit
from agentd.supervisor.policy import RestartPolicy, SessionEnd
from agentd.supervisor.triggers import Trigger, Triggers
from agentd.terminal.rules import Hit, Rule
from tests.support import fake, write_unit


class Wall:
    """A wall clock that moves only when told."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def fired(home: Path, line: str, wall: Wall) -> Trigger:
    unit = load_unit(write_unit(home, "p", {"command": fake("wait")}))
    rule = Rule("limit", re.compile(r"limit (?P<until>\d{10})"), action="pause")
    match = rule.pattern.search(line)
    assert match is not None

    async def main() -> Trigger:
        triggers = Triggers(unit, emit=lambda *a, **k: None, wall=wall, on_prompt=lambda: None)
        triggers.on_hits([Hit(rule, line, {"until": match["until"]})])
        wall.now += 30.0  # the session takes 30 s to end after the sentinel
        trigger = triggers.trigger
        assert trigger is not None
        return trigger

    return asyncio.run(main())


def test_a_reset_ahead_when_said_stays_a_pause_after_a_slow_ending(home: Path) -> None:
    wall = Wall(1_800_000_000.0)
    trigger = fired(home, "usage limit 1800000010", wall)  # 10 s ahead when printed
    assert (trigger.action, trigger.pause_until, trigger.pause_left) == (
        "pause",
        1_800_000_010.0,
        10.0,
    )
    end = SessionEnd(
        session=1,
        started_at=0.0,
        ended_at=40.0,
        trigger=str(trigger.reason),  # type: ignore[arg-type]
        action=trigger.action,
        pause_until=trigger.pause_until,
        pause_left=trigger.pause_left,
    )
    decision = RestartPolicy(RestartSpec(), Limits()).decide(end, [], now=40.0)
    assert decision.next == "paused"


def test_a_reset_already_past_when_said_waits_for_nothing(home: Path) -> None:
    trigger = fired(home, "usage limit 1000000000", Wall(1_800_000_000.0))
    assert trigger.pause_left is not None and trigger.pause_left < 0
