"""The unit schema (SPEC section 3): what one supervised agent service is.

``Unit`` puts the sections (``agentd.config.sections``) together under the
top-level keys and holds the checks that span them. Pydantic models with
``extra="forbid"`` so a typo is an error, not a silent default. Validation is
pure apart from two facts it must check at load time: the workdir exists, and
``~``/``$VAR`` expand against this process's environment.
``agentd.config.unitfile`` turns the errors into ``file:line: key: msg``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BeforeValidator,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agentd.config.fields import (
    StrictModel,
    command_argv,
    expand,
    expanded_argv,
    scalar_text,
)
from agentd.config.names import UNIT_NAME
from agentd.config.placeholders import check_placeholders, placeholders_in
from agentd.config.presets import apply_preset
from agentd.config.sections import (
    Budget,
    HandoffSpec,
    Inject,
    Limits,
    LogSpec,
    NotifySpec,
    PtySpec,
    RestartSpec,
    Sentinel,
    StateSpec,
    StopSpec,
)
from agentd.errors import KeyProblem

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BOOTSTRAP_ARGS = frozenset({"bootstrap", "bootstrap_file"})


class Unit(StrictModel):
    name: Annotated[str, Field(pattern=UNIT_NAME)]
    source: Path | None = None
    description: str = ""
    preset: str | None = None
    command: Annotated[list[str], BeforeValidator(command_argv)]
    workdir: Path
    env: dict[str, str] = {}  # noqa: RUF012 (pydantic copies it)
    autostart: bool = True
    inject: Inject = Field(default_factory=Inject)
    state: StateSpec = Field(default_factory=StateSpec)
    sentinels: list[Sentinel] = []  # noqa: RUF012 (pydantic copies it)
    restart: RestartSpec = Field(default_factory=RestartSpec)
    stop: StopSpec = Field(default_factory=StopSpec)
    limits: Limits = Field(default_factory=Limits)
    handoff: HandoffSpec = Field(default_factory=HandoffSpec)
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
        return expanded_argv(value)

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
            return {key: scalar_text(item) for key, item in value.items()}
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
