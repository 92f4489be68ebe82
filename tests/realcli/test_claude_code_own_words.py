"""The real Claude Code writes the task state with its own editor tools, in its
own Markdown; after a compaction the next session's bootstrap still says what
to do next and what was done last.

The four-file method's prompt says "after each step, update task_state.md",
and an agent does that with its Write and Edit tools, not with `agentctl
state`. Here the fake model (``model.py``: it knows only what it was sent)
has the pinned Claude Code Read the file, Write it whole in a style of its
own (the method's ``# `` sections, ``# Progress`` as a numbered ``1)`` list
without checkboxes, two hundred items: more than the budget holds), then Edit
it to add the newest done item;
the replies report ~97k tokens, so Claude Code compacts, the PreCompact hook
ends the session, and session 2 is started with a bootstrap rendered from what
Claude Code's tools left on disk.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.realcli import fake_anthropic as fa
from tests.realcli.agentd_run import agentctl, running, session_starts
from tests.realcli.conftest import ClaudeProject
from tests.realcli.model import BIG, FakeModel, bash, given, read_bootstrap, tool, tool_results
from tests.support import poll_for, write_unit

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

DONE = 200
NEXT = "[next] port the invoice totals to cache_manager, then run tests/invoice"
NEWEST = f"{DONE}) [s{DONE:04d}] moved the refund module onto the cache layer; its tests pass"
HANDOFF = "[handoff] refunds moved; invoices untouched so far"


def task_state() -> str:
    """task_state.md as the model writes it: its own headings and list style."""
    done = "".join(_done(n) + "\n" for n in range(1, DONE))
    return (
        "# Current task\n\n[mission] one cache layer for cart and order, one service at a time\n\n"
        f"# Progress\n\n{done}\n# Next step\n\n1) {NEXT}\n\n"
        f"# Blockers\n\n* [blocker] staging redis refuses CI\n\n# Handoff\n\n{HANDOFF}\n"
    )


def _done(n: int) -> str:
    return f"{n}) [s{n:04d}] moved module {n} of the order service onto the cache layer"


def _workdir(body: dict[str, Any]) -> str:
    """The project dir, as Claude Code's system prompt states it."""
    found = re.search(r"(?i)working directory: (\S+)", fa.all_text(body.get("system")))
    assert found, "no working directory in the system prompt"
    return found.group(1)


def _editing_brain(body: dict[str, Any]) -> dict[str, Any] | None:
    """Session 1: read the bootstrap, then the task file, Write it whole in the
    model's own style, Edit in the newest done item, run the tests; each of the
    last replies reports ~97k tokens. Later sessions only read their bootstrap."""
    first = read_bootstrap(body, 1000)
    if first is not None or "session 1" not in given(body):
        return first
    path = f"{_workdir(body)}/.agent/task_state.md"
    step = len(tool_results(body))  # the first result was the bootstrap
    last = _done(DONE - 1)
    steps = [
        tool("Read", 1000, file_path=path),
        tool("Write", 1000, file_path=path, content=task_state()),
        tool("Edit", BIG, file_path=path, old_string=last, new_string=f"{last}\n{NEWEST}"),
        bash("echo tests/refund: 12 passed", BIG),
    ]
    return steps[step - 1] if step <= len(steps) else {"reply": "done", "input_tokens": 1000}


def test_the_next_session_knows_what_claude_code_wrote_in_its_own_words(
    home: Path, tmp_path: Path, claude_project: ClaudeProject
) -> None:
    project = claude_project.project
    agentctl(
        "state", "--dir", str(project / ".agent"), "init", "--layout", "four-file", cwd=tmp_path
    )
    agentctl("hooks", "claude-code", "--dir", str(project), cwd=tmp_path)
    with FakeModel(tmp_path / "requests.jsonl", brain=_editing_brain) as model:
        unit = claude_project.unit(model.url, state={"layout": "four-file"})
        write_unit(home, "ow", unit)
        with running(home, "ow", timeout=120):
            poll_for(
                lambda: any(
                    "# agentd bootstrap: ow, session 2" in given(r["body"])
                    for r in model.main_requests()
                ),
                timeout=60,
                what="session 2's bootstrap at the model",
            )
    written = (project / ".agent" / "task_state.md").read_text(encoding="utf-8")
    assert NEWEST in written and NEXT in written, "Claude Code's Write and Edit did not land"
    assert session_starts(home, "ow")[1]["reason"] == "sentinel:precompact"
    second = (home / "logs" / "ow" / "bootstrap-2.md").read_text(encoding="utf-8")
    for fact in (NEXT, NEWEST, HANDOFF, "[blocker] staging redis", "[mission]"):
        assert fact in second, (fact, second)
    assert "[s0001]" not in second  # the oldest done items gave way, not the sections after
    assert "earlier done items: see .agent/task_state.md" in second
    seen = next(
        given(r["body"])
        for r in model.main_requests()
        if "# agentd bootstrap: ow, session 2" in given(r["body"])
    )
    assert NEXT in seen and NEWEST in seen  # what session 2's model was given
