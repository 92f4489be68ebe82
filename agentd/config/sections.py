"""The sections of a unit (docs/units.md): one pydantic model per key.

``sentinels``, ``inject``, ``state``, ``restart``, ``stop``, ``limits``,
``budget``, ``logs``, ``notify`` and ``pty`` (``handoff``: ``agentd.config.handoff``); each
checks its own keys. The checks that need several sections at once are on ``Unit``.
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
    Regex,
    SignalNum,
    Size,
    StrictModel,
    command_argv,
    compile_regex,
    expand,
    expanded_argv,
)
from agentd.config.ptysize import PTY_MAX, PTY_MIN
from agentd.errors import KeyProblem
from agentd.memory.layout import LayoutFile, parse_files, preset_names

SENTINEL_NAME = r"^[A-Za-z0-9_.:-]{1,64}$"


def refuse_empty_match(pattern: re.Pattern[str], key: str) -> None:
    """A pattern that matches an empty line matches every line (``re.search``):
    its session would end at the first line of output, again and again."""
    if pattern.search("") is not None:
        raise KeyProblem(
            (key,),
            f"{pattern.pattern!r} matches an empty line, so it would match "
            "every line of output; make it match only the text you mean",
        )


class Sentinel(StrictModel):
    name: Annotated[str, Field(pattern=SENTINEL_NAME)]
    """A name for the sentinel (letters, digits, `_.:-`): the restart reason is `sentinel:NAME`.
    """
    match: Regex
    """A regular expression (Python `re.search` syntax and matches) matched against each line
    of output. The agent writes that text, so it runs on RE2, in linear time, where RE2 can
    express it, else with a timeout (a time budget) that turns the sentinel off for the
    session (event `session.sentinel_off`); `agentd check` warns about a pattern that can
    backtrack."""
    action: Literal["restart", "stop", "fail", "pause", "notify", "ignore"] = "restart"
    """`restart`: end the session and start a fresh one at once; `stop`: end it, the unit stays
    `stopped`; `fail`: end it, the unit is `failed` with the line as the reason's detail (a
    setup error that no restart fixes); `pause`: end it and wait until the time in the pattern's
    `until` group (an epoch, `HH:MM`, `3pm`, with an optional `(Area/City)` zone) or
    `pause_for`; `notify`: run `notify.command`; `ignore`: only log it.
    """
    pause_for: Duration = 3600
    """How long `pause` waits when the line gives no time."""
    _pattern: re.Pattern[str] | None = PrivateAttr(default=None)

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
    """`argv`: the bootstrap is on the command line (`{bootstrap}` or `{bootstrap_file}` in
    `command`); `stdin`: typed into the session; `file`: written to `inject.path` for the agent
    to read; `none`. Default: `argv` when `command` uses one of those placeholders, else
    `stdin`.
    """
    after: Regex | None = None
    """stdin mode: wait for output matching this regular expression before typing (default: type at
    once).
    """
    submit: str = "\r"
    """stdin mode: what is sent after the text (Enter)."""
    paste: bool = True
    """Hand text over (the bootstrap in stdin mode, the handoff request) as one bracketed paste
    when the program turned bracketed paste on; `false`: type it as keys (Gemini CLI 0.61
    takes an Enter that follows a paste too soon for a newline, so the text is never sent).
    """
    path: Annotated[str, Field(min_length=1)] = ".agent/BOOTSTRAP.md"
    """file mode: where the bootstrap is written, relative to the workdir."""

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
    """The state dir, relative to the workdir."""
    layout: Layout = "agentd"
    """Which state files the bootstrap shows, in order: a layout name (`agentd`, `decision-log`,
    `contract`, `four-file`, `memento`, `checkpoint`; see layouts.md) or a list of files
    (below).
    """
    budget_tokens: Annotated[int, Field(gt=0)] = 3000
    """The bootstrap's size in estimated tokens (1 per CJK character, 1 per 4 other characters).
    Earlier files win; what does not fit is cut with a note naming the file to read.
    """

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
    """Exit codes that mean "start a fresh session now" (a hand-over)."""
    success_codes: list[ExitCode] = [0]  # noqa: RUF012 (pydantic copies it)
    """Exit codes that mean the work is done: the unit ends `done`."""
    on_failure: bool = True
    """Restart after a failure (any other end) after a delay; `false`: the unit ends `failed` at
    the first one.
    """
    delay: Duration = 1
    """The wait after a first failure; it doubles with each failure in a row."""
    max_delay: Duration = 300
    """The longest wait between failures."""
    min_uptime: Duration = 10
    """A session shorter than this counts as a failure, whatever ended it. A session's length is
    the agent's own run, from its start to its exit or to what ended it: agentd's work around it
    (the bootstrap before, the stop after) does not count, however long a loaded machine makes
    it. Whatever it says, three sessions in a row that each end within a second are a failure too.
    """
    burst: NonNegative = 5
    """More than this many failures within `window`: the unit ends `failed`."""
    window: Duration = 600
    """The time over which failures are counted for `burst`."""
    max_sessions: NonNegative = 0
    """After this many sessions the unit ends `failed` instead of restarting; 0 means no limit.
    """

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
    """The signal sent to every process of the session to end it (`TERM`, `INT`, `HUP`, or a
    number).
    """
    grace: Duration = 10
    """How long to wait after the signal before SIGKILL."""


class Limits(StrictModel):
    session_timeout: Duration = 0
    """Wall time per session; then it is restarted (reason `timeout`). 0 means none."""
    idle_timeout: Duration = 0
    """No output for this long: restarted (reason `idle`). 0 means none."""
    context_tokens: NonNegative = 0
    """Estimated tokens of output in one session: restarted (reason `context`). 0 means none."""
    stall_sessions: NonNegative = 0
    """This many sessions in a row that leave the state dir unchanged: the unit ends `stalled`. 0
    means never.
    """


class Budget(StrictModel):
    max_sessions_per_day: NonNegative = 0
    """Sessions started per local day."""
    max_runtime_per_day: Duration = 0
    """Session run time per local day."""
    max_output_tokens_per_day: NonNegative = 0
    """Tokens of agent output per local day: as the CLI recorded them (`usage.source`), else
    estimated from the screen.
    """
    max_tokens_per_day: NonNegative = 0
    """Tokens per local day, as the CLI recorded them (`usage.source`): input, output and cache
    reads and writes, everything the model was sent and sent back (a session with only an
    estimate counts its estimated output). A running session that reaches it is asked to hand
    over (as for `handoff`) before the unit is paused.
    """
    max_cost_per_day: Annotated[float, Field(ge=0)] = 0
    """US dollars per local day: the cost the CLI reports (Claude Code, aider) or the one
    `usage.prices` gives. A running session that reaches it is asked to hand over first.
    """


class LogSpec(StrictModel):
    max_bytes: Size = 10_000_000
    """The size at which `transcript.log` is rotated and `history.jsonl` keeps its newer half.
    """
    backups: NonNegative = 5
    """How many rotated transcripts are kept (`transcript.log.1` ... `.N`)."""
    keep_bootstraps: NonNegative = 100
    """How many `bootstrap-N.md` files are kept (the newest); 0 keeps all."""


NotifyEvent = Literal["done", "failed", "stalled", "paused", "stopped", "restart"]


class NotifySpec(StrictModel):
    command: Annotated[list[str] | None, BeforeValidator(command_argv)] = None
    """The command to run, a list or a string; placeholders `{unit}`, `{session}`, `{event}`,
    `{workdir}`.
    """
    # pydantic copies a mutable default for each instance (RUF012 cannot see that)
    on: list[NotifyEvent] = ["done", "failed", "stalled", "paused"]  # noqa: RUF012
    """Which events run it."""

    @field_validator("command")
    @classmethod
    def _expand(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else expanded_argv(value)


class PtySpec(StrictModel):
    cols: Annotated[int, Field(ge=PTY_MIN, le=PTY_MAX)] = 120
    """Columns of the session's terminal."""
    rows: Annotated[int, Field(ge=PTY_MIN, le=PTY_MAX)] = 40
    """Rows of the session's terminal."""
