"""The real Codex CLI (pinned, from npm) under agentd, against a fake model.

What these prove is about the real CLI: the texts it draws and how it compacts.
Compaction is Codex's own: ``model_auto_compact_token_limit`` is small and the
fake model reports more input tokens than that. Codex 0.171.0 checks the limit
when a turn needs a follow-up request, so a reply that is a tool call
(``exec_command``) makes it compact in the middle of its first turn, with no
second message typed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import poll_for
from tests.helpers import events, write_unit
from tests.realcli.agentd_run import running, session_starts
from tests.realcli.conftest import CodexProject
from tests.realcli.openai_model import FakeOpenAI, tool_outputs, user_texts

pytestmark = [pytest.mark.timeout(100), pytest.mark.slow]

LIMIT = 2_000  # model_auto_compact_token_limit
BIG = 5_000  # reported input tokens: past the limit


def _compacting_brain(body: dict[str, Any]) -> dict[str, Any] | None:
    """Session 1 runs one command, reporting more tokens than the limit: Codex must
    compact before it sends the command's output back. Session 2 just answers."""
    if "session 2" in user_texts(body) or tool_outputs(body):
        return {"reply": "carrying on", "input_tokens": 100}
    return {"exec": "echo one > one.txt", "input_tokens": BIG}


def test_auto_compaction_restarts_with_a_bootstrap_that_says_why(
    home: Path, tmp_path: Path, codex_project: CodexProject,
) -> None:
    """Codex compacts in the middle of its first turn and draws `• Context compacted`;
    the preset's `compacted` sentinel ends the session, and session 2 is started with
    a fresh bootstrap naming why."""
    with FakeOpenAI(tmp_path / "requests.jsonl", brain=_compacting_brain) as model:
        codex_project.seed(model.port, LIMIT)
        write_unit(home, "cx", codex_project.unit())
        with running(home, "cx", timeout=60):
            poll_for(lambda: any("# agentd bootstrap: cx, session 2" in user_texts(r["body"])
                                 for r in model.main_requests()),
                     timeout=45, what="session 2's prompt at the model")
    assert (codex_project.project / "one.txt").read_text() == "one\n", "the command did not run"
    assert model.summaries(), "Codex sent no compaction request"
    sentinel = events(home, "session.sentinel")[0]
    assert sentinel["name"] == "compacted", sentinel
    assert session_starts(home, "cx")[1]["reason"] == "sentinel:compacted"
    second = (home / "logs" / "cx" / "bootstrap-2.md").read_text(encoding="utf-8")
    header = "\n\n".join(second.split("\n\n")[:2])
    assert "sentinel:compacted" in header, header
