"""What each session spent, as agentd records it, against what the model reported.

The real Claude Code, Codex, Gemini CLI and aider run under ``agentd run`` on
their presets, against fake models (``usage_model.py``) whose k-th response
reports ``chosen(k)``: numbers different for every request, so a response
counted twice or missed shows. agentd reads each session's usage from the
records the CLI wrote (its transcript, rollout, chat record, analytics log) and
puts it in the session's ``end`` record; it must equal the sum of what the
model reported to the requests the CLI records, exactly. Where a CLI does not
record a request (Codex's title request, Gemini's routing request), the test
names it and checks that it is the only difference.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.realcli.agentd_run import running
from tests.realcli.clis import ClaudeProject, CodexProject
from tests.realcli.gemini_aider import AiderProject, GeminiProject, aider_exe, gemini_exe
from tests.realcli.model import bash
from tests.realcli.usage_model import (
    Reported,
    UsageAnthropic,
    UsageGemini,
    UsageOpenAI,
    total,
)
from tests.support import agentd, events, poll_for, records, said, write_unit

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

DONE = "USAGE_REPLY_DONE"  # the model's last reply; on the screen once the turn is over


def _ends(home: Path, unit: str) -> list[dict[str, Any]]:
    return [r for r in records(home / "logs" / unit / "history.jsonl") if r.get("kind") == "end"]


def _counts(usage: dict[str, Any]) -> dict[str, Any]:
    return {
        k: usage.get(k)
        for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    }


def _expected(reported: list[Reported], *, cache_write: bool = True) -> dict[str, Any]:
    sums = total(reported)
    return {
        "input_tokens": sums["input"],
        "output_tokens": sums["output"],
        "cache_read_tokens": sums["cache_read"],
        "cache_write_tokens": sums["cache_write"] if cache_write else 0,
    }


def _one_session(
    home: Path, unit: str, on_screen: str, recorded: Callable[[], bool] | None = None
) -> dict[str, Any]:
    """``agentd run UNIT`` until the CLI drew ``on_screen`` (and, if given, ``recorded()``
    holds: the CLI's record of the turn is written), then stopped (SIGINT: the session
    is ended gracefully); the one session's usage record."""
    with running(home, unit, sessions=1, timeout=120):
        poll_for(lambda: said(home, unit, on_screen), timeout=150, what=f"{on_screen!r} on screen")
        if recorded is not None:
            poll_for(recorded, timeout=60, what="the turn in the CLI's own record")
    (end,) = _ends(home, unit)
    usage = end.get("usage")
    assert isinstance(usage, dict), end
    return usage


# -- Claude Code ------------------------------------------------------------------------
def test_claude_code_session_usage_equals_what_the_model_reported(
    home: Path, tmp_path: Path, claude_any: tuple[str, Path]
) -> None:
    """One Bash call, then a reply; stopped by agentd. 2.1.197 sends a title request
    first (not in the transcript, but in the totals it keeps in ~/.claude.json on
    exit); 2.1.332 writes a cost-state record with every request on exit. Either
    way every request the model answered is counted once."""
    _version, exe = claude_any
    project = ClaudeProject(tmp_path, exe)
    with UsageAnthropic(tmp_path / "requests.jsonl") as model:
        model.control(script=[bash("echo one"), {"reply": DONE}])
        write_unit(home, "cc", project.unit(model.url))
        usage = _one_session(home, "cc", DONE)
        reported = model.reported
    assert len(reported) >= 2, reported  # the tool call and the reply at least
    assert _counts(usage) == _expected(reported), (usage, reported)
    assert usage["source"] == "claude-transcript"
    assert usage["model"], usage
    assert isinstance(usage["cost_usd"], float) and usage["cost_usd"] > 0, usage  # Claude's own
    assert "partial" not in usage, usage


# -- Codex ------------------------------------------------------------------------------
def _codex_title(path: str, body: Any) -> bool:
    """Codex's thread-title request: the one with a JSON schema for its answer."""
    fmt = ((body or {}).get("text") or {}).get("format") or {}
    return fmt.get("type") == "json_schema"


def _recorded(files: Iterable[Path], *texts: str) -> bool:
    """Whether a line of one of ``files`` (a CLI's own record) holds all of ``texts``.
    A CLI draws a reply as it streams in and records it (with its tokens) once it is
    complete: stopped between the two (seen once, on loaded cores), it never records
    the last response, so a test waits for the record before it stops the session."""
    for path in files:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if all(text in line for text in texts):
                return True
    return False


def test_codex_session_usage_equals_what_the_model_reported(
    home: Path, tmp_path: Path, codex_project: CodexProject
) -> None:
    """One exec_command, then a reply. The rollout's token_count totals hold every
    request of the conversation; the title request Codex sends beside it is in no
    record Codex keeps, so it is the one response not counted."""
    steps = [{"exec": "echo one"}, {"reply": DONE}]

    def brain(body: dict[str, Any]) -> dict[str, Any] | None:
        return steps.pop(0) if steps else None

    with UsageOpenAI(tmp_path / "requests.jsonl", brain=brain) as model:
        codex_project.seed(model.port)
        write_unit(home, "cx", codex_project.unit())
        usage = _one_session(
            home,
            "cx",
            DONE,
            recorded=lambda: _recorded(
                (codex_project.home / "sessions").rglob("rollout-*.jsonl"), '"task_complete"'
            ),
        )
        main = model.reported_for(lambda path, body: not _codex_title(path, body))
        titles = model.reported_for(_codex_title)
    assert len(main) == 2, main  # the tool call and the reply
    assert len(titles) <= 1, titles
    # the Responses API has no cache writes: agentd records 0
    assert _counts(usage) == _expected(main, cache_write=False), (usage, main)
    assert usage["source"] == "codex-rollout"
    assert usage["cost_usd"] is None  # Codex reports none and the unit gives no prices
    assert usage["context_window"] > 0, usage  # the rollout says its window


# -- Gemini CLI -------------------------------------------------------------------------
def _gemini_routing(path: str, body: Any) -> bool:
    """Auto mode's routing request: not streamed, a JSON answer, a lite model."""
    return path.split("?")[0].endswith(":generateContent")


def test_gemini_session_usage_equals_what_the_model_reported(home: Path, tmp_path: Path) -> None:
    """One shell call, then a reply. Gemini CLI's chat record (found by the
    --session-id agentd gave it) holds the tokens of each conversation response;
    its routing request is in no record it keeps."""
    project = GeminiProject(tmp_path, gemini_exe())
    script = [{"tool": {"name": "run_shell_command", "args": {"command": "echo one"}}}]
    with UsageGemini(tmp_path / "requests.jsonl", script=[*script, {"reply": DONE}]) as model:
        unit = project.unit(model.url)
        write_unit(home, "gm", unit)
        usage = _one_session(
            home,
            "gm",
            DONE,
            recorded=lambda: _recorded(
                (project.home / ".gemini" / "tmp").rglob("chats/*.json*"), DONE, '"tokens"'
            ),
        )
        main = model.reported_for(lambda path, body: not _gemini_routing(path, body))
        routing = model.reported_for(_gemini_routing)
    assert len(main) == 2, main
    assert len(routing) <= 1, routing
    # the Gemini API has no cache writes: agentd records 0
    assert _counts(usage) == _expected(main, cache_write=False), (usage, main)
    assert usage["source"] == "gemini-chats"


# -- aider ------------------------------------------------------------------------------
def test_aider_session_usage_equals_what_the_model_reported(home: Path, tmp_path: Path) -> None:
    """aider answers its bootstrap (--message-file) and exits. agentd had it write its
    analytics log; with --no-stream its counts are the provider's. aider keeps the
    prompt whole (the cached part inside it) and says nothing of cache writes."""
    project = AiderProject(tmp_path, aider_exe())
    meta = tmp_path / "meta.json"  # its prices, as a user would give them: aider's cost
    meta.write_text(
        json.dumps(
            {
                "openai/fake": {
                    "input_cost_per_token": 3e-6,
                    "output_cost_per_token": 1.5e-5,
                    "max_input_tokens": 100000,
                    "litellm_provider": "openai",
                    "mode": "chat",
                }
            }
        ),
        encoding="utf-8",
    )
    with UsageOpenAI(tmp_path / "requests.jsonl") as model:
        model.control(reply=DONE)
        unit = project.unit(model.url)
        program, *args = unit["command"]
        unit["command"] = [program, "--no-stream", "--model-metadata-file", str(meta), *args]
        unit["env"]["BROWSER"] = "true"
        unit["restart"] = {**unit["restart"], "max_sessions": 1}
        write_unit(home, "ai", unit)
        done = agentd(home, "run", "ai", timeout=240)
        reported = model.reported
    ends = _ends(home, "ai")
    assert ends, done.stderr
    usage = ends[0]["usage"]
    (one,) = reported[:1]
    assert len(reported) == 1, reported
    sums = total(reported)
    assert _counts(usage) == {
        "input_tokens": sums["input"] + sums["cache_read"],  # aider cannot tell them apart
        "output_tokens": sums["output"],
        "cache_read_tokens": None,
        "cache_write_tokens": None,
    }, usage
    assert usage["source"] == "aider-analytics"
    assert usage["cost_usd"] == pytest.approx(
        (one.input + one.cache_read) * 3e-6 + one.output * 1.5e-5
    )


# -- budgets, with the real count -------------------------------------------------------
def test_max_tokens_per_day_pauses_claude_code_when_its_real_count_crosses_it(
    home: Path, tmp_path: Path, claude_project: ClaudeProject
) -> None:
    """A budget below the first response's tokens: agentd reads them from the running
    session's transcript, asks the agent to hand over, ends the session and pauses
    the unit; the budget event names the real count."""
    with UsageAnthropic(tmp_path / "requests.jsonl") as model:
        model.control(script=[bash("echo one"), {"reply": DONE}])
        unit = claude_project.unit(
            model.url, budget={"max_tokens_per_day": 1000}, handoff={"wait": "5s"}
        )
        write_unit(home, "cb", unit)
        with running(home, "cb", sessions=1, timeout=120):
            poll_for(
                lambda: [e for e in events(home, "unit.state") if e.get("to") == "paused"],
                timeout=150,
                what="the unit paused by its budget",
            )
    (budget,) = events(home, "unit.budget")
    assert budget["budget"] == "max_tokens_per_day", budget
    asked = events(home, "session.handoff")[0]  # handed over, not killed mid-step
    assert (asked["phase"], asked["why"]) == ("asked", "budget:max_tokens_per_day"), asked
    assert budget["used"] >= 1000, budget
    (end,) = _ends(home, "cb")
    assert end["reason"] == "budget:max_tokens_per_day", end
    assert end["usage"]["source"] == "claude-transcript", end
    starts = [
        r for r in records(home / "logs" / "cb" / "history.jsonl") if r.get("kind") == "start"
    ]
    assert len(starts) == 1  # paused: no session after it
