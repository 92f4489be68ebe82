"""The real Codex CLI (pinned) under `preset: codex` alone: the hooks the preset
gives each session, and a usage limit.

- compaction: the preset passes agentd's PreCompact and SessionStart hooks with
  ``-c hooks.*=...`` and ``--dangerously-bypass-hook-trust`` (without it the TUI
  stops at a "Hooks need review" dialog); the PreCompact hook ends the session
  while Codex waits for it, so its compaction request never reaches the model,
  and session 2 reads its bootstrap (the request log shows it). No
  ``.codex/hooks.json`` is written into the project;
- a usage limit: the model answers 429 ``usage_limit_reached`` with the reset
  time; Codex draws `You’ve hit your usage limit. ... Try again at 3:45 PM.`
  and agentd pauses the unit until then.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agentd.times import parse_iso
from tests.realcli.agentd_run import session_starts
from tests.realcli.clis import CodexProject
from tests.realcli.openai_model import FakeOpenAI, _Handler, tool_outputs, user_texts
from tests.realcli.runs import run_until, sentinel, state_change
from tests.realcli.served import ServedModel
from tests.support import write_unit

pytestmark = [pytest.mark.timeout(100), pytest.mark.slow]
LIMIT = 2_000  # model_auto_compact_token_limit
BIG = 5_000  # reported input tokens: past the limit
READ = re.compile(r"Read (\S+) and follow it")  # the preset's prompt


def given(body: dict[str, Any]) -> str:
    """What the session was given: its prompt and what its tool calls read."""
    return "\n".join([user_texts(body), *tool_outputs(body)])


def read_bootstrap(body: dict[str, Any], tokens: int) -> dict[str, Any] | None:
    """The first step of every session: read the file the prompt names."""
    asked = READ.search(user_texts(body))
    if asked is None or "# agentd bootstrap:" in given(body):
        return None
    return {"exec": f"cat {asked.group(1)}", "input_tokens": tokens}


def _compacting_brain(body: dict[str, Any]) -> dict[str, Any] | None:
    """Session 1 runs one command reporting more tokens than the limit (Codex must
    compact before it sends the output back); session 2 only reads its bootstrap."""
    if "session 2" in given(body) or len(tool_outputs(body)) > 1:
        return {"reply": "carrying on", "input_tokens": 100}
    return read_bootstrap(body, 100) or {"exec": "echo one > one.txt", "input_tokens": BIG}


def second_bootstrap_read(model: FakeOpenAI, unit: str) -> bool:
    return any(
        f"# agentd bootstrap: {unit}, session 2" in given(r["body"]) for r in model.main_requests()
    )


def test_compaction_is_caught_by_the_hooks_the_preset_gives(
    home: Path, tmp_path: Path, codex_project: CodexProject
) -> None:
    with FakeOpenAI(tmp_path / "requests.jsonl", brain=_compacting_brain) as model:
        codex_project.seed(model.port, LIMIT)
        write_unit(home, "cxh", codex_project.unit())
        run_until(
            home,
            "cxh",
            lambda: second_bootstrap_read(model, "cxh"),
            what="session 2 reading its bootstrap",
        )
    assert (codex_project.project / "one.txt").read_text() == "one\n", "the command did not run"
    starts = session_starts(home, "cxh")
    print(
        f"codex: PreCompact hook (-c hooks.PreCompact), {len(model.summaries())} summary requests"
    )
    assert starts[1]["reason"] == "sentinel:precompact", starts
    assert model.summaries() == [], "Codex's compaction request reached the model"
    assert not (codex_project.project / ".codex").exists(), "the project's settings were written"


class _LimitHandler(_Handler):
    """Error steps whose ``body`` is the whole JSON error (Codex reads more than a
    message from a 429: its type, plan and reset time)."""

    def _error(self, e: dict[str, Any]) -> None:
        if "body" not in e:
            return super()._error(e)
        return self._send_json(int(e.get("status", 429)), {"error": e["body"]})


class LimitOpenAI(ServedModel):
    def __init__(self, log: Path) -> None:
        from tests.realcli import fake_openai as fo
        from tests.realcli.openai_model import _BASE

        super().__init__(fo, _BASE, log, _LimitHandler, None)

    def main_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests() if isinstance(r.get("body"), dict)]


def test_a_usage_limit_pauses_until_the_time_it_printed(
    home: Path, tmp_path: Path, codex_project: CodexProject
) -> None:
    reset = int(time.time()) + 2 * 3600 + 300
    error = {
        "status": 429,
        "body": {
            "type": "usage_limit_reached",
            "message": "The usage limit has been reached",
            "plan_type": "plus",
            "resets_at": reset,
            "resets_in_seconds": reset - int(time.time()),
        },
    }
    with LimitOpenAI(tmp_path / "requests.jsonl") as model:
        model.control(error_next=error)
        codex_project.seed(model.port)
        write_unit(home, "cxl", codex_project.unit())
        paused = run_until(home, "cxl", lambda: state_change(home, "paused"), what="paused")
        asked = [user_texts(r["body"]) for r in model.requests() if isinstance(r.get("body"), dict)]
    hit = sentinel(home)
    assert hit is not None, paused
    print(f"codex: {hit['name']} on {hit['line'].strip()!r} until {hit['until']}")
    assert hit["name"] == "usage-limit-reset", hit
    assert "try again at" in hit["line"], hit  # the second row of the message
    until = parse_iso(hit["until"])
    assert until is not None and abs(until - reset) < 61, (
        hit["until"],
        datetime.fromtimestamp(reset),
    )
    assert any("Read " in text for text in asked), json.dumps(asked)[:500]
