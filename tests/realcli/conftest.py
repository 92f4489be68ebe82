"""Fixtures for tests that drive the real Claude Code and Codex CLI against a fake model.

Each CLI is installed from npm once per machine (``clis.py``); if npm is
missing or the install fails, every test here is skipped, and the reason says so loudly.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realcli.clis import CACHE, CLAUDE_CODE, CODEX, ClaudeProject, CodexProject, pinned


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The real Claude Code, pinned (installed into the cache on first use)."""
    prefix = CACHE / f"claude-code-{CLAUDE_CODE}"
    return pinned(
        "@anthropic-ai/claude-code",
        CLAUDE_CODE,
        prefix,
        prefix / "node_modules" / ".bin" / "claude",
    )


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    """The real Codex CLI, pinned (installed into the cache on first use)."""
    prefix = CACHE / f"codex-{CODEX}"
    return pinned("@openai/codex", CODEX, prefix, prefix / "node_modules" / ".bin" / "codex")


@pytest.fixture
def claude_project(tmp_path: Path, claude_bin: Path) -> Iterator[ClaudeProject]:
    yield ClaudeProject(tmp_path, claude_bin)


@pytest.fixture
def codex_project(tmp_path: Path, codex_bin: Path) -> Iterator[CodexProject]:
    project = CodexProject(tmp_path, codex_bin)
    yield project
    deadline = time.monotonic() + 5.0  # the TUI may still be on its way out
    while (left := project.processes()) and time.monotonic() < deadline:
        time.sleep(0.1)
    for line in left:
        with contextlib.suppress(OSError):
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
    assert not left, f"Codex processes outlived the test: {left}"
