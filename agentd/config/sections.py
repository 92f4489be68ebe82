"""The sections of a unit (SPEC section 3): one pydantic model per key.

``sentinels``, ``inject``, ``state``, ``restart``, ``stop``, ``limits``,
``handoff``, ``budget``, ``logs``, ``notify`` and ``pty``; each checks its own keys. The
checks that need several sections at once are on ``Unit``.
"""

from __future__ import annotations

import re
from signal import SIGTERM
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    InstanceOf,
    PrivateAttr,
    field_validator,
    model_validator,
)

from agentd.config.fields import (
    Duration,
    ExitCode,
    NonNegative,
    SignalNum,
    Size,
    StrictModel,
    command_argv,
    compile_regex,
    expand,
    expanded_argv,
)
from agentd.errors import KeyProblem
from agentd.memory.layout import LayoutFile, parse_files, preset_names

SENTINEL_NAME = r"^[A-Za-z0-9_.:-]{1,64}$"


def refuse_empty_match(pattern: re.Pattern[str], key: str) -> None:
    """A pattern that matches an empty line matches every line (``re.search``):
    its session would end at the first line of output, again and again."""
    if pattern.search("") is not None:
        raise KeyProblem((key,), f"{pattern.pattern!r} matches an empty line, so it would match "
                         "every line of output; make it match only the text you mean")


class Sentinel(StrictModel):
    name: Annotated[str, Field(pattern=SENTINEL_NAME)]
    match: str
    action: Literal["restart", "stop", "pause", "notify", "ignore"] = "restart"
    pause_for: Duration = 3600
    _pattern: re.Pattern[str] | None = PrivateAttr(default=None)

    @field_validator("match")
    @classmethod
    def _compiles(cls, value: str) -> str:
        compile_regex(value)
        return value

    @model_validator(mode="after")
    def _compile(self) -> Sentinel:
        self._pattern = compile_regex(self.match)
        refuse_empty_match(self._pattern, "match")
        return self

    @property
    def pattern(self) -> re.Pattern[str]:
        """The compiled ``match``, compiled once at validation."""
        if self._pattern is None:  # only after model_construct(), which skips validation
            self._pattern = compile_regex(self.match)
        return self._pattern


class Inject(StrictModel):
    mode: Literal["argv", "stdin", "file", "none"] | None = None
    after: str | None = None
    submit: str = "\r"
    path: Annotated[str, Field(min_length=1)] = ".agent/BOOTSTRAP.md"

    @field_validator("after")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            compile_regex(value)
        return value

    @field_validator("path")
    @classmethod
    def _expand(cls, value: str) -> str:
        return expand(value)


def _layout(value: Any) -> str | list[LayoutFile]:
    """A preset's name as is; a list of files checked by the layout's own schema
    (its KeyProblem names the item and key: ``state.layout[1].tail``)."""
    if isinstance(value, list):
        return parse_files(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a layout name or a list of files, got {value!r}")
    return value


Layout = Annotated[str | list[InstanceOf[LayoutFile]], BeforeValidator(_layout)]


class StateSpec(StrictModel):
    dir: Annotated[str, Field(min_length=1)] = ".agent"
    layout: Layout = "agentd"
    budget_tokens: Annotated[int, Field(gt=0)] = 3000

    @field_validator("dir")
    @classmethod
    def _expand(cls, value: str) -> str:
        return expand(value)

    @field_validator("layout")
    @classmethod
    def _known_layout(cls, value: str | list[LayoutFile]) -> str | list[LayoutFile]:
        if isinstance(value, str) and value not in preset_names():
            known = ", ".join(preset_names())
            raise ValueError(f"unknown layout {value!r}; choose one of: {known}, or list files")
        return value


class RestartSpec(StrictModel):
    exit_codes: list[ExitCode] = [42]  # noqa: RUF012 (pydantic copies it)
    success_codes: list[ExitCode] = [0]  # noqa: RUF012 (pydantic copies it)
    on_failure: bool = True
    delay: Duration = 1
    max_delay: Duration = 300
    min_uptime: Duration = 10
    burst: NonNegative = 5
    window: Duration = 600
    max_sessions: NonNegative = 0

    @model_validator(mode="after")
    def _disjoint(self) -> RestartSpec:
        both = sorted(set(self.exit_codes) & set(self.success_codes))
        if both:
            raise KeyProblem(
                ("exit_codes",),
                f"exit code {both[0]} is also in success_codes; a code means one thing",
            )
        return self


class StopSpec(StrictModel):
    signal: SignalNum = SIGTERM
    grace: Duration = 10


class Limits(StrictModel):
    session_timeout: Duration = 0
    idle_timeout: Duration = 0
    context_tokens: NonNegative = 0
    stall_sessions: NonNegative = 0


HANDOFF_MESSAGE = (
    "agentd: your context is nearly full and this session will end soon. Record your state "
    "now: `agentctl state handoff \"what you were doing and what comes next\"` (and "
    "`agentctl state done` / `agentctl state next` for steps), then exit with code 42 or run "
    "`agentctl restart \"$AGENTD_UNIT\"`. A fresh session continues from the state files."
)
LEFT_GROUP = "left"  # the handoff pattern's group(s) holding the percent of context left


class HandoffSpec(StrictModel):
    """Graceful handoff: on the CLI's context-pressure line (``when``), type ``message``
    into the session, wait up to ``wait`` for the state dir to change or the session to
    exit, then restart (reason ``context``)."""

    when: str | None = None  # regex; off when None
    below: Annotated[int, Field(ge=0, le=100)] | None = None  # percent left, with a `left` group
    message: Annotated[str, Field(min_length=1)] = HANDOFF_MESSAGE
    wait: Duration = 120
    _pattern: re.Pattern[str] | None = PrivateAttr(default=None)

    @field_validator("when")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            compile_regex(value)
        return value

    @model_validator(mode="after")
    def _threshold(self) -> HandoffSpec:
        if self.when is not None:
            self._pattern = compile_regex(self.when)
            refuse_empty_match(self._pattern, "when")
            has_left = any(g.startswith(LEFT_GROUP) for g in self._pattern.groupindex)
            if self.below is not None and not has_left:
                raise KeyProblem(("below",), f"needs a group named {LEFT_GROUP} (or "
                                 f"{LEFT_GROUP}_...) in `when` holding the percent left")
        return self

    @property
    def pattern(self) -> re.Pattern[str] | None:
        if self._pattern is None and self.when is not None:
            self._pattern = compile_regex(self.when)
        return self._pattern

    def percent_left(self, groups: dict[str, str]) -> int | None:
        """The percent of context left a hit's groups hold, if any."""
        for name, value in groups.items():
            if name.startswith(LEFT_GROUP) and value and value.isdigit():
                return int(value)
        return None

    def wanted(self, groups: dict[str, str]) -> bool:
        """Does a hit with these groups call for the handoff (at or below ``below``)?"""
        left = self.percent_left(groups)
        return self.below is None or left is None or left <= self.below


class Budget(StrictModel):
    max_sessions_per_day: NonNegative = 0
    max_runtime_per_day: Duration = 0
    max_output_tokens_per_day: NonNegative = 0


class LogSpec(StrictModel):
    max_bytes: Size = 10_000_000
    backups: NonNegative = 5
    keep_bootstraps: NonNegative = 100


NotifyEvent = Literal["done", "failed", "stalled", "paused", "stopped", "restart"]


class NotifySpec(StrictModel):
    command: Annotated[list[str] | None, BeforeValidator(command_argv)] = None
    # pydantic copies a mutable default for each instance (RUF012 cannot see that)
    on: list[NotifyEvent] = ["done", "failed", "stalled", "paused"]  # noqa: RUF012

    @field_validator("command")
    @classmethod
    def _expand(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else expanded_argv(value)


class PtySpec(StrictModel):
    cols: Annotated[int, Field(ge=10, le=1000)] = 120
    rows: Annotated[int, Field(ge=10, le=1000)] = 40
