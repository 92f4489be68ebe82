"""The real Gemini CLI and aider against their fake models: the models (each a
copy of a workplace ``shared/realcli`` server run in a thread, plus a *brain*),
the project dirs and homes that let each CLI start straight into its work, and
the units that run them on their presets.

Gemini CLI talks to ``fake_gemini.py`` (``GOOGLE_GEMINI_BASE_URL``, an API key);
``seed_gemini.py`` writes its settings (API-key auth, the project trusted, the
footer's context figure shown). aider talks to ``fake_openai.py``'s Chat
Completions, configured by environment so that the unit's command stays the
preset's; offline it needs litellm's price map in ``~/.aider/caches``.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentd.config.presets import load_cli_preset
from tests.realcli import fake_gemini as fg
from tests.realcli import fake_openai as fo
from tests.realcli.install import npm_cli, pip_cli
from tests.realcli.pins import AIDER, GEMINI
from tests.realcli.served import ServedModel

Brain = Callable[[dict[str, Any]], dict[str, Any] | None]
HERE = Path(__file__).resolve().parent
WINDOW = 1_048_576  # Gemini CLI 0.61's tokenLimit() for every model


# -- Gemini ------------------------------------------------------------------------------
NODE_MAJOR = 20  # Gemini CLI 0.61's engines.node: ">=20.0.0"


def gemini_exe() -> Path:
    node = _node_major()
    if node is not None and node < NODE_MAJOR:
        pytest.skip(
            f"REAL CLI TESTS SKIPPED: Gemini CLI {GEMINI} needs Node {NODE_MAJOR} or later; "
            f"this node is {node} (Debian 12's is 18: install a newer one, e.g. NodeSource's)"
        )
    return npm_cli("@google/gemini-cli", GEMINI, "gemini-cli", "gemini")


def _node_major() -> int | None:
    """The major version of the ``node`` on PATH (None: none, or it does not say)."""
    node = shutil.which("node")
    if node is None:
        return None  # npm_cli says npm is missing
    said = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    major = said.stdout.strip().lstrip("v").split(".")[0]
    return int(major) if major.isdigit() else None


def _strings(obj: Any) -> list[str]:
    out: list[str] = []
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, dict):
        for value in obj.values():
            out += _strings(value)
    elif isinstance(obj, list):
        for value in obj:
            out += _strings(value)
    return out


def gemini_user_texts(body: dict[str, Any]) -> list[str]:
    """The text of every user message of the conversation, oldest first (not the
    tool results Gemini also sends as the user's)."""
    return [
        "\n".join(p["text"] for p in c.get("parts") or [] if isinstance(p.get("text"), str))
        for c in body.get("contents") or []
        if c.get("role") == "user" and any("text" in p for p in c.get("parts") or [])
    ]


def gemini_tool_results(body: dict[str, Any]) -> list[str]:
    """What each tool call returned (``functionResponse``), oldest first."""
    return [
        "\n".join(_strings(p["functionResponse"].get("response")))
        for c in body.get("contents") or []
        for p in c.get("parts") or []
        if isinstance(p.get("functionResponse"), dict)
    ]


def gemini_given(body: dict[str, Any]) -> str:
    return "\n".join([*gemini_user_texts(body), *gemini_tool_results(body)])


def _is_main(body: dict[str, Any]) -> bool:
    """A request of the agent loop (it carries tools): not a compression, routing
    or other JSON utility request."""
    system = "\n".join(_strings(body.get("systemInstruction") or {}))
    gen = body.get("generationConfig") or {}
    return (
        bool(body.get("tools"))
        and "state_snapshot" not in system
        and "<state_snapshot>" not in fg.last_user_text(body)
        and gen.get("responseMimeType") != "application/json"
        and not gen.get("responseJsonSchema")
        and not gen.get("responseSchema")
    )


class _GeminiHandler(fg.Handler):
    brain: Brain | None = None

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(size) if size else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        if self.brain is not None and isinstance(body, dict) and _is_main(body):
            step = self.brain(body)
            if step is not None:
                with fg.LOCK:
                    fg.CONFIG["script"] = [step]
        self.rfile = io.BytesIO(raw)  # hand the body on to the unmodified server
        super().do_POST()


_GEMINI_BASE = json.loads(json.dumps(fg.CONFIG))


class FakeGemini(ServedModel):
    def __init__(self, log: Path, brain: Brain | None = None) -> None:
        super().__init__(fg, _GEMINI_BASE, log, _GeminiHandler, brain)

    def main_requests(self) -> list[dict[str, Any]]:
        return [
            r
            for r in self.requests()
            if r.get("method") == "POST" and isinstance(r.get("body"), dict) and _is_main(r["body"])
        ]

    def compressions(self) -> list[dict[str, Any]]:
        return [r for r in self.requests() if r.get("note") == "summary"]


class GeminiProject:
    """A project dir and a HOME seeded so Gemini CLI starts straight into its work."""

    def __init__(self, root: Path, gemini: Path, threshold: float | None = None) -> None:
        self.home = root / "gemhome"
        self.project = root / "p"
        self.project.mkdir(parents=True)
        self.home.mkdir()
        self.gemini = gemini
        seed = [sys.executable, str(HERE / "seed_gemini.py"), str(self.home), str(self.project)]
        subprocess.run(
            [*seed, "" if threshold is None else str(threshold)], check=True, capture_output=True
        )

    def settings(self, **more: Any) -> None:
        """Merge ``more`` into the user's settings.json (as a user would edit it)."""
        path = self.home / ".gemini" / "settings.json"
        current = json.loads(path.read_text(encoding="utf-8"))
        for key, value in more.items():
            if isinstance(value, dict) and isinstance(current.get(key), dict):
                current[key].update(value)
            else:
                current[key] = value
        path.write_text(json.dumps(current, indent=2), encoding="utf-8")

    def unit(self, model_url: str, **overrides: Any) -> dict[str, Any]:
        """A unit on the gemini preset running this Gemini CLI unattended: the
        preset's command plus --yolo (tools run without asking)."""
        _program, *args = load_cli_preset("gemini")["command"]
        unit: dict[str, Any] = {
            "preset": "gemini",
            "command": [str(self.gemini), "--yolo", *args],
            "workdir": str(self.project),
            "env": {
                "HOME": str(self.home),
                "GOOGLE_GEMINI_BASE_URL": model_url,
                "GEMINI_API_KEY": "fake",
                # it starts node twice otherwise (a relaunch with a bigger heap): seconds
                "GEMINI_CLI_NO_RELAUNCH": "true",
            },
            "restart": {"min_uptime": 0, "delay": "100ms"},
            "stop": {"signal": "TERM", "grace": "3s"},
        }
        unit.update(overrides)
        return unit


def shell(command: str, tokens: int) -> dict[str, Any]:
    """A step: Gemini's shell tool runs ``command``; the reply reports ``tokens``."""
    return {
        "tool": {"name": "run_shell_command", "args": {"command": command}},
        "prompt_tokens": tokens,
    }


# -- aider -------------------------------------------------------------------------------
def aider_exe() -> Path:
    return pip_cli("aider-chat", AIDER, "aider", "aider")


class _ChatHandler(fo.Handler):
    """Chat Completions with a brain: ``{"reply": text, "input_tokens": N}`` or
    ``{"error": {...}}`` per request, from what the request holds."""

    brain: Brain | None = None

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(size) if size else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        if self.brain is not None and isinstance(body, dict) and body.get("messages"):
            step = self.brain(body)
            with fo.LOCK:
                if step and "error" in step:
                    fo.CONFIG["error_next"] = step["error"]
                elif step:
                    fo.CONFIG["reply"] = step.get("reply", fo.CONFIG["reply"])
                    fo.CONFIG["input_tokens"] = int(step.get("input_tokens", 12))
        self.rfile = io.BytesIO(raw)
        super().do_POST()


_OPENAI_BASE = json.loads(json.dumps(fo.CONFIG))


class FakeChat(ServedModel):
    def __init__(self, log: Path, brain: Brain | None = None) -> None:
        super().__init__(fo, _OPENAI_BASE, log, _ChatHandler, brain)

    def chats(self) -> list[dict[str, Any]]:
        return [r for r in self.requests() if "chat/completions" in str(r.get("path"))]


def chat_text(body: dict[str, Any]) -> str:
    return "\n".join(_strings([m.get("content") for m in body.get("messages") or []]))


class AiderProject:
    """A project dir and a HOME from which aider runs offline against the fake model."""

    def __init__(self, root: Path, aider: Path) -> None:
        self.home = root / "aiderhome"
        self.project = root / "p"
        self.project.mkdir(parents=True)
        caches = self.home / ".aider" / "caches"
        caches.mkdir(parents=True)
        prices = list(
            aider.parent.parent.glob(
                "lib/python*/site-packages/litellm/model_prices_and_context_window_backup.json"
            )
        )
        if not prices:
            pytest.skip(f"REAL CLI TESTS SKIPPED: no litellm price map beside {aider}")
        shutil.copy(prices[0], caches / "model_prices_and_context_window.json")
        self.aider = aider

    def unit(self, model_url: str, **overrides: Any) -> dict[str, Any]:
        """A unit on the aider preset: the preset's command (its program made this
        aider's), the model and switches by environment."""
        _program, *args = load_cli_preset("aider")["command"]
        unit: dict[str, Any] = {
            "preset": "aider",
            "command": [str(self.aider), *args],
            "workdir": str(self.project),
            "env": {
                "HOME": str(self.home),
                "OPENAI_API_BASE": f"{model_url}/v1",
                "OPENAI_API_KEY": "sk-fake",
                "AIDER_MODEL": "openai/fake",
                "AIDER_GIT": "false",
                "AIDER_CHECK_UPDATE": "false",
                "AIDER_ANALYTICS_DISABLE": "true",
                "AIDER_SHOW_RELEASE_NOTES": "false",
                "AIDER_SHOW_MODEL_WARNINGS": "false",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            },
            "restart": {"min_uptime": 0, "delay": "100ms"},
            "stop": {"signal": "INT", "grace": "5s"},
        }
        unit.update(overrides)
        return unit
