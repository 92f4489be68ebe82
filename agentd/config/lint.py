"""What ``agentd check`` finds beyond the loader: what the runtime would meet.

The loader accepts a unit whose command is not installed yet (it may be by
the time the unit starts); ``check`` says so now, as exec would later:

- ``command[0]`` not found in PATH, missing, a directory or not executable
  (error: the unit would fail at its first session);
- ``{bootstrap}`` in ``command``: the bootstrap (the agent's state) is on the
  command line, where any user of the machine reads it with ``ps``
  (warning; ``{bootstrap_file}`` passes its path instead);
- a bootstrap that could outgrow what exec takes in one argument or in all
  of argv and the environment (warning: the session would fail with E2BIG);
- ``complete.verify``'s program not found (error: every completion would be
  refused), ``worktree.repo`` not in a git repository (error);

Pure apart from looking the programs up, as exec would, and the repository
for its ``.git`` (``lint`` takes the environment and the system's limits as
values).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentd.config.placeholders import placeholders_in
from agentd.config.unit import Unit
from agentd.config.yamllines import Index
from agentd.memory.gitinfo import might_be_a_repo

# What a bootstrap may take beyond its budget: header, warnings, closing rules.
BOOTSTRAP_OVERHEAD = 4096
# Bytes per estimated token in the worst common case (ASCII text: 4 characters a token).
BYTES_PER_TOKEN = 4


@dataclass(frozen=True)
class Finding:
    level: Literal["error", "warning"]
    key: tuple[str | int, ...]  # where in the unit file: ("command", 0), ("env", "PROMPT")
    message: str


@dataclass(frozen=True)
class ArgLimits:
    """What exec takes: all of argv and the environment, and one string of them."""

    total: int
    one: int | None  # Linux's MAX_ARG_STRLEN; None where there is no such limit

    @classmethod
    def of_this_system(cls) -> ArgLimits:
        total = os.sysconf("SC_ARG_MAX") if hasattr(os, "sysconf") else 262144
        one = 32 * os.sysconf("SC_PAGE_SIZE") if os.uname().sysname == "Linux" else None
        return cls(total=total, one=one)


def lint(unit: Unit, env: Mapping[str, str], limits: ArgLimits) -> list[Finding]:
    """What would go wrong when ``unit`` runs under ``env`` (this process's, plus the unit's)."""
    found = _command(unit, env)
    found += _bootstrap_in_argv(unit, env, limits)
    if unit.complete is not None:
        found += _program(unit, env, unit.complete.verify[0], ("complete", "verify", Index(0)))
    if unit.worktree is not None and not might_be_a_repo(unit.worktree.repo):
        found.append(
            Finding(
                "error",
                ("worktree", "repo"),
                f"{unit.worktree.repo} is not in a git repository (no .git in it or above "
                "it): a worktree needs one",
            )
        )
    return found


def _command(unit: Unit, env: Mapping[str, str]) -> list[Finding]:
    program = unit.command[0]
    if placeholders_in(program):
        return []  # known only when the session starts
    return _program(unit, env, program, ("command", Index(0)))


def _program(
    unit: Unit, env: Mapping[str, str], program: str, key: tuple[str | int, ...]
) -> list[Finding]:
    """What exec would say of ``program`` (a name looked up in PATH, or a path)."""
    search = unit.env.get("PATH", env.get("PATH", os.defpath))
    if "/" not in program:
        if shutil.which(program, path=search) is not None:
            return []
        there = [os.path.join(d, program) for d in search.split(os.pathsep) if d]
        blocked = next((p for p in there if os.path.isfile(p)), None)
        if blocked is not None:
            return [Finding("error", key, f"{blocked} is not executable; run: chmod +x {blocked}")]
        return [
            Finding(
                "error",
                key,
                f"{program!r} is not found in PATH ({search}); install it "
                "or give its full path (the daemon's PATH may differ from this shell's)",
            )
        ]
    path = program if os.path.isabs(program) else str(_workdir(unit) / program)
    if not os.path.exists(path):
        return [Finding("error", key, f"{path} does not exist")]
    if os.path.isdir(path):
        return [Finding("error", key, f"{path} is a directory, not a program")]
    if not os.access(path, os.X_OK):
        return [Finding("error", key, f"{path} is not executable; run: chmod +x {path}")]
    return []


STATE_IN_PS = (
    "the bootstrap (the agent's state) is passed on the command line, where every "
    "user of this machine can read it with `ps`; pass its path instead: "
    '{bootstrap_file} (e.g. "Read {bootstrap_file} and follow it")'
)


def state_in_argv(unit: Unit) -> list[int]:
    """Where ``command`` carries the bootstrap's text (``{bootstrap}``), which ``ps`` shows."""
    return [i for i, arg in enumerate(unit.command) if "bootstrap" in placeholders_in(arg)]


def _bootstrap_in_argv(unit: Unit, env: Mapping[str, str], limits: ArgLimits) -> list[Finding]:
    in_command = [(("command", Index(i)), unit.command[i]) for i in state_in_argv(unit)]
    in_env = [
        (("env", name), value)
        for name, value in unit.env.items()
        if "bootstrap" in placeholders_in(value)
    ]
    found = [Finding("warning", key, STATE_IN_PS) for key, _ in in_command[:1]]
    largest = unit.state.budget_tokens * BYTES_PER_TOKEN + BOOTSTRAP_OVERHEAD
    for key, text in in_command + in_env:
        if limits.one is not None and largest + len(text) > limits.one:
            found.append(
                Finding(
                    "warning",
                    key,
                    f"the bootstrap may reach {largest} bytes "
                    f"(state.budget_tokens {unit.state.budget_tokens}), more than "
                    f"the {limits.one} bytes one argument may hold here: the "
                    "session would fail to start (argument list too long); use "
                    "{bootstrap_file} or lower state.budget_tokens",
                )
            )
    copies = len(in_command) + len(in_env)
    environ = sum(len(k) + len(v) + 2 for k, v in {**env, **unit.env}.items())
    if copies and copies * largest + environ > limits.total:
        found.append(
            Finding(
                "warning",
                in_command[0][0] if in_command else in_env[0][0],
                f"{copies} copies of a bootstrap of up to {largest} bytes and "
                f"the environment ({environ} bytes) may pass the {limits.total} "
                "bytes exec takes in all; use {bootstrap_file}",
            )
        )
    return found


def _workdir(unit: Unit) -> Path:
    """Where a relative program is found: the workdir, or - in a worktree not made yet -
    the same place in the repository, whose HEAD the worktree will be made from."""
    tree = unit.worktree
    if tree is None or tree.path.exists():
        return Path(unit.workdir)
    return tree.repo / unit.workdir.relative_to(tree.path)
