"""Unit names the supervisor does not run: the errors that say why, and what a
reload changed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentd.errors import AgentdError


class UnknownUnit(KeyError):
    pass


class InvalidUnit(AgentdError):
    """The unit's file does not load, and there is no earlier definition to use."""

    def __init__(self, name: str, problem: dict[str, Any]) -> None:
        where = f"{problem['file']}" + (f":{problem['line']}" if problem.get("line") else "")
        key = f"{problem['key']}: " if problem.get("key") else ""
        super().__init__(
            f"{name}: its unit file does not load ({where}: {key}"
            f"{problem['message']}); fix it (agentd check {problem['file']}) and "
            "agentd loads it by itself"
        )


@dataclass
class Changes:
    """What ``reconcile`` did, by unit name."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # could not be added: why
