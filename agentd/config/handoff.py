"""The ``handoff`` section of a unit: ask the agent to record its state when the CLI
shows context pressure, before the wall (``agentd.supervisor.handoff`` runs it)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, PrivateAttr, model_validator

from agentd.config.fields import Duration, Regex, StrictModel, compile_regex
from agentd.config.sections import refuse_empty_match
from agentd.errors import KeyProblem

HANDOFF_MESSAGE = (
    "agentd: your context is nearly full and this session will end soon. Record your state "
    'now: `agentctl state handoff "what you were doing and what comes next"` (and '
    "`agentctl state done` / `agentctl state next` for steps), then exit with code 42 or run "
    '`agentctl restart "$AGENTD_UNIT"`. A fresh session continues from the state files.'
)
BUDGET_MESSAGE = (
    "agentd: today's budget ({budget}) is used up and this session will end soon. Record your "
    'state now: `agentctl state handoff "what you were doing and what comes next"` (and '
    "`agentctl state done` / `agentctl state next` for steps), then exit with code 42. The "
    "next session continues from the state files when the budget allows."
)
LEFT_GROUP = "left"  # the handoff pattern's group(s) holding the percent of context left
USED_GROUP = "used"  # ... or the percent used (Gemini CLI shows `N% used`): left = 100 - used


class HandoffSpec(StrictModel):
    """Graceful handoff: on the CLI's context-pressure line (``when``), type ``message``
    into the session, wait up to ``wait`` for the state dir to change or the session to
    exit, then restart (reason ``context``)."""

    when: Regex | None = None  # off when None
    """A regular expression for the CLI's context-pressure line (presets set it); off when not set.
    """
    below: Annotated[int, Field(ge=0, le=100)] | None = None  # percent left (`left`|`used` group)
    """With a group in `when` named `left` (the percent of context left) or `used` (the percent
    used): hand over only when at most this percent is left (a `left` group holding words, as
    Claude Code's `auto-compact next`, counts as 0).
    """
    message: Annotated[str, Field(min_length=1)] = HANDOFF_MESSAGE
    """What is typed into the session to ask the agent to record its state and hand over."""
    context_percent: Annotated[int, Field(ge=1, le=100)] | None = None
    """Hand over when the last model request filled this percent of the context window, as the
    CLI's own usage records say (`usage.source`, `usage.context_window`): no screen text needed.
    """
    wait: Duration = 120
    """How long to wait for the state dir to change or the session to exit before restarting it
    (reason `context`).
    """
    _pattern: re.Pattern[str] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _threshold(self) -> HandoffSpec:
        if self.when is not None:
            self._pattern = compile_regex(self.when)
            refuse_empty_match(self._pattern, "when")
            groups = self._pattern.groupindex
            has_percent = any(g.startswith((LEFT_GROUP, USED_GROUP)) for g in groups)
            if self.below is not None and not has_percent:
                raise KeyProblem(
                    ("below",),
                    f"needs a group named {LEFT_GROUP} (or "
                    f"{LEFT_GROUP}_...) in `when` holding the percent left, or "
                    f"{USED_GROUP} (or {USED_GROUP}_...) holding the percent used",
                )
        return self

    @property
    def pattern(self) -> re.Pattern[str] | None:
        if self._pattern is None and self.when is not None:
            self._pattern = compile_regex(self.when)
        return self._pattern

    def percent_left(self, groups: dict[str, str]) -> int | None:
        """The percent of context left a hit's groups hold (or 100 minus the percent used).
        A ``left`` group that holds words, not a number, means none is left (Claude Code
        2.1.332 writes 0% as `auto-compact next`)."""
        for name, value in groups.items():
            if value and not value.isdigit() and name.startswith(LEFT_GROUP):
                return 0
            if not (value and value.isdigit()):
                continue
            if name.startswith(LEFT_GROUP):
                return int(value)
            if name.startswith(USED_GROUP):
                return max(0, 100 - int(value))
        return None

    def wanted(self, groups: dict[str, str]) -> bool:
        """Does a hit with these groups call for the handoff (at or below ``below``)?"""
        left = self.percent_left(groups)
        return self.below is None or left is None or left <= self.below
