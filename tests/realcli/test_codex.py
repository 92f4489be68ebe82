"""The real Codex CLI (pinned, from npm) under agentd, against a fake model.

What these prove is about the real CLI: the texts it draws and how it compacts.
Compaction is Codex's own: ``model_auto_compact_token_limit`` is small and the
fake model reports more input tokens than that. Codex 0.171.0 checks the limit
when a turn needs a follow-up request, so a reply that is a tool call
(``exec_command``) makes it compact in the middle of its first turn, with no
second message typed. The preset's prompt names the bootstrap's file, as the
command line is visible in ``ps``: the fake model reads it with a shell command
first, as a real one does. Each test's Codex leaves no process behind (the
``codex_project`` fixture looks for its CODEX_HOME in every process).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.realcli import fake_openai as fo
from tests.realcli.agentd_run import agentctl, running, session_starts, with_agentctl_on_path
from tests.realcli.clis import CodexProject
from tests.realcli.openai_model import FakeOpenAI, tool_outputs, user_texts
from tests.support import events, poll_for, write_unit

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
    """Session 1 runs one command, reporting more tokens than the limit: Codex must
    compact before it sends the command's output back. Session 2 just answers."""
    if "session 2" in given(body) or len(tool_outputs(body)) > 1:
        return {"reply": "carrying on", "input_tokens": 100}
    return read_bootstrap(body, 100) or {"exec": "echo one > one.txt", "input_tokens": BIG}


def test_auto_compaction_restarts_with_a_bootstrap_that_says_why(
    home: Path,
    tmp_path: Path,
    codex_project: CodexProject,
) -> None:
    """Codex compacts in the middle of its first turn and draws `• Context compacted`;
    the preset's `compacted` sentinel ends the session, and session 2 is started with
    a fresh bootstrap naming why."""
    with FakeOpenAI(tmp_path / "requests.jsonl", brain=_compacting_brain) as model:
        codex_project.seed(model.port, LIMIT)
        write_unit(home, "cx", codex_project.unit())
        with running(home, "cx", timeout=60):
            poll_for(
                lambda: any(
                    "# agentd bootstrap: cx, session 2" in given(r["body"])
                    for r in model.main_requests()
                ),
                timeout=45,
                what="session 2's prompt at the model",
            )
    assert (codex_project.project / "one.txt").read_text() == "one\n", "the command did not run"
    assert model.summaries(), "Codex sent no compaction request"
    sentinel = events(home, "session.sentinel")[0]
    assert sentinel["name"] == "compacted", sentinel
    assert session_starts(home, "cx")[1]["reason"] == "sentinel:compacted"
    second = (home / "logs" / "cx" / "bootstrap-2.md").read_text(encoding="utf-8")
    header = "\n\n".join(second.split("\n\n")[:2])
    assert "sentinel:compacted" in header, header


WINDOW = 100_000  # model_context_window: Codex compacts at 90% of it
NEAR_WALL = 88_000  # reported input tokens: Codex shows `Context 8% left`
HANDOFF_ASK = "your context is nearly full"


def _handoff_brain(body: dict[str, Any]) -> dict[str, Any] | None:
    """Work near the context wall; when agentd asks, record a handoff."""
    if "session 2" in given(body):
        return {"reply": "resuming from the handoff", "input_tokens": 1000}
    first = read_bootstrap(body, 1000)
    if first is not None:
        return first
    if HANDOFF_ASK in fo.last_user_text(body):
        if (body.get("input") or [{}])[-1].get("type") == "function_call_output":
            return {"reply": "handoff recorded", "input_tokens": NEAR_WALL}
        return {
            "exec": 'agentctl state handoff "refactor half done: order_service next"',
            "input_tokens": NEAR_WALL,
        }
    return {"reply": "step one done", "input_tokens": NEAR_WALL}


def test_graceful_handoff_records_state_before_the_wall(
    home: Path,
    tmp_path: Path,
    codex_project: CodexProject,
) -> None:
    """The model reports usage that puts `Context 8% left` in Codex's status line (the
    preset's command asks for it; Codex redraws only the digits); agentd types its
    request into the TUI's prompt, the model records a handoff with agentctl (Codex
    runs it), and session 2's bootstrap has it. No compaction happens."""
    agentctl("state", "--dir", str(codex_project.project / ".agent"), "init", cwd=tmp_path)
    with FakeOpenAI(tmp_path / "requests.jsonl", brain=_handoff_brain) as model:
        # a login shell would reset PATH (/etc/profile) and lose agentctl
        codex_project.seed(model.port, model_context_window=WINDOW, allow_login_shell="false")
        unit = codex_project.unit(handoff={"wait": "60s"})
        unit["env"] = with_agentctl_on_path(unit["env"])
        write_unit(home, "ho", unit)
        with running(home, "ho", timeout=60):
            pass
    asked, done = events(home, "session.handoff")[:2]
    assert asked["phase"] == "asked" and asked["left"] <= 15, asked
    assert done["changed"] is True, done
    assert session_starts(home, "ho")[1]["reason"] == "context"
    assert not model.summaries(), "Codex compacted: the handoff came too late"
    second = (home / "logs" / "ho" / "bootstrap-2.md").read_text(encoding="utf-8")
    assert "refactor half done: order_service next" in second
