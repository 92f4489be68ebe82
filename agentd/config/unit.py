"""The unit schema (SPEC section 3): what one supervised agent service is.

Pydantic models with ``extra="forbid"`` so a typo is an error, not a silent
default. Validation is pure apart from two facts it must check at load time:
the workdir exists, and ``~``/``$VAR`` expand against this process's
environment. ``agentd.config.unitfile`` turns the errors into ``file:line: key: msg``.

A validator that knows a finer key than the one it is attached to raises
``KeyProblem(path, message)``; the loader appends ``path`` to the error's
location (``inject`` + ``mode`` -> ``inject.mode``).
"""

from __future__ import annotations

import copy
import os
import re
import shlex
from functools import cache
from pathlib import Path
from signal import SIGTERM, Signals
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agentd.config.convert import (
    check_placeholders,
    parse_duration,
    parse_signal,
    parse_size,
    placeholders_in,
)
from agentd.memory.layout import LayoutFile, preset_names

Duration = Annotated[float, BeforeValidator(parse_duration)]
Size = Annotated[int, BeforeValidator(parse_size)]
SignalNum = Annotated[Signals, BeforeValidator(parse_signal)]
NonNegative = Annotated[int, Field(ge=0)]
ExitCode = Annotated[int, Field(ge=0, le=255)]

UNIT_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
SENTINEL_NAME = r"^[A-Za-z0-9_.:-]{1,64}$"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BOOTSTRAP_ARGS = frozenset({"bootstrap", "bootstrap_file"})


class KeyProblem(ValueError):
    """A validation error about ``path`` below the key the validator is on."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(".".join(map(str, path)) + ": " + message if path else message)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def compile_regex(pattern: str) -> re.Pattern[str]:
    """``re.compile`` whose error says what is wrong and where, as a ValueError."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        raise ValueError(f"invalid regex: {exc.msg}{where}") from None
    except (RecursionError, OverflowError):
        raise ValueError("invalid regex: nested too deeply") from None


def expand(text: str) -> str:
    """``~`` and ``$VAR``/``${VAR}`` expanded; unknown variables stay as written."""
    return os.path.expandvars(os.path.expanduser(text))


def _argv(value: Any) -> Any:
    """A command given as a string is split like a shell; scalars become strings."""
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:  # "No closing quotation"
            raise ValueError(f"cannot split command: {exc}") from None
    if isinstance(value, list):
        return [_scalar_text(item) for item in value]
    return value


def _scalar_text(value: Any) -> Any:
    """YAML ``true``/``3``/``1.5`` as the text a command line or env would carry."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def _expanded_argv(argv: list[str]) -> list[str]:
    """Each element expanded and its placeholders checked (KeyProblem names the index)."""
    if not argv:
        raise ValueError("must not be empty")
    if not argv[0].strip():
        raise KeyProblem((0,), "the program name is empty")
    out = [expand(arg) for arg in argv]
    for index, arg in enumerate(out):
        try:
            check_placeholders(arg)
        except ValueError as exc:
            raise KeyProblem((index,), str(exc)) from None
    return out


class Sentinel(_Model):
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
        return self

    @property
    def pattern(self) -> re.Pattern[str]:
        """The compiled ``match``, compiled once at validation."""
        if self._pattern is None:  # only after model_construct(), which skips validation
            self._pattern = compile_regex(self.match)
        return self._pattern


class Inject(_Model):
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


def _layout_kind(value: Any) -> str:
    return "name" if isinstance(value, str) else "files"


def _layout_shape(value: Any) -> Any:
    if not isinstance(value, str | list):
        raise ValueError(f"expected a layout name or a list of files, got {value!r}")
    return value


Layout = Annotated[
    Annotated[str, Tag("name")] | Annotated[list[LayoutFile], Tag("files")],
    Discriminator(_layout_kind),
    BeforeValidator(_layout_shape),
]


class StateSpec(_Model):
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


class RestartSpec(_Model):
    exit_codes: list[ExitCode] = [42]
    success_codes: list[ExitCode] = [0]
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


class StopSpec(_Model):
    signal: SignalNum = SIGTERM
    grace: Duration = 10


class Limits(_Model):
    session_timeout: Duration = 0
    idle_timeout: Duration = 0
    context_tokens: NonNegative = 0
    stall_sessions: NonNegative = 0


class Budget(_Model):
    max_sessions_per_day: NonNegative = 0
    max_runtime_per_day: Duration = 0
    max_output_tokens_per_day: NonNegative = 0


class LogSpec(_Model):
    max_bytes: Size = 10_000_000
    backups: NonNegative = 5


NotifyEvent = Literal["done", "failed", "stalled", "paused", "stopped", "restart"]


class NotifySpec(_Model):
    command: Annotated[list[str] | None, BeforeValidator(_argv)] = None
    on: list[NotifyEvent] = ["done", "failed", "stalled", "paused"]

    @field_validator("command")
    @classmethod
    def _expand(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else _expanded_argv(value)


class PtySpec(_Model):
    cols: Annotated[int, Field(ge=10, le=1000)] = 120
    rows: Annotated[int, Field(ge=10, le=1000)] = 40


class Unit(_Model):
    name: Annotated[str, Field(pattern=UNIT_NAME)]
    source: Path | None = None
    description: str = ""
    preset: str | None = None
    command: Annotated[list[str], BeforeValidator(_argv)]
    workdir: Path
    env: dict[str, str] = {}
    autostart: bool = True
    inject: Inject = Field(default_factory=Inject)
    state: StateSpec = Field(default_factory=StateSpec)
    sentinels: list[Sentinel] = []
    restart: RestartSpec = Field(default_factory=RestartSpec)
    stop: StopSpec = Field(default_factory=StopSpec)
    limits: Limits = Field(default_factory=Limits)
    budget: Budget = Field(default_factory=Budget)
    logs: LogSpec = Field(default_factory=LogSpec)
    notify: NotifySpec = Field(default_factory=NotifySpec)
    pty: PtySpec = Field(default_factory=PtySpec)

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        return apply_preset(data)

    @field_validator("command")
    @classmethod
    def _command(cls, value: list[str]) -> list[str]:
        return _expanded_argv(value)

    @field_validator("workdir", mode="before")
    @classmethod
    def _expand_workdir(cls, value: Any, info: ValidationInfo) -> Any:
        """Expanded and made absolute; a relative one is relative to the unit file."""
        if not isinstance(value, str | Path):
            return value
        path = Path(expand(str(value)))
        source = info.data.get("source")
        if not path.is_absolute() and isinstance(source, Path):
            path = source.parent / path
        return Path(os.path.abspath(path))

    @field_validator("workdir")
    @classmethod
    def _workdir_exists(cls, value: Path) -> Path:
        try:
            is_dir, exists = value.is_dir(), value.exists()
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot use {str(value)!r}: {exc}") from None
        if not exists:
            raise ValueError(f"directory {str(value)!r} does not exist")
        if not is_dir:
            raise ValueError(f"{str(value)!r} is not a directory")
        return value

    @field_validator("env", mode="before")
    @classmethod
    def _env_text(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {key: _scalar_text(item) for key, item in value.items()}
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        out = {}
        for key, item in value.items():
            if not _ENV_NAME.fullmatch(key):
                raise KeyProblem((key,), "not a valid environment variable name")
            out[key] = expand(item)
            try:
                check_placeholders(out[key])
            except ValueError as exc:
                raise KeyProblem((key,), str(exc)) from None
        return out

    @field_validator("sentinels")
    @classmethod
    def _unique_names(cls, value: list[Sentinel]) -> list[Sentinel]:
        seen: set[str] = set()
        for index, sentinel in enumerate(value):
            if sentinel.name in seen:
                raise KeyProblem((index, "name"), f"duplicate sentinel name {sentinel.name!r}")
            seen.add(sentinel.name)
        return value

    @model_validator(mode="after")
    def _inject_mode(self) -> Unit:
        """Default the mode from the command; argv mode needs somewhere to put the text."""
        in_argv = any(_BOOTSTRAP_ARGS & placeholders_in(arg) for arg in self.command)
        if self.inject.mode is None:
            self.inject.mode = "argv" if in_argv else "stdin"
        elif self.inject.mode == "argv" and not in_argv:
            raise KeyProblem(
                ("inject", "mode"), "argv needs {bootstrap} or {bootstrap_file} in command"
            )
        return self

    @property
    def state_dir(self) -> Path:
        """The absolute state dir (``state.dir`` is relative to the workdir)."""
        return self.workdir / self.state.dir

    @property
    def inject_path(self) -> Path:
        """The absolute path file-mode injection writes the bootstrap to."""
        return self.workdir / self.inject.path


# --- agent-CLI presets (SPEC section 7) ---------------------------------------


# Next to this module, not via importlib.resources: an editable install made
# before agentd/__init__.py existed maps `agentd` as a namespace package, and
# resources.files() then fails outside the source tree.
_CLI_PRESETS = Path(__file__).resolve().parent / "cli_presets"


def cli_preset_names() -> list[str]:
    """Names accepted by ``preset:``: the files in ``agentd/config/cli_presets``."""
    return sorted(p.stem for p in _CLI_PRESETS.glob("*.yaml"))


@cache
def _preset_file(name: str) -> dict[str, Any]:
    data = yaml.safe_load((_CLI_PRESETS / f"{name}.yaml").read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"cli preset {name} is not a mapping")  # a packaging bug
    return data


def load_cli_preset(name: str) -> dict[str, Any]:
    """The unit keys preset ``name`` supplies (a fresh copy, safe to mutate)."""
    if not isinstance(name, str) or name not in cli_preset_names():
        known = ", ".join(cli_preset_names())
        raise KeyProblem(("preset",), f"unknown preset {name!r}; choose one of: {known}")
    return copy.deepcopy({k: v for k, v in _preset_file(name).items() if k != "examples"})


def cli_preset_examples(name: str) -> dict[str, list[str]]:
    """Real output lines each sentinel of preset ``name`` must match (for tests)."""
    return dict(_preset_file(name).get("examples", {}))


def apply_preset(data: Any) -> Any:
    """``data`` deep-merged over its ``preset:`` (the unit wins; lists replace)."""
    if not isinstance(data, dict) or data.get("preset") is None:
        return data
    return deep_merge(load_cli_preset(data["preset"]), data)


def deep_merge(base: dict[Any, Any], over: dict[Any, Any]) -> dict[Any, Any]:
    """``over`` on top of ``base``: mappings merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out
