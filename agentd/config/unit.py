"""The unit schema (docs/units.md): what one supervised agent service is.

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
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agentd.config.clihooks import CliHooks
from agentd.config.complete import CompleteSpec
from agentd.config.fields import (
    StrictModel,
    command_argv,
    compile_regex,
    expand,
    expanded_argv,
    scalar_text,
)
from agentd.config.handoff import HandoffSpec
from agentd.config.names import UNIT_NAME
from agentd.config.placeholders import check_placeholders, placeholders_in
from agentd.config.presets import apply_preset
from agentd.config.sections import (
    Budget,
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
from agentd.config.usage import UsageSpec
from agentd.config.worktree import WorktreeSpec
from agentd.errors import KeyProblem

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BOOTSTRAP_ARGS = frozenset({"bootstrap", "bootstrap_file"})


class Unit(StrictModel):
    name: Annotated[str, Field(pattern=UNIT_NAME)]
    """Optional: the unit's name is its file's name without `.yaml`; if given, it must be the same.
    """
    source: Path | None = None
    description: str = ""
    """One line for people: what this agent works on."""
    preset: str | None = None
    """An agent CLI whose defaults to start from: `claude-code`, `codex`, `gemini` or `aider`
    (command, injection, stop signal, exit codes, sentinels). The unit's own keys win; lists
    replace the preset's.
    """
    hooks: CliHooks = "none"
    """Give the agent CLI agentd's PreCompact and SessionStart hooks for each session, on its
    command line: `claude-code` (`--settings`), `codex` (`-c hooks...` with
    `--dangerously-bypass-hook-trust`), or `none`. The claude-code and codex presets set it; the
    project's settings are not touched. Only when the command's program is that CLI.
    """
    command: Annotated[list[str], BeforeValidator(command_argv)]
    """The agent's command line: a list, or a string split like a shell's. `~` and `$VARS` are
    expanded; placeholders `{bootstrap}`, `{bootstrap_file}`, `{unit}`, `{session}`, `{workdir}`
    are filled in for each session. A relative program path (`./run.sh`) is relative to the
    workdir.
    """
    worktree: WorktreeSpec | None = None
    """Run the sessions in a git worktree of their own: `{repo: PATH, branch: NAME}`. agentd
    creates it (at `REPO.worktrees/BRANCH`, the branch from the repository's HEAD if it does not
    exist) on the first session and never deletes it; `workdir` then defaults to it.
    """
    workdir: Path
    """Where the agent runs (its current directory); it must exist. `~` and `$VARS` are expanded; a
    relative path is relative to the unit file. With `worktree`: the worktree by default, or a
    directory in it (relative to it).
    """
    env: dict[str, str] = {}  # noqa: RUF012 (pydantic copies it)
    """Environment variables for the agent, on top of agentd's own; values may use `$VARS` and the
    placeholders. Values of variables whose names contain KEY, TOKEN, SECRET or PASSWORD are
    shown as `***` in transcripts and events.
    """
    autostart: bool = True
    """Start the unit when the daemon starts. `agentctl enable` / `disable` override it and are
    kept across restarts.
    """
    inject: Inject = Field(default_factory=Inject)
    """How the bootstrap reaches each new session."""
    state: StateSpec = Field(default_factory=StateSpec)
    """The state dir: the agent's memory on disk, and how the bootstrap is rendered from it."""
    sentinels: list[Sentinel] = []  # noqa: RUF012 (pydantic copies it)
    """Patterns in the agent's output, and what to do when one matches. Each line is matched with
    the ANSI escapes removed; a pattern that matches an empty line is refused.
    """
    restart: RestartSpec = Field(default_factory=RestartSpec)
    """What follows the end of a session: restart, back off, or stop trying."""
    complete: CompleteSpec | None = None
    """The completion gate: a check run in the workdir before the unit may end `done`."""
    stop: StopSpec = Field(default_factory=StopSpec)
    """How a session is ended."""
    limits: Limits = Field(default_factory=Limits)
    """Limits that end a session (restarted with a fresh bootstrap), or the unit."""
    handoff: HandoffSpec = Field(default_factory=HandoffSpec)
    """Graceful handoff: on the CLI's context-pressure line, ask the agent to record its state,
    wait, then restart it with fresh state.
    """
    usage: UsageSpec = Field(default_factory=UsageSpec)
    """Where each session's token usage is read (the presets set it), and what tokens cost."""
    budget: Budget = Field(default_factory=Budget)
    """Daily budgets across sessions; when one is used up the unit is paused until local midnight
    (event `unit.budget`). 0 means none.
    """
    logs: LogSpec = Field(default_factory=LogSpec)
    """The unit's logs: transcript rotation and the bootstraps kept."""
    notify: NotifySpec = Field(default_factory=NotifySpec)
    """A command to run on some of the unit's events (a desktop notification, a chat message).
    """
    pty: PtySpec = Field(default_factory=PtySpec)
    """The size of the session's terminal."""
    secrets: list[str] = []  # noqa: RUF012 (pydantic copies it)
    """More secrets to hide, as regular expressions (Python `re`): what one matches is shown as
    `***` in the kept bootstraps, transcripts, events, history and status. Without it agentd
    hides the values of the env vars above, and in the state values assigned to such names
    (`API_TOKEN=...`, `password: ...`) and well-known token shapes (`sk-...`, `ghp_...`,
    `AKIA...`, private keys).
    """
    _secret_patterns: list[re.Pattern[str]] = PrivateAttr(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        data = apply_preset(data)
        if isinstance(data, dict) and data.get("worktree") is not None and "workdir" not in data:
            data = {**data, "workdir": "."}  # the worktree itself (``_expand_workdir``)
        return data

    @field_validator("command")
    @classmethod
    def _command(cls, value: list[str]) -> list[str]:
        return expanded_argv(value)

    @field_validator("worktree")
    @classmethod
    def _worktree_repo(cls, value: WorktreeSpec | None, info: ValidationInfo) -> Any:
        """The repository made absolute (relative to the unit file); it must exist."""
        if value is None:
            return None
        repo = value.repo
        source = info.data.get("source")
        if not repo.is_absolute() and isinstance(source, Path):
            repo = source.parent / repo
        repo = Path(os.path.abspath(repo))
        try:
            _must_be_dir(repo)
        except ValueError as exc:
            raise KeyProblem(("repo",), str(exc)) from None
        return value.model_copy(update={"repo": repo})

    @field_validator("workdir", mode="before")
    @classmethod
    def _expand_workdir(cls, value: Any, info: ValidationInfo) -> Any:
        """Expanded and made absolute; a relative one is relative to the unit file, or
        with ``worktree`` to the worktree, which it must be inside."""
        if not isinstance(value, str | Path):
            return value
        path = Path(expand(str(value)))
        tree = info.data.get("worktree")
        if isinstance(tree, WorktreeSpec):
            inside = Path(os.path.abspath(tree.path / path))
            if not inside.is_relative_to(tree.path):
                raise ValueError(
                    "with worktree, workdir is the worktree or a directory in it "
                    f"(relative to it); {str(path)!r} is outside {str(tree.path)!r}"
                )
            return inside
        source = info.data.get("source")
        if not path.is_absolute() and isinstance(source, Path):
            path = source.parent / path
        return Path(os.path.abspath(path))

    @field_validator("workdir")
    @classmethod
    def _workdir_exists(cls, value: Path, info: ValidationInfo) -> Path:
        if info.context and info.context.get("probe"):
            return value  # `agentd check` looks past a missing workdir for more problems
        if not isinstance(info.data.get("worktree"), WorktreeSpec):
            _must_be_dir(value)  # a worktree's is made with it, at the first session
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

    @field_validator("secrets")
    @classmethod
    def _secrets_compile(cls, value: list[str]) -> list[str]:
        for index, pattern in enumerate(value):
            try:
                compiled = compile_regex(pattern)
            except ValueError as exc:
                raise KeyProblem((index,), str(exc)) from None
            if compiled.search("") is not None:
                raise KeyProblem(
                    (index,),
                    f"{pattern!r} matches empty text, so it would hide "
                    "nothing and garble everything; make it match only the secret",
                )
        return value

    @property
    def secret_patterns(self) -> list[re.Pattern[str]]:
        """The compiled ``secrets``, compiled once."""
        if len(self._secret_patterns) != len(self.secrets):
            self._secret_patterns = [compile_regex(p) for p in self.secrets]
        return self._secret_patterns

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

    def with_pty(self, cols: int, rows: int) -> Unit:
        """This unit with a ``cols`` x ``rows`` terminal (the size of an attached one)."""
        return self.model_copy(
            update={"pty": self.pty.model_copy(update={"cols": cols, "rows": rows})}
        )

    @property
    def state_dir(self) -> Path:
        """The absolute state dir (``state.dir`` is relative to the workdir)."""
        return self.workdir / self.state.dir

    @property
    def inject_path(self) -> Path:
        """The absolute path file-mode injection writes the bootstrap to."""
        return self.workdir / self.inject.path


def _must_be_dir(value: Path) -> None:
    try:
        is_dir, exists = value.is_dir(), value.exists()
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot use {str(value)!r}: {exc}") from None
    if not exists:
        raise ValueError(f"directory {str(value)!r} does not exist")
    if not is_dir:
        raise ValueError(f"{str(value)!r} is not a directory")
