"""Fixtures for tests that drive the real Claude Code against a fake model.

Claude Code is installed from npm once per machine into a cache dir
(``$AGENTD_TEST_CACHE``, default ``~/.cache/agentd-tests``), pinned to the
version these tests were written against. If npm is missing or the install
fails, every test here is skipped, and the reason says so loudly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.realcli import seed_cli_homes

CLAUDE_CODE = "2.1.197"
CACHE = Path(os.environ.get("AGENTD_TEST_CACHE") or Path.home() / ".cache" / "agentd-tests")


def _install(package: str, version: str, prefix: Path, exe: Path) -> Path:
    if exe.exists():
        return exe
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"REAL CLI TESTS SKIPPED: npm is not on PATH, cannot install {package}")
    try:
        done = subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
             f"{package}@{version}"],
            capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.skip(f"REAL CLI TESTS SKIPPED: npm install {package}@{version} took over 240 s")
    if done.returncode != 0 or not exe.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        pytest.skip(f"REAL CLI TESTS SKIPPED: npm install {package}@{version} failed: "
                    + " | ".join(tail))
    return exe


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The real Claude Code, pinned (installed into the cache on first use)."""
    prefix = CACHE / f"claude-code-{CLAUDE_CODE}"
    exe = _install("@anthropic-ai/claude-code", CLAUDE_CODE, prefix,
                   prefix / "node_modules" / ".bin" / "claude")
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    if CLAUDE_CODE not in version.stdout:
        pytest.skip(f"REAL CLI TESTS SKIPPED: {exe} says {version.stdout.strip()!r}, "
                    f"not {CLAUDE_CODE}")
    return exe


class ClaudeProject:
    """A project dir and a HOME seeded so Claude Code starts straight into its prompt."""

    def __init__(self, root: Path, claude: Path) -> None:
        self.home = root / "cchome"
        self.project = root / "p"
        self.project.mkdir(parents=True)
        self.home.mkdir()
        seed_cli_homes.claude(str(self.home), str(self.project))
        self.claude = claude

    def env(self, model_url: str, **extra: str) -> dict[str, str]:
        return {"HOME": str(self.home), "ANTHROPIC_BASE_URL": model_url,
                "ANTHROPIC_AUTH_TOKEN": "sk-fake", "IS_SANDBOX": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                # the smallest window Claude Code accepts: ~97k reported tokens compact it
                "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000", **extra}

    def unit(self, model_url: str, **overrides: Any) -> dict[str, Any]:
        """A unit on the claude-code preset running this Claude Code against the model."""
        unit: dict[str, Any] = {
            "preset": "claude-code",
            "command": [str(self.claude), "--dangerously-skip-permissions", "{bootstrap}"],
            "workdir": str(self.project),
            "env": self.env(model_url),
            "restart": {"min_uptime": 0, "delay": "100ms"},
            "stop": {"signal": "TERM", "grace": "3s"},
        }
        unit.update(overrides)
        return unit


@pytest.fixture
def claude_project(tmp_path: Path, claude_bin: Path) -> Iterator[ClaudeProject]:
    yield ClaudeProject(tmp_path, claude_bin)
