"""Why agentd ends a running session: sentinels, time limits, context, manual.

One ``Triggers`` value per session collects the *first* reason to end it in
``fired`` (later ones are ignored: the session is already ending) and owns the
session's timers. Timers sleep until their deadline; the idle timer re-arms
from the last output time, so output costs no timer churn.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentd import events as ev
from agentd.config.handoff import BUDGET_MESSAGE
from agentd.config.unit import Unit
from agentd.reasons import CONTEXT, IDLE, TIMEOUT, Reason
from agentd.session.inject import PROMPT_RULE
from agentd.session.session import Session
from agentd.supervisor.budget import Usage, next_midnight, reached, with_session
from agentd.supervisor.usage.tally import Spent
from agentd.terminal.rules import Hit, Rule
from agentd.times import iso, parse_reset_time

Emit = Callable[..., None]
HANDOFF_RULE = "handoff"  # the matcher rule of the unit's `handoff.when`
# Ask the agent to hand over (why, the line that says why, what to type, what ends the
# session then); False when it cannot be asked (``agentd.supervisor.handoff.Handoff.ask``).
AskHandoff = Callable[..., bool]


@dataclass(frozen=True)
class Trigger:
    """Why agentd ends a running session, and what it wants next."""

    reason: Reason  # sentinel:NAME, timeout, idle, context, manual[:TEXT], budget:NAME
    action: str = "restart"  # restart | stop | fail | pause
    pause_until: float | None = None  # wall-clock epoch
    detail: str = ""  # what a `fail` sentinel saw: the unit's failure says it
    pause_left: float | None = None  # how far ahead that was when the CLI said so (s)


class Triggers:
    def __init__(
        self,
        unit: Unit,
        *,
        emit: Emit,
        wall: Callable[[], float],
        on_prompt: Callable[[], None],
        notify: Callable[[str], None] | None = None,
        usage: Usage | None = None,
        on_handoff: Callable[[Hit], None] | None = None,
        ask_handoff: AskHandoff | None = None,
    ) -> None:
        self.unit = unit
        self._emit = emit
        self._wall = wall
        self._on_prompt = on_prompt
        self._notify = notify
        self._on_handoff = on_handoff
        self._ask_handoff = ask_handoff
        self._budget_asked: str | None = None  # the budget a handoff was asked for
        self._usage = usage  # today's usage before this session, when a budget is set
        self._loop = asyncio.get_running_loop()
        self.fired: asyncio.Future[Trigger] = self._loop.create_future()
        self._timers: list[asyncio.TimerHandle] = []
        self._session: Session | None = None

    def fire(self, trigger: Trigger) -> None:
        if not self.fired.done():
            self.fired.set_result(trigger)

    @property
    def trigger(self) -> Trigger | None:
        return self.fired.result() if self.fired.done() else None

    # -- output ----------------------------------------------------------------------
    def on_hits(self, hits: list[Hit]) -> None:
        if len(hits) > 1:
            # A limit whose reset time comes in the same output as a limit without
            # one (Codex wraps `...try again at 3:45 PM.` onto a row of its own) is
            # the one to go by: the first sentinel ends the session.
            hits = sorted(
                hits, key=lambda h: not (h.rule.action == "pause" and "until" in h.groups)
            )
        for hit in hits:
            if hit.rule.name == PROMPT_RULE:
                self._on_prompt()
            elif hit.rule.name == HANDOFF_RULE:
                if self._on_handoff is not None and not self.fired.done():
                    self._on_handoff(hit)
            else:
                self._on_sentinel(hit)
        if self._session is None:
            return
        tokens = self._session.matcher.tokens
        limit = self.unit.limits.context_tokens
        if limit and tokens >= limit:
            self.fire(Trigger(CONTEXT))
        cap = self.unit.budget.max_output_tokens_per_day
        estimated = self.unit.usage.source == "estimate"  # else the CLI's records count
        if estimated and cap and self._usage is not None and self._usage.tokens + tokens >= cap:
            self._budget("max_output_tokens_per_day", self._usage.tokens + tokens, cap)

    # -- the CLI's usage records -----------------------------------------------------
    def on_usage(self, spent: Spent) -> None:
        """New figures from the CLI's records of this session: a context filled past
        ``handoff.context_percent``, or a daily budget crossed, hands the session over."""
        if self.fired.done():
            return
        spec = self.unit.usage
        want = self.unit.handoff.context_percent
        percent = spent.context_percent(spec)
        if want and percent is not None and percent >= want:
            window = spent.window(spec) or 0
            line = f"the context is {percent:.0f}% full ({spent.context_tokens:,} of {window:,})"
            self._ask("context", line, self.unit.handoff.message, Trigger(CONTEXT))
        if self._usage is None or self._budget_asked is not None:
            return
        now = with_session(self._usage, {"usage": spent.record(spec)})
        name = reached(self.unit.budget, now)
        if name is None:
            return
        used, limit = now.used(name), getattr(self.unit.budget, name)
        until = next_midnight(self._wall())
        line = f"{name}: {used:,.6g} of {limit:,}"
        then = Trigger(Reason.budget(name), "pause", until)
        if self._ask(f"budget:{name}", line, BUDGET_MESSAGE.format(budget=name), then):
            self._budget_asked = name
            self._emit(
                ev.UNIT_BUDGET, budget=name, used=round(used, 6), limit=limit, until=iso(until)
            )

    def _ask(self, why: str, line: str, message: str, then: Trigger) -> bool:
        """Hand the session over gracefully (without a handoff to ask, end it now);
        False if it cannot be asked yet (asked again at the next figures)."""
        if self._ask_handoff is None:
            self.fire(then)
            return True
        return self._ask_handoff(why, line, message, then)

    def _budget(self, name: str, used: float, limit: float) -> None:
        """A daily budget ran out mid-session: pause until midnight."""
        if self.fired.done():
            return
        until = next_midnight(self._wall())
        self._emit(ev.UNIT_BUDGET, budget=name, used=round(used, 1), limit=limit, until=iso(until))
        self.fire(Trigger(Reason.budget(name), "pause", until, pause_left=until - self._wall()))

    def _on_sentinel(self, hit: Hit) -> None:
        rule = hit.rule
        fields: dict[str, Any] = {"name": rule.name, "action": rule.action, "line": hit.line[:500]}
        if self._session is not None:  # how far into the session's output it was seen
            fields["at_byte"] = self._session.bytes_out
        until = None
        if rule.action == "pause" and not self.fired.done():
            until = self._pause_until(rule.name, hit.groups)
            fields["until"] = iso(until)  # when the unit will start again
        self._emit(ev.SESSION_SENTINEL, **fields)
        reason = Reason.sentinel(rule.name)
        if rule.action in ("restart", "stop"):
            self.fire(Trigger(reason, rule.action))
        elif rule.action == "fail":
            self.fire(Trigger(reason, "fail", detail=hit.line.strip()[:500]))
        elif until is not None:
            self.fire(Trigger(reason, "pause", until, pause_left=until - self._wall()))
        elif rule.action == "notify" and self._notify is not None:
            self._notify(str(reason))

    def sentinel_off(self, name: str, why: str) -> None:
        """The matcher dropped rule ``name``: a search of it ran over the time budget."""
        self._emit(ev.SESSION_SENTINEL_OFF, level="error", name=name, error=why)

    def _pause_until(self, name: str, groups: dict[str, str]) -> float:
        now = self._wall()
        text = groups.get("until")
        if text:
            try:
                return parse_reset_time(text, now)
            except ValueError as exc:
                self._emit(
                    ev.SESSION_SENTINEL,
                    level="warning",
                    name=name,
                    error=f"cannot read the reset time {text!r} ({exc}); pausing for pause_for",
                )
        spec = next((s for s in self.unit.sentinels if s.name == name), None)
        return now + (spec.pause_for if spec else 3600.0)

    # -- timers ----------------------------------------------------------------------
    def arm(self, session: Session) -> None:
        self._session = session
        limits = self.unit.limits
        if limits.session_timeout:
            self._timers.append(
                self._loop.call_later(limits.session_timeout, self.fire, Trigger(TIMEOUT))
            )
        if limits.idle_timeout:
            self._timers.append(self._loop.call_later(limits.idle_timeout, self._check_idle))
        cap = self.unit.budget.max_runtime_per_day
        if cap and self._usage is not None:
            left = max(0.0, cap - self._usage.runtime_s)
            self._timers.append(
                self._loop.call_later(left, self._budget, "max_runtime_per_day", cap, cap)
            )

    def _check_idle(self) -> None:
        session = self._session
        if session is None:
            return
        remaining = self.unit.limits.idle_timeout - (session.clock() - session.last_output_at)
        if remaining <= 0:
            self.fire(Trigger(IDLE))
        else:
            self._timers.append(self._loop.call_later(remaining, self._check_idle))

    def cancel(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        self._session = None


def rules(unit: Unit, off: Callable[[str, str], None] | None = None) -> list[Rule]:
    """What the session's output is matched against: the unit's sentinels and its
    handoff rule (the PreCompact hook reaches agentd through the socket instead);
    ``off(name, why)`` hears of one dropped for running over the time budget."""
    found = [Rule(s.name, s.pattern, s.action) for s in unit.sentinels]
    if unit.handoff.pattern is not None:
        found.append(Rule(HANDOFF_RULE, unit.handoff.pattern, "handoff"))
    if off is None:
        return found
    return [
        Rule(r.name, r.pattern, r.action, on_timeout=functools.partial(off, r.name)) for r in found
    ]
