"""The fake Anthropic model of ``fake_anthropic.py``, run in a thread of the test
process, plus a *brain*: replies derived only from what the model is sent.

``fake_anthropic.py`` is a copy of the workplace's ``shared/realcli`` server
(checked against it by ``test_copies.py``); it stays unmodified. A brain is a
function from a request body to the next scripted step (``{"tool": {...}}``,
``{"reply": "..."}``, each with an optional ``input_tokens``): the model then
knows nothing but its prompt and the conversation, like a real one. The
claude-code preset's prompt names the bootstrap's file: a brain reads it first
with the Read tool (``read_bootstrap``), as a real model does, and finds the
bootstrap in what the session was ``given``.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.realcli import fake_anthropic as fa
from tests.realcli.served import ServedModel

Brain = Callable[[dict[str, Any]], dict[str, Any] | None]
_BASE = json.loads(json.dumps(fa.CONFIG))  # the defaults, before any test changed them


class _Handler(fa.Handler):
    brain: Brain | None = None

    def do_POST(self) -> None:
        raw, body = self._read_body()
        # Only main-loop requests (they carry tools) that are not summaries get a thought.
        if (
            self.brain is not None
            and isinstance(body, dict)
            and body.get("tools")
            and self.path.split("?")[0] == "/v1/messages"
            and not fa.is_summary_request(body)
        ):
            step = self.brain(body)
            if step is not None:
                with fa.LOCK:
                    fa.CONFIG["script"] = [step]
        self.rfile = io.BytesIO(raw)  # hand the body on to the unmodified server
        super().do_POST()


class FakeModel(ServedModel):
    """The fake Anthropic model on 127.0.0.1 (a thread of this process)."""

    def __init__(self, log: Path, brain: Brain | None = None) -> None:
        super().__init__(fa, _BASE, log, _Handler, brain)

    def main_requests(self) -> list[dict[str, Any]]:
        """Requests of the agent loop (they carry tools), summaries included."""
        return [
            r for r in self.requests() if isinstance(r.get("body"), dict) and r["body"].get("tools")
        ]


def first_user_text(body: dict[str, Any]) -> str:
    """The text of the first user message: the prompt a session was started with."""
    for message in body.get("messages") or []:
        if message.get("role") == "user":
            return fa.all_text(message.get("content"))
    return ""


def tool_results(body: dict[str, Any]) -> list[str]:
    """The text of every tool result in the conversation, oldest first."""
    out: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        out += [
            fa.all_text(c.get("content"))
            for c in content
            if isinstance(c, dict) and c.get("type") == "tool_result"
        ]
    return out


def tool(name: str, tokens: int | None = None, **inputs: str) -> dict[str, Any]:
    """A step calling Claude Code's tool ``name`` with ``inputs`` as its input."""
    step: dict[str, Any] = {"tool": {"name": name, "input": inputs}}
    if tokens is not None:
        step["input_tokens"] = tokens
    return step


def bash(command: str, tokens: int | None = None) -> dict[str, Any]:
    return tool("Bash", tokens, command=command, description=command[:40])


READ = re.compile(r"Read (\S+) and follow it")  # the preset's prompt
BIG = 97_000  # reported input tokens: two such replies make Claude Code compact


def given(body: dict[str, Any]) -> str:
    """What the session was given: its prompt and what its tool calls read."""
    return "\n".join([first_user_text(body), *tool_results(body)])


def read_bootstrap(body: dict[str, Any], tokens: int | None = None) -> dict[str, Any] | None:
    """The first step of every session: read the file the prompt names (None once read)."""
    asked = READ.search(first_user_text(body))
    if asked is None or "# agentd bootstrap:" in given(body):
        return None
    return tool("Read", tokens, file_path=asked.group(1))


def compacting_brain(body: dict[str, Any]) -> dict[str, Any] | None:
    """Session 1 runs two commands, each reply reporting ~97k tokens: Claude Code
    compacts. Later sessions only read their bootstrap (then the default reply)."""
    done = len(tool_results(body)) - 1  # commands run after reading the bootstrap
    if "session 1" not in given(body) or done >= 2:
        return read_bootstrap(body)
    return bash(f"echo {('one', 'two')[done]}", BIG)
