"""The real Gemini CLI (pinned, from npm) under `preset: gemini`, against a fake
model, with an API key (its footer then shows one figure, `N% used`).

- compression: after a reply at 57% of the window, the next user message (the
  handoff request agentd types) makes Gemini compress first; `Context compressed
  from 57% to 0%` ends the session, and session 2 gets a fresh bootstrap;
- its own context error: a one-prompt session driven by tool calls never
  compresses (there is no user message to cut before); at 100% Gemini prints
  `Sending this message ... might exceed the context window limit` and waits;
  that ends the session too;
- context pressure in a tool-driven session: the footer's `N% used` is updated
  after every model response, tool calls included; the handoff request agentd
  types is sent when the chain of tool calls ends, and the model records its
  state;
- a usage limit: `Access resets at 1:10 AM UTC.` pauses the unit until then.

Gemini's bootstrap is on its command line (``{bootstrap}``): the first user
message of each session is the bootstrap itself.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agentd.times import parse_iso
from tests.realcli.agentd_run import agentctl, session_starts, with_agentctl_on_path
from tests.realcli.gemini_aider import (
    WINDOW,
    FakeGemini,
    GeminiProject,
    gemini_exe,
    gemini_tool_results,
    gemini_user_texts,
    shell,
)
from tests.realcli.runs import run_until, sentinel, state_change
from tests.support import events, write_unit

pytestmark = [pytest.mark.timeout(150), pytest.mark.slow]
HANDOFF_ASK = "your context is filling up"  # the gemini preset's handoff message


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    return gemini_exe()


def bootstrap_of(model: FakeGemini, unit: str, session: int) -> bool:
    """Session ``session``'s first user message reached the model: its bootstrap."""
    head = f"# agentd bootstrap: {unit}, session {session}"
    return any(head in (gemini_user_texts(r["body"]) or [""])[0] for r in model.main_requests())


def test_compression_restarts_with_a_fresh_bootstrap(
    home: Path, tmp_path: Path, gemini_bin: Path
) -> None:
    def brain(body: dict[str, Any]) -> dict[str, Any]:
        """One tool call, then a reply, both at 57% of the window (the footer shows
        the figure of the response before the last)."""
        if "session 1" not in gemini_user_texts(body)[0]:
            return {"reply": "fresh session", "prompt_tokens": 1000}
        if not gemini_tool_results(body):
            return shell("echo working", 600_000)
        return {"reply": "step done", "prompt_tokens": 600_000}

    project = GeminiProject(tmp_path, gemini_bin)
    with FakeGemini(tmp_path / "requests.jsonl", brain=brain) as model:
        write_unit(home, "gc", project.unit(model.url))
        run_until(home, "gc", lambda: bootstrap_of(model, "gc", 2), what="session 2's bootstrap")
    hit = sentinel(home, "compressed-pct")
    assert hit is not None, events(home, "session.sentinel")
    print(f"gemini: {hit['name']} on {hit['line'].strip()!r}")
    assert "Context compressed from 57% to 0%" in hit["line"]
    assert session_starts(home, "gc")[1]["reason"] == "sentinel:compressed-pct"
    assert model.compressions(), "Gemini sent no compression request"


def test_a_full_context_in_a_tool_driven_session_restarts(
    home: Path, tmp_path: Path, gemini_bin: Path
) -> None:
    steps = [300_000, 600_000, 900_000, WINDOW, 1_100_000]

    def brain(body: dict[str, Any]) -> dict[str, Any]:
        if "session 1" not in gemini_user_texts(body)[0]:
            return {"reply": "fresh session", "prompt_tokens": 1000}
        done = len(gemini_tool_results(body))
        if done < len(steps):
            return shell(f"echo step {done}", steps[done])
        return {"reply": "chain done", "prompt_tokens": 1_100_000}

    project = GeminiProject(tmp_path, gemini_bin)
    with FakeGemini(tmp_path / "requests.jsonl", brain=brain) as model:
        unit = project.unit(model.url, handoff={"when": None})  # the wall, not the handoff
        write_unit(home, "gf", unit)
        run_until(home, "gf", lambda: bootstrap_of(model, "gf", 2), what="session 2's bootstrap")
    hit = sentinel(home)
    assert hit is not None
    print(f"gemini: {hit['name']} on {hit['line'].strip()!r}")
    assert hit["name"] == "context-overflow", hit
    assert "might exceed the context window limit" in hit["line"]
    assert session_starts(home, "gf")[1]["reason"] == "sentinel:context-overflow"
    assert not model.compressions(), "a one-prompt tool chain compressed"


def test_pressure_in_a_tool_driven_session_hands_over(
    home: Path, tmp_path: Path, gemini_bin: Path
) -> None:
    """The chain reports 43% of the window (under the 50% compression threshold)
    from its second tool call on; the footer's `43% used` asks for the handoff in
    the middle of the chain. Typed (the preset's `inject.paste: false`), the
    request waits in Gemini's queue and is sent when the chain ends; the model
    then records its state."""
    steps = [100_000, 450_000, 450_000, 450_000]  # the footer shows 43% from the 3rd on

    def brain(body: dict[str, Any]) -> dict[str, Any]:
        users = gemini_user_texts(body)
        if "session 1" not in users[0]:
            return {"reply": "resuming from the handoff", "prompt_tokens": 1000}
        if any(HANDOFF_ASK in text for text in users[1:]):
            if HANDOFF_ASK in str(body["contents"][-1]):  # asked just now
                return shell('agentctl state handoff "half done: order_service next"', 450_000)
            return {"reply": "state recorded", "prompt_tokens": 450_000}
        done = len(gemini_tool_results(body))
        if done < len(steps):
            return shell(f"sleep 1; echo step {done}", steps[done])
        return {"reply": "chain done", "prompt_tokens": 450_000}

    project = GeminiProject(tmp_path, gemini_bin)
    agentctl("state", "--dir", str(project.project / ".agent"), "init", cwd=tmp_path)
    with FakeGemini(tmp_path / "requests.jsonl", brain=brain) as model:
        unit = project.unit(model.url, handoff={"wait": "60s"})
        unit["env"] = with_agentctl_on_path(unit["env"])
        write_unit(home, "gh", unit)
        run_until(home, "gh", lambda: bootstrap_of(model, "gh", 2), what="session 2's bootstrap")
    asked, done = events(home, "session.handoff")[:2]
    print(f"gemini: handoff on {asked['line'].strip()!r}")
    assert asked["phase"] == "asked" and asked["left"] == 57, asked
    at = parse_iso(asked["timestamp"])
    assert at is not None
    sent = next(r for r in model.main_requests() if HANDOFF_ASK in str(r["body"]["contents"]))
    between = [r for r in model.main_requests() if at < r["t"] < sent["t"]]
    assert between, "the request was asked for after the chain had ended: nothing was queued"
    assert done["changed"] is True, done
    assert session_starts(home, "gh")[1]["reason"] == "context"
    second = (home / "logs" / "gh" / "bootstrap-2.md").read_text(encoding="utf-8")
    assert "half done: order_service next" in second


def test_a_usage_limit_pauses_until_access_resets(
    home: Path, tmp_path: Path, gemini_bin: Path
) -> None:
    error = {"error": {"status": 429, "message": "Quota exceeded for metric", "retry": "3600s"}}
    project = GeminiProject(tmp_path, gemini_bin)
    with FakeGemini(tmp_path / "requests.jsonl") as model:
        model.control(script=[error] * 6)
        write_unit(home, "gl", project.unit(model.url))
        started = time.time()
        run_until(home, "gl", lambda: state_change(home, "paused"), what="the unit paused")
    hit = sentinel(home)
    assert hit is not None
    print(f"gemini: {hit['name']} on {hit['line'].strip()!r} until {hit['until']}")
    assert hit["name"] == "usage-limit", hit
    until = parse_iso(hit["until"])
    assert until is not None and abs(until - (started + 3600)) < 120, hit["until"]
