"""What a bootstrap is rendered from: one value, built by the caller."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentd.memory.layout import LayoutFile


@dataclass(frozen=True)
class BootstrapContext:
    unit: str
    session: int  # the session about to start (1-based)
    last_reason: str | None  # why the previous session ended; None for the first
    state_dir: Path  # absolute
    workdir: Path
    layout: Sequence[LayoutFile]
    budget_tokens: int
    now: float  # epoch seconds
    readonly_hashes: Mapping[str, str] = field(default_factory=dict)  # layout path -> sha256
    since_commit: str | None = None  # git HEAD at the previous session's start
    unchanged_sessions: int = 0  # sessions in a row that left the state dir unchanged
