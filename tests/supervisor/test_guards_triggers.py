"""Why a running session is ended, as ``Triggers`` decides it from its output and clocks.

In-process, on a live loop, with a unit file parsed as agentd parses it and a
stand-in for the session's counters (bytes out, tokens, last output). The
first reason wins; each sentinel action asks for what the unit file says; a
pause names when it ends; daily budgets count what was used earlier today.
"""

from __future__ import annotations

import asyncio
import re
import textwrap
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agentd.config.unitfile import parse_unit
from agentd.reasons import CONTEXT, IDLE, TIMEOUT, Reason
from agentd.supervisor.budget import Usage
from agentd.supervisor.triggers import HANDOFF_RULE, Trigger, Triggers, rules
from agentd.terminal.rules import Hit, Rule

NOW = datetime(2026, 12, 1, 14, 0).timestamp()
MIDNIGHT = datetime(2026, 12, 2, 0, 0).timestamp()


def unit(tmp: Path, extra: str = "") -> Any:
    text = f"command: [sh, -c, 'true']\nworkdir: {tmp}\n" + textwrap.dedent(extra)
    return parse_unit(text, file=str(tmp / "u.yaml"), name="u")


class Seen:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.prompts = 0
        self.notified: list[str] = []
        self.handoffs: list[Hit] = []

    def emit(self, event: str, **fields: Any) -> None:
        self.events.append((event, fields))


def run(
    u: Any, body: Callable[[Triggers, Seen], Awaitable[None]], usage: Usage | None = None
) -> Seen:
    seen = Seen()

    async def main() -> None:
        t = Triggers(
            u,
            emit=seen.emit,
            wall=lambda: NOW,
            on_prompt=lambda: setattr(seen, "prompts", seen.prompts + 1),
            notify=seen.notified.append,
            usage=usage,
            on_handoff=seen.handoffs.append,
        )
        try:
            await asyncio.wait_for(body(t, seen), 10)
        finally:
            t.cancel()

    asyncio.run(main())
    return seen


def session(tokens: int = 0, bytes_out: int = 0, idle_for: float = 0.0) -> Any:
    clock = asyncio.get_running_loop().time
    return SimpleNamespace(
        matcher=SimpleNamespace(tokens=tokens),
        bytes_out=bytes_out,
        clock=clock,
        last_output_at=clock() - idle_for,
    )


def hit(name: str, action: str = "restart", line: str = "x", **groups: str) -> Hit:
    return Hit(Rule(name, re.compile("x"), action), line, groups)


SENTINELS = """\
sentinels:
  - {name: compaction, match: 'Compacting', action: restart}
  - {name: done, match: 'ALL DONE', action: stop}
  - {name: limit, match: 'limit reached', action: pause, pause_for: 20m}
  - {name: ping, match: 'PING', action: notify}
  - {name: noise, match: 'noise', action: ignore}
"""


def test_each_sentinel_action_asks_for_what_its_unit_file_says(tmp_path: Path) -> None:
    u = unit(tmp_path, SENTINELS)
    got: dict[str, Trigger | None] = {}

    async def body(t: Triggers, seen: Seen) -> None:
        t.arm(session(bytes_out=1234))
        t.on_hits([hit("ping", "notify"), hit("noise", "ignore")])
        got["after notify and ignore"] = t.trigger
        t.on_hits([hit("limit", "pause", line="usage limit reached " + "z" * 600)])
        got["pause"] = t.trigger
        t.on_hits([hit("compaction"), hit("done", "stop")])  # the session is already ending

    seen = run(u, body)
    assert got["after notify and ignore"] is None
    assert got["pause"] == Trigger(Reason.sentinel("limit"), "pause", NOW + 1200, pause_left=1200)
    assert seen.notified == ["sentinel:ping"]
    names = [(f["name"], f["action"], f["at_byte"]) for e, f in seen.events]
    assert names == [
        ("ping", "notify", 1234),
        ("noise", "ignore", 1234),
        ("limit", "pause", 1234),
        ("compaction", "restart", 1234),
        ("done", "stop", 1234),
    ]
    assert seen.events[2][1]["line"] == ("usage limit reached " + "z" * 600)[:500]


def test_restart_and_stop_sentinels_end_the_session_as_they_say(tmp_path: Path) -> None:
    u = unit(tmp_path, SENTINELS)
    for name, action in (("compaction", "restart"), ("done", "stop")):
        got: list[Trigger | None] = []

        async def body(
            t: Triggers,
            seen: Seen,
            name: str = name,
            action: str = action,
            got: list[Trigger | None] = got,
        ) -> None:
            t.on_hits([hit(name, action)])
            got.append(t.trigger)

        seen = run(u, body)
        assert got == [Trigger(Reason.sentinel(name), action)]
        assert "at_byte" not in seen.events[0][1]  # no session yet: no offset to give


def test_a_pause_ends_at_the_reset_time_the_agent_printed(tmp_path: Path) -> None:
    u = unit(tmp_path, SENTINELS)
    got: list[Trigger | None] = []

    async def body(t: Triggers, seen: Seen) -> None:
        t.on_hits([hit("limit", "pause", until="4pm")])
        got.append(t.trigger)

    seen = run(u, body)
    assert got == [Trigger(Reason.sentinel("limit"), "pause", NOW + 2 * 3600, pause_left=2 * 3600)]
    assert [e for e, _ in seen.events] == ["session.sentinel"]


def test_a_reset_time_that_cannot_be_read_pauses_for_pause_for_and_says_so(
    tmp_path: Path,
) -> None:
    u = unit(tmp_path, SENTINELS)
    got: list[Trigger | None] = []

    async def body(t: Triggers, seen: Seen) -> None:
        t.on_hits([hit("limit", "pause", until="when the moon is blue")])
        got.append(t.trigger)

    seen = run(u, body)
    assert got == [Trigger(Reason.sentinel("limit"), "pause", NOW + 1200, pause_left=1200)]
    warnings = [f for e, f in seen.events if e == "session.sentinel" and "error" in f]
    assert len(warnings) == 1, seen.events  # said once, beside the sentinel's own event
    warning = warnings[0]
    assert warning["level"] == "warning" and warning["name"] == "limit"
    assert "'when the moon is blue'" in warning["error"] and "pause_for" in warning["error"]


def test_a_pause_rule_the_unit_does_not_name_pauses_for_an_hour(tmp_path: Path) -> None:
    got: list[Trigger | None] = []

    async def body(t: Triggers, seen: Seen) -> None:
        t.on_hits([hit("elsewhere", "pause")])
        got.append(t.trigger)

    run(unit(tmp_path), body)
    assert got == [Trigger(Reason.sentinel("elsewhere"), "pause", NOW + 3600, pause_left=3600)]


def test_the_prompt_rule_and_the_handoff_rule_end_nothing(tmp_path: Path) -> None:
    got: list[Trigger | None] = []

    first, late = hit(HANDOFF_RULE, "handoff", line="first"), hit(HANDOFF_RULE, "handoff")

    async def body(t: Triggers, seen: Seen) -> None:
        t.on_hits([hit("inject.after", "prompt"), first])
        got.append(t.trigger)
        t.fire(Trigger(Reason.manual()))
        t.on_hits([late])  # ending already: no second hand-over

    seen = run(unit(tmp_path), body)
    assert got == [None] and seen.prompts == 1 and seen.handoffs == [first]
    assert seen.events == []


def test_the_context_limit_ends_the_session_at_the_limit_not_before(tmp_path: Path) -> None:
    u = unit(tmp_path, "limits: {context_tokens: 1000}\n")
    got: list[Trigger | None] = []

    async def body(t: Triggers, seen: Seen) -> None:
        s = session(tokens=999)
        t.arm(s)
        t.on_hits([])
        got.append(t.trigger)
        s.matcher.tokens = 1000
        t.on_hits([])
        got.append(t.trigger)

    run(u, body)
    assert got == [None, Trigger(CONTEXT)]


def test_the_output_budget_counts_todays_earlier_tokens_and_pauses_until_midnight(
    tmp_path: Path,
) -> None:
    u = unit(tmp_path, "budget: {max_output_tokens_per_day: 5000}\n")
    got: list[Trigger | None] = []

    async def body(t: Triggers, seen: Seen) -> None:
        s = session(tokens=999)
        t.arm(s)
        t.on_hits([])
        got.append(t.trigger)
        s.matcher.tokens = 1000  # 4000 earlier today + 1000 now
        t.on_hits([])
        got.append(t.trigger)

    seen = run(u, body, usage=Usage(sessions=3, runtime_s=60, tokens=4000))
    assert got == [
        None,
        Trigger(
            Reason.budget("max_output_tokens_per_day"), "pause", MIDNIGHT, pause_left=MIDNIGHT - NOW
        ),
    ]
    event, fields = seen.events[-1]
    assert event == "unit.budget"
    assert fields["budget"] == "max_output_tokens_per_day"
    assert (fields["used"], fields["limit"]) == (5000, 5000)
    assert fields["until"].startswith((datetime.fromtimestamp(MIDNIGHT)).date().isoformat()[:8])


def test_the_runtime_budget_ends_a_session_when_todays_earlier_runtime_leaves_none(
    tmp_path: Path,
) -> None:
    # at once, not a moment later: before a session timeout of half a second
    u = unit(tmp_path, "budget: {max_runtime_per_day: 1h}\nlimits: {session_timeout: 500ms}\n")
    got: list[Trigger] = []

    async def body(t: Triggers, seen: Seen) -> None:
        t.arm(session())
        got.append(await t.fired)  # at once: the hour was used up earlier today

    seen = run(u, body, usage=Usage(sessions=9, runtime_s=3600 + 5, tokens=0))
    assert got == [
        Trigger(Reason.budget("max_runtime_per_day"), "pause", MIDNIGHT, pause_left=MIDNIGHT - NOW)
    ]
    assert seen.events[-1][1]["used"] == 3600 and seen.events[-1][1]["limit"] == 3600


def test_the_session_timeout_ends_a_session_that_keeps_talking(tmp_path: Path) -> None:
    u = unit(tmp_path, "limits: {session_timeout: 50ms, idle_timeout: 1h}\n")
    got: list[Trigger] = []

    async def body(t: Triggers, seen: Seen) -> None:
        t.arm(session())
        got.append(await t.fired)

    run(u, body)
    assert got == [Trigger(TIMEOUT)]


def test_idle_is_counted_from_the_last_output_not_from_the_start(tmp_path: Path) -> None:
    u = unit(tmp_path, "limits: {idle_timeout: 200ms}\n")
    got: list[Any] = []

    async def body(t: Triggers, seen: Seen) -> None:
        loop = asyncio.get_running_loop()
        s = session(idle_for=0.0)
        started = loop.time()
        t.arm(s)
        # output 150 ms in: the idle clock starts again from there
        loop.call_later(0.15, lambda: setattr(s, "last_output_at", loop.time()))
        got.append(await t.fired)
        got.append(loop.time() - started)

    run(u, body)
    assert got[0] == Trigger(IDLE)
    assert got[1] >= 0.35  # 150 ms + 200 ms of silence: a lower bound, never an upper


def test_a_cancelled_session_fires_nothing_later(tmp_path: Path) -> None:
    u = unit(tmp_path, "limits: {session_timeout: 50ms, idle_timeout: 50ms}\n")
    got: list[Trigger | None] = []

    async def body(t: Triggers, seen: Seen) -> None:
        t.arm(session())
        t.cancel()
        witness = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_later(0.1, witness.set_result, None)
        await witness  # both timers were due before this one
        t.on_hits([])  # output read after the session ended: nothing to count
        got.append(t.trigger)

    run(u, body)
    assert got == [None]


def test_the_rules_are_the_sentinels_in_order_then_the_handoff_rule(tmp_path: Path) -> None:
    u = unit(tmp_path, SENTINELS + "handoff: {when: 'HANDOFF NOW'}\n")
    found = rules(u)
    assert [(r.name, r.action) for r in found] == [
        ("compaction", "restart"),
        ("done", "stop"),
        ("limit", "pause"),
        ("ping", "notify"),
        ("noise", "ignore"),
        (HANDOFF_RULE, "handoff"),
    ]
    assert found[-1].pattern.search("... HANDOFF NOW ...")
    assert found[0].pattern.search("Compacting conversation") and found[1].pattern.search(
        "ALL DONE"
    )
    assert [r.name for r in rules(unit(tmp_path))] == []


def test_no_runtime_budget_no_runtime_pause_whatever_was_used_today(tmp_path: Path) -> None:
    u = unit(tmp_path, "budget: {max_output_tokens_per_day: 5000}\n")
    got: list[Trigger | None] = []

    async def body(t: Triggers, seen: Seen) -> None:
        t.arm(session())
        witness = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_later(0.05, witness.set_result, None)
        await witness  # a runtime pause would have been due at once
        got.append(t.trigger)

    run(u, body, usage=Usage(sessions=9, runtime_s=99_999, tokens=10))
    assert got == [None]


def test_the_budget_event_gives_the_runtime_used_to_a_tenth_of_a_second(tmp_path: Path) -> None:
    u = unit(tmp_path, "budget: {max_runtime_per_day: 90.25s}\n")
    got: list[Trigger] = []

    async def body(t: Triggers, seen: Seen) -> None:
        t.arm(session())
        got.append(await t.fired)

    seen = run(u, body, usage=Usage(sessions=1, runtime_s=100, tokens=0))
    assert got[0].reason == Reason.budget("max_runtime_per_day")
    assert seen.events[-1][1]["used"] == 90.2 and seen.events[-1][1]["limit"] == 90.25
