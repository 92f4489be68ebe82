"""The real Claude Code (pinned, from npm) under agentd, against a fake model.

What these prove is about the real CLI, not about a stand-in: the texts it
draws, the hooks it runs, how it compacts. The fake model (``model.py``) only
answers; compaction is Claude Code's own (two replies reporting ~97k tokens of
a 100k window). The preset's prompt names the bootstrap's file, as the command
line is visible in ``ps``: the fake model reads it with the Read tool first, as
a real one does, and every check looks for the bootstrap in what the session
was given (its prompt and its tool results).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.realcli import fake_anthropic as fa
from tests.realcli.agentd_run import agentctl, running, session_starts, with_agentctl_on_path
from tests.realcli.clis import ClaudeProject
from tests.realcli.model import (
    BIG,
    FakeModel,
    bash,
    compacting_brain,
    given,
    read_bootstrap,
    tool_results,
)
from tests.support import events, poll_for, records, write_unit

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


def test_screen_sentinel_restarts_with_a_bootstrap_that_says_why(
    home: Path,
    tmp_path: Path,
    claude_project: ClaudeProject,
) -> None:
    """No hooks: Claude Code draws `Compacting conversation`, the preset's sentinel
    ends the session, and session 2 is started with a fresh bootstrap naming why."""
    with FakeModel(tmp_path / "requests.jsonl", brain=compacting_brain) as model:
        write_unit(home, "cc", claude_project.unit(model.url))
        with running(home, "cc", timeout=90):
            poll_for(
                lambda: any(
                    "# agentd bootstrap: cc, session 2" in given(r["body"])
                    for r in model.main_requests()
                ),
                timeout=60,
                what="session 2's prompt at the model",
            )
    second = home / "logs" / "cc" / "bootstrap-2.md"
    header = "\n\n".join(second.read_text(encoding="utf-8").split("\n\n")[:2])
    sentinel = events(home, "session.sentinel")[0]
    assert sentinel["name"] in ("compacting", "compacted"), sentinel
    assert f"sentinel:{sentinel['name']}" in header, header


def test_precompact_hook_ends_the_session_before_any_summary_request(
    home: Path,
    tmp_path: Path,
    claude_project: ClaudeProject,
) -> None:
    """`agentctl hooks claude-code` installed: Claude Code runs the PreCompact hook,
    which reaches agentd through AGENTD_SOCKET; the session ends while the CLI waits
    for its hook, so the summary request never reaches the model."""
    agentctl("hooks", "claude-code", "--dir", str(claude_project.project), cwd=tmp_path)
    with FakeModel(tmp_path / "requests.jsonl", brain=compacting_brain) as model:
        write_unit(home, "hk", claude_project.unit(model.url))
        with running(home, "hk", timeout=90):
            poll_for(
                lambda: any(
                    "# agentd bootstrap: hk, session 2" in given(r["body"])
                    for r in model.main_requests()
                ),
                timeout=60,
                what="session 2's prompt at the model",
            )
    assert session_starts(home, "hk")[1]["reason"] == "sentinel:precompact"
    assert model.summaries() == [], "a summary request reached the model"
    outcome = next(
        r
        for r in records(home / "logs" / "hk" / "history.jsonl")
        if r.get("kind") == "outcome" and r["session"] == 1
    )
    assert outcome["outcome"] == "context"


def _restarting_brain(body: dict[str, Any]) -> dict[str, Any] | None:
    """Session 1 follows the bootstrap's rule once; later sessions only read theirs."""
    if "session 1" not in given(body) or len(tool_results(body)) > 1:
        return read_bootstrap(body)
    return bash('agentctl restart "$AGENTD_UNIT" --reason fresh')


def test_agentctl_restart_from_the_cli_bash_tool_under_agentd_run(
    home: Path,
    tmp_path: Path,
    claude_project: ClaudeProject,
) -> None:
    """The bootstrap's own rule, `agentctl restart "$AGENTD_UNIT"`, run by Claude
    Code's Bash tool: the session's socket is agentd run's private one."""
    with FakeModel(tmp_path / "requests.jsonl", brain=_restarting_brain) as model:
        unit = claude_project.unit(model.url)
        unit["env"] = with_agentctl_on_path(unit["env"])
        write_unit(home, "rs", unit)
        with running(home, "rs", timeout=90):
            pass
    assert session_starts(home, "rs")[1]["reason"] == "manual:fresh"


HANDOFF_ASK = "your context is nearly full"


def _handoff_brain(body: dict[str, Any]) -> dict[str, Any] | None:
    """Work near the context wall; when agentd asks, record a handoff."""
    first = read_bootstrap(body, 1000)
    if first is not None:
        return first
    if "session 2" in given(body):
        return {"reply": "resuming from the handoff", "input_tokens": 1000}
    if HANDOFF_ASK in fa.last_user_text(body):
        return bash('agentctl state handoff "refactor half done: order_service next"', 60_000)
    if len(tool_results(body)) > 1:
        return {"reply": "step one done", "input_tokens": 60_000}
    return bash("echo working on step one", 60_000)


def test_graceful_handoff_records_state_before_the_wall(
    home: Path,
    tmp_path: Path,
    claude_project: ClaudeProject,
) -> None:
    """The model reports usage that puts `10% until auto-compact` in the footer; agentd
    types its request, the model records a handoff, and session 2's bootstrap has it."""
    agentctl("state", "--dir", str(claude_project.project / ".agent"), "init", cwd=tmp_path)
    with FakeModel(tmp_path / "requests.jsonl", brain=_handoff_brain) as model:
        unit = claude_project.unit(model.url, handoff={"wait": "60s"})
        unit["env"] = with_agentctl_on_path(unit["env"])
        write_unit(home, "ho", unit)
        with running(home, "ho", timeout=120):
            pass
    asked, done = events(home, "session.handoff")[:2]
    assert asked["phase"] == "asked" and asked["left"] <= 15
    assert done["changed"] is True
    assert session_starts(home, "ho")[1]["reason"] == "context"
    assert any(HANDOFF_ASK in fa.last_user_text(r["body"]) for r in model.main_requests())
    second = (home / "logs" / "ho" / "bootstrap-2.md").read_text(encoding="utf-8")
    assert "refactor half done: order_service next" in second


STEPS = 6
_STEP = re.compile(r"next action\W*(step-(\d+))", re.IGNORECASE)


def _task_brain(body: dict[str, Any]) -> dict[str, Any] | None:
    """A model that knows only what it was given: read the bootstrap, do its next
    action, then the one after, each as one tool call that records it; stop when
    the steps run out."""
    first = read_bootstrap(body, 1000)
    if first is not None:
        return first
    found = _STEP.search(given(body))
    if found is None:
        return {"reply": "no next action in my bootstrap", "input_tokens": 1000}
    step = int(found.group(2)) + len(tool_results(body)) - 1  # the first result: the bootstrap
    if step > STEPS:
        return {"reply": "ALL STEPS DONE", "input_tokens": 1000}
    return bash(
        f'echo step-{step} >> work.log && agentctl state done "step-{step}" '
        f'&& agentctl state next "step-{step + 1}"',
        BIG,
    )


def test_a_task_advances_through_three_compactions_each_step_once_in_order(
    home: Path,
    tmp_path: Path,
    claude_project: ClaudeProject,
) -> None:
    """Claude Code compacts after every two steps (hooks installed): each time agentd
    ends the session first and the next one goes on from the bootstrap's next action."""
    project = claude_project.project
    agentctl("state", "--dir", str(project / ".agent"), "init", cwd=tmp_path)
    agentctl("state", "--dir", str(project / ".agent"), "next", "step-1", cwd=tmp_path)
    agentctl("hooks", "claude-code", "--dir", str(project), cwd=tmp_path)
    work = project / "work.log"
    with FakeModel(tmp_path / "requests.jsonl", brain=_task_brain) as model:
        unit = claude_project.unit(model.url)
        unit["env"] = with_agentctl_on_path(unit["env"])
        write_unit(home, "task", unit)
        with running(home, "task", sessions=1):
            poll_for(
                lambda: work.exists() and len(work.read_text().split()) >= STEPS,
                timeout=150,
                what="six steps in work.log",
            )
            poll_for(
                lambda: any(r.get("note") == "scripted" for r in model.requests()),
                timeout=60,
                what="the model to find no step left",
            )
    assert work.read_text().split() == [f"step-{n}" for n in range(1, STEPS + 1)]
    starts = session_starts(home, "task")
    assert len(starts) >= 4 and all(s["reason"] == "sentinel:precompact" for s in starts[1:4])
    assert model.summaries() == [], "a summary request reached the model"
