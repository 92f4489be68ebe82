"""The ``complete`` section of a unit: the completion gate.

A session end that would make the unit ``done`` (a success code, or the
state marked complete) first runs ``verify`` in the workdir
(``agentd.supervisor.verify`` runs it); only if it exits 0 is the unit
``done``. Otherwise the completion is refused and a new session is told why.
"""

from __future__ import annotations

import shlex
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator

from agentd.config.fields import Duration, StrictModel, expand, scalar_text
from agentd.errors import KeyProblem

SHELL = "/bin/sh"


def verify_argv(value: Any) -> Any:
    """A list runs as it is; a string runs with ``/bin/sh -c`` (a Dockerfile's shell form),
    so ``pytest -q && ruff check .`` means what it says."""
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("must not be empty")
        return [SHELL, "-c", value]
    if isinstance(value, list):
        return [scalar_text(item) for item in value]
    return value


def shown(argv: list[str]) -> str:
    """The check as a person wrote it: the shell text, or the argv joined like a shell."""
    if len(argv) == 3 and argv[:2] == [SHELL, "-c"]:
        return argv[2]
    return shlex.join(argv)


class CompleteSpec(StrictModel):
    verify: Annotated[list[str], BeforeValidator(verify_argv)]
    """The check that must pass before the unit is `done`, run in the workdir: a list (the
    program and its arguments; `~` and `$VARS` expanded) or a string, run with `/bin/sh -c`.
    Exit 0: `done`; anything else refuses the completion (reason `verify-failed`) and the next
    session is told the command and the end of its output.
    """
    timeout: Annotated[Duration, Field(gt=0)] = 600
    """How long the check may run; then its whole process tree is ended (as a session's is:
    `stop.signal`, then SIGKILL after `stop.grace`) and the completion is refused.
    """
    attempts: Annotated[int, Field(ge=1)] = 3
    """After this many refused completions (since the unit was started) the unit ends `failed`
    (reason `verify-failed`).
    """

    @field_validator("verify")
    @classmethod
    def _verify(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("must not be empty")
        if not value[0].strip():
            raise KeyProblem((0,), "the program name is empty")
        if value[:2] == [SHELL, "-c"]:
            return value  # the shell expands what the text says, when it runs
        return [expand(arg) for arg in value]

    @property
    def command(self) -> str:
        """The check as the unit file gave it, for people and the bootstrap."""
        return shown(self.verify)
