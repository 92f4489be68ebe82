"""The real agent CLIs the tests drive, and the project dirs and homes seeded so
that each starts straight into its prompt. Their versions are pinned in
``pins.py`` (an environment variable can replace them); ``install.py`` installs
each once per machine into a cache dir (``$AGENTD_TEST_CACHE``, default
``~/.cache/agentd-tests``). The fixtures that hand them to tests are in
``conftest.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psutil

from agentd.config.presets import load_cli_preset
from tests.realcli import seed_cli_homes
from tests.realcli.install import CACHE, npm_cli
from tests.realcli.pins import CLAUDE_CODE, CODEX

__all__ = ["CACHE", "CLAUDE_CODE", "CODEX", "ClaudeProject", "CodexProject", "claude_exe"]


def claude_exe(version: str) -> Path:
    """The real Claude Code at ``version`` (installed into the cache on first use)."""
    return npm_cli("@anthropic-ai/claude-code", version, "claude-code", "claude")


def codex_exe(version: str) -> Path:
    """The real Codex CLI at ``version`` (installed into the cache on first use)."""
    return npm_cli("@openai/codex", version, "codex", "codex")


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
        # HOME too: Codex runs its commands in a login shell, which would read the
        # machine's ~/.bashrc (pyenv's init there waits up to 60 s on a rehash lock
        # that a shell killed with its session leaves behind)
        self.user_home = root / "home"
        self.project = root / "p"
        self.project.mkdir(parents=True)
        self.user_home.mkdir()
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
            "env": {
                "CODEX_HOME": str(self.home),
                "HOME": str(self.user_home),
                "FAKE_API_KEY": "x",
            },
            "restart": {"min_uptime": 0, "delay": "100ms"},
            "stop": {"signal": "TERM", "grace": "5s"},
        }
        unit.update(overrides)
        return unit

    def processes(self) -> list[psutil.Process]:
        """Every process still running with this CODEX_HOME (the TUI, an app-server
        daemon that reparented to init): none may outlive a test."""
        home = str(self.home)
        left: list[psutil.Process] = []
        for proc in psutil.process_iter(["pid", "cmdline", "environ"]):
            try:
                if proc.status() == psutil.STATUS_ZOMBIE:
                    continue
            except psutil.Error:
                continue
            cmdline = " ".join(proc.info.get("cmdline") or [])
            if (proc.info.get("environ") or {}).get("CODEX_HOME") == home or home in cmdline:
                left.append(proc)
        return left
