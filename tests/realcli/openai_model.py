"""The fake OpenAI Responses model of ``fake_openai.py`` for the real Codex CLI,
run in a thread of the test process, with a *brain* that may call tools.

``fake_openai.py`` is a copy of the workplace's ``shared/realcli`` server
(checked against it by ``test_copies.py``) and only answers in text; this
subclass adds what Codex needs to work inside one turn: a reply that is a call
of Codex's ``exec_command`` tool, which Codex runs in the project and answers
with another request. A brain maps a main request's body to the next step,
``{"exec": "shell command"}`` or ``{"reply": "text"}``, each with an optional
``input_tokens`` (the usage reported); ``None`` gives the server's own reply.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.realcli import fake_openai as fo
from tests.realcli.served import ServedModel

Brain = Callable[[dict[str, Any]], dict[str, Any] | None]
_BASE = json.loads(json.dumps(fo.CONFIG))  # the defaults, before any test changed them


def is_main_request(body: dict[str, Any]) -> bool:
    """A request of Codex's agent loop: it offers tools; a title request offers none
    and asks for a JSON schema (`text`), a compaction asks for a summary."""
    return (
        bool(body.get("tools"))
        and "text" not in body
        and not fo.is_summary_request(fo.last_user_text(body))
    )


def user_texts(body: dict[str, Any]) -> str:
    """Every user message of the conversation, joined: the prompt a session was given
    is among them (after Codex's own environment context)."""
    items = body.get("input")
    if isinstance(items, str):
        return items
    return "\n".join(
        fo.all_text(m.get("content"))
        for m in items or []
        if isinstance(m, dict) and m.get("role") == "user"
    )


def tool_outputs(body: dict[str, Any]) -> list[str]:
    """The output of every tool call in the conversation, oldest first."""
    return [
        str(item.get("output"))
        for item in body.get("input") or []
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


class _Handler(fo.Handler):
    brain: Brain | None = None

    def _responses(self, body: dict[str, Any], text: str, usage_in: int) -> None:
        step = self.brain(body) if self.brain is not None and is_main_request(body) else None
        if step is None:
            return super()._responses(body, text, usage_in)
        tokens = int(step.get("input_tokens", usage_in))
        if "reply" in step:
            return super()._responses(body, str(step["reply"]), tokens)
        self._function_call(body, str(step["exec"]), tokens)
        return None

    def _function_call(self, body: dict[str, Any], command: str, tokens: int) -> None:
        """An `exec_command` call as the Responses API streams it."""
        n = fo.COUNTER[0]
        item = {
            "type": "function_call",
            "id": f"fc_fake_{n}",
            "call_id": f"call_fake_{n}",
            "status": "completed",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": command}),
        }
        usage = {
            "input_tokens": tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens + 5,
        }
        resp = {
            "id": f"resp_fake_{n}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body.get("model", "fake"),
            "output": [item],
            "usage": usage,
        }
        self._sse_start()
        events = [
            (
                "response.created",
                {"response": dict(resp, status="in_progress", output=[], usage=None)},
            ),
            (
                "response.output_item.added",
                {"output_index": 0, "item": dict(item, status="in_progress", arguments="")},
            ),
            ("response.output_item.done", {"output_index": 0, "item": item}),
            ("response.completed", {"response": resp}),
        ]
        for seq, (name, data) in enumerate(events):
            payload = json.dumps(dict(data, type=name, sequence_number=seq))
            self._chunk(f"event: {name}\ndata: {payload}\n\n".encode())
        self._sse_end()


class FakeOpenAI(ServedModel):
    """The fake Responses API on 127.0.0.1 (a thread of this process)."""

    def __init__(self, log: Path, brain: Brain | None = None) -> None:
        super().__init__(fo, _BASE, log, _Handler, brain)

    def main_requests(self) -> list[dict[str, Any]]:
        return [
            r
            for r in self.requests()
            if isinstance(r.get("body"), dict) and is_main_request(r["body"])
        ]
