"""The real agent CLIs the tests drive: each installed from npm once per machine
into a cache dir (``$AGENTD_TEST_CACHE``, default ``~/.cache/agentd-tests``),
pinned to the version these tests were written against, and the project dirs
and homes seeded so that each starts straight into its prompt. The fixtures
that hand them to tests are in ``conftest.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import psutil
import pytest
from filelock import FileLock, Timeout

from agentd.config.presets import load_cli_preset
from tests.realcli import seed_cli_homes

CLAUDE_CODE = "2.1.197"
CODEX = "0.171.0"
CACHE = Path(os.environ.get("AGENTD_TEST_CACHE") or Path.home() / ".cache" / "agentd-tests")
INSTALL_TIMEOUT = 240  # s: one npm install


def _install(package: str, version: str, prefix: Path, exe: Path) -> Path:
    """Install ``package@version`` into ``prefix`` unless ``exe`` is there: once per
    machine, however many test processes (xdist's workers, two runs) ask at once."""
    if exe.exists():
        return exe
    prefix.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(prefix.parent / f"{prefix.name}.lock"))
    try:
        with lock.acquire(timeout=INSTALL_TIMEOUT + 60):  # the holder's install has its own
            if exe.exists():  # another process installed it while we waited
                return exe
            return _npm_install(package, version, prefix, exe)
    except Timeout:
        pytest.skip(f"REAL CLI TESTS SKIPPED: another install of {package} holds {lock.lock_file}")


def _npm_install(package: str, version: str, prefix: Path, exe: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"REAL CLI TESTS SKIPPED: npm is not on PATH, cannot install {package}")
    try:
        done = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                f"{package}@{version}",
            ],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        pytest.skip(
            f"REAL CLI TESTS SKIPPED: npm install {package}@{version} took over {INSTALL_TIMEOUT} s"
        )
    if done.returncode != 0 or not exe.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        pytest.skip(
            f"REAL CLI TESTS SKIPPED: npm install {package}@{version} failed: " + " | ".join(tail)
        )
    return exe


def pinned(package: str, version: str, prefix: Path, exe: Path) -> Path:
    """``exe`` of ``package@version``, installed on first use, checked by its --version."""
    _install(package, version, prefix, exe)
    said = subprocess.run(
        [str(exe), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    if version not in said.stdout:
        pytest.skip(f"REAL CLI TESTS SKIPPED: {exe} says {said.stdout.strip()!r}, not {version}")
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
        return {
            "HOME": str(self.home),
            "ANTHROPIC_BASE_URL": model_url,
            "ANTHROPIC_AUTH_TOKEN": "sk-fake",
            "IS_SANDBOX": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            # the smallest window Claude Code accepts: ~97k reported tokens compact it
            "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000",
            **extra,
        }

    def unit(self, model_url: str, **overrides: Any) -> dict[str, Any]:
        """A unit on the claude-code preset running this Claude Code against the model
        unattended, as its comment says a user would: the preset's command and flags,
        plus no permission prompts."""
        _program, *flags, prompt = load_cli_preset("claude-code")["command"]
        unit: dict[str, Any] = {
            "preset": "claude-code",
            "command": [str(self.claude), *flags, "--dangerously-skip-permissions", prompt],
            "workdir": str(self.project),
            "env": self.env(model_url),
            "restart": {"min_uptime": 0, "delay": "100ms"},
            "stop": {"signal": "TERM", "grace": "3s"},
        }
        unit.update(overrides)
        return unit


class CodexProject:
    """A project dir and a CODEX_HOME seeded so Codex starts straight into its prompt,
    against the fake model on ``port`` (auto-compacting past ``compact_limit`` tokens)."""

    def __init__(self, root: Path, codex: Path) -> None:
        self.home = root / "codexhome"
        self.project = root / "p"
        self.project.mkdir(parents=True)
        self.codex = codex

    def seed(self, port: int, compact_limit: int | None = None, **config: int | str) -> None:
        seed_cli_homes.codex(str(self.home), str(self.project), port, compact_limit)
        if config:  # more top-level keys (TOML values), as a user would add them to config.toml
            toml = (self.home / "config.toml").read_text(encoding="utf-8")
            keys = "".join(f"{key} = {value}\n" for key, value in config.items())
            (self.home / "config.toml").write_text(keys + toml, encoding="utf-8")

    def unit(self, **overrides: Any) -> dict[str, Any]:
        """A unit on the codex preset running this Codex unattended, as its comment
        says a user would: the preset's command and flags, plus no approvals or sandbox."""
        _program, *flags, bootstrap = load_cli_preset("codex")["command"]
        unit: dict[str, Any] = {
            "preset": "codex",
            "command": [
                str(self.codex),
                *flags,
                "--dangerously-bypass-approvals-and-sandbox",
                bootstrap,
            ],
            "workdir": str(self.project),
            "env": {"CODEX_HOME": str(self.home), "FAKE_API_KEY": "x"},
            "restart": {"min_uptime": 0, "delay": "100ms"},
            "stop": {"signal": "TERM", "grace": "5s"},
        }
        unit.update(overrides)
        return unit

    def processes(self) -> list[str]:
        """Every process still running with this CODEX_HOME (the TUI, an app-server
        daemon that reparented to init): none may outlive a test."""
        home = str(self.home)
        left: list[str] = []
        for proc in psutil.process_iter(["pid", "cmdline", "environ"]):
            try:
                if proc.status() == psutil.STATUS_ZOMBIE:
                    continue
            except psutil.Error:
                continue
            cmdline = " ".join(proc.info.get("cmdline") or [])
            if (proc.info.get("environ") or {}).get("CODEX_HOME") == home or home in cmdline:
                left.append(f"{proc.info['pid']}: {cmdline[:120]}")
        return left
