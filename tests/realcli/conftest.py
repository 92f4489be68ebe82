"""Fixtures for tests that drive the real agent CLIs against a fake model.

Each CLI is installed once per machine into a cache dir (``install.py``), at the
versions ``pins.py`` names (an environment variable can replace them); the
project dirs and homes are in ``clis.py``. If the registry or the tool is
missing or the install fails, the tests that need it are skipped, and the
reason says so loudly.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realcli.clis import (
    CACHE,
    CLAUDE_CODE,
    CODEX,
    ClaudeProject,
    CodexProject,
    claude_exe,
    codex_exe,
)
from tests.realcli.pins import versions
from tests.support import kill_held

__all__ = ["CACHE", "CLAUDE_CODE", "CODEX", "ClaudeProject", "CodexProject", "claude_exe"]


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The real Claude Code, the first pinned version (installed into the cache on first use)."""
    return claude_exe(CLAUDE_CODE)


@pytest.fixture(scope="session", params=versions("claude-code"))
def claude_any(request: pytest.FixtureRequest) -> tuple[str, Path]:
    """Each pinned Claude Code, as (version, program): a test using it runs once per version."""
    version: str = request.param
    return version, claude_exe(version)


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    """The real Codex CLI, pinned (installed into the cache on first use)."""
    return codex_exe(CODEX)


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
    for proc in left:
        kill_held(proc)
    said = [f"{p.pid}: {' '.join(p.info.get('cmdline') or [])[:120]}" for p in left]
    assert not left, f"Codex processes outlived the test: {said}"
