"""Every pinned Claude Code (2.1.197 and the newest, 2.1.332) under `preset:
claude-code` alone, against a fake model.

- compaction: the preset gives the CLI agentd's hooks for the session
  (``--settings``), the PreCompact hook ends the session before the summary
  request, and the next session's prompt makes the model read the bootstrap
  (the fake server's request log shows it); the project's settings stay as
  they were;
- the same with the hooks off: the screen sentinel ends the session;
- a usage limit: a 429 with the rate-limit headers makes the CLI draw its own
  limit line; agentd pauses the unit until the reset time that line printed;
- an API key's 429 (`API Error: Request rejected (429)`): paused for a while.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from agentd.times import parse_iso
from tests.realcli import fake_anthropic as fa
from tests.realcli.agentd_run import agentctl, session_starts, with_agentctl_on_path
from tests.realcli.clis import ClaudeProject, claude_exe
from tests.realcli.limits_model import (
    RATE_LIMITED,
    LimitModel,
    gateway_token,
    limit_headers,
    oauth_credentials,
)
from tests.realcli.model import (
    FakeModel,
    bash,
    compacting_brain,
    given,
    read_bootstrap,
    tool_results,
)
from tests.realcli.pins import versions
from tests.realcli.runs import run_until, sentinel, state_change
from tests.support import events, records, write_unit

pytestmark = [pytest.mark.timeout(150), pytest.mark.slow]


def second_bootstrap_read(model: FakeModel, unit: str) -> bool:
    """Session 2's first step at the model: it was given its bootstrap (the prompt
    names the file, the model read it with the Read tool)."""
    return any(
        f"# agentd bootstrap: {unit}, session 2" in given(r["body"]) for r in model.main_requests()
    )


def test_compaction_is_caught_by_the_hooks_the_preset_gives(
    home: Path, tmp_path: Path, claude_any: tuple[str, Path]
) -> None:
    version, claude = claude_any
    project = ClaudeProject(tmp_path, claude)
    settings = project.project / ".claude" / "settings.json"
    before = settings.read_bytes() if settings.exists() else None
    with FakeModel(tmp_path / "requests.jsonl", brain=compacting_brain) as model:
        write_unit(home, "cc", project.unit(model.url))
        run_until(
            home,
            "cc",
            lambda: second_bootstrap_read(model, "cc"),
            what="session 2 reading its bootstrap",
        )
    starts = session_starts(home, "cc")
    assert starts[1]["reason"] == "sentinel:precompact", (version, starts)
    print(
        f"claude-code {version}: PreCompact hook (--settings), "
        f"{len(model.summaries())} summary requests"
    )
    assert model.summaries() == [], f"{version}: a summary request reached the model"
    outcome = next(
        r
        for r in records(home / "logs" / "cc" / "history.jsonl")
        if r.get("kind") == "outcome" and r["session"] == 1
    )
    assert outcome["outcome"] == "context"
    assert (settings.read_bytes() if settings.exists() else None) == before, (
        "project settings changed"
    )


def test_without_hooks_the_screen_sentinel_restarts(
    home: Path, tmp_path: Path, claude_any: tuple[str, Path]
) -> None:
    """`hooks: none`: the CLI draws `Compacting conversation…` and the preset's
    sentinel ends the session (its summary request has gone out by then)."""
    version, claude = claude_any
    project = ClaudeProject(tmp_path, claude)
    with FakeModel(tmp_path / "requests.jsonl", brain=compacting_brain) as model:
        write_unit(home, "sc", project.unit(model.url, hooks="none"))
        run_until(
            home,
            "sc",
            lambda: second_bootstrap_read(model, "sc"),
            what="session 2 reading its bootstrap",
        )
    hit = sentinel(home)
    assert hit is not None and hit["name"] in ("compacting", "compacted"), (version, hit)
    print(f"claude-code {version}: {hit['name']} on {hit['line'].strip()!r}")
    assert session_starts(home, "sc")[1]["reason"] == f"sentinel:{hit['name']}"
    assert "Compacting conversation" in hit["line"] or "Conversation compacted" in hit["line"]


def _gateway(version: str) -> bool:
    """Does this Claude Code read the limit headers as a gateway client? 2.1.332 does;
    2.1.197 only for a claude.ai login."""
    return tuple(int(p) for p in version.split(".")[:3] if p.isdigit()) >= (2, 1, 300)


def _limit_unit(project: ClaudeProject, model: FakeModel, version: str) -> dict[str, Any]:
    """A unit whose CLI reads the limit headers: as a gateway client or with a
    (fake) claude.ai login."""
    unit = project.unit(model.url)
    unit["env"]["TZ"] = "America/Los_Angeles"
    if not _gateway(version):
        del unit["env"]["ANTHROPIC_AUTH_TOKEN"]
        oauth_credentials(project.home)
    else:
        unit["env"]["ANTHROPIC_AUTH_TOKEN"] = gateway_token()
    return unit


def test_a_usage_limit_pauses_until_the_reset_time_it_printed(
    home: Path, tmp_path: Path, claude_any: tuple[str, Path]
) -> None:
    version, claude = claude_any
    project = ClaudeProject(tmp_path, claude)
    reset = time.time() + 2 * 3600 + 300  # in 2 h 5 min: printed as a time of day
    with LimitModel(tmp_path / "requests.jsonl") as model:
        model.control(
            script=[{"error": RATE_LIMITED}] * 3, error_headers=limit_headers("five_hour", reset)
        )
        write_unit(home, "lim", _limit_unit(project, model, version))
        paused = run_until(
            home, "lim", lambda: state_change(home, "paused"), what="the unit paused"
        )
    hit = sentinel(home)
    assert hit is not None and hit["name"] == "usage-limit", hit
    print(f"claude-code {version}: {hit['name']} on {hit['line'].strip()!r} until {hit['until']}")
    # 2.1.197 calls the 5-hour limit `session limit`, 2.1.332 `5-hour limit`
    assert re.search(r"You've hit your (?:session|5-hour) limit · resets ", hit["line"]), hit
    if version in ("2.1.197", "2.1.332"):
        label = "session limit" if version == "2.1.197" else "5-hour limit"
        assert f"You've hit your {label} · resets " in hit["line"], hit["line"]
    assert "(America/Los_Angeles)" in hit["line"]
    until = parse_iso(hit["until"])
    assert until is not None and abs(until - reset) < 61, (hit["until"], reset)  # to the minute
    assert paused["reason"] == "sentinel:usage-limit"
    assert len(session_starts(home, "lim")) == 1, "a session started while paused"


def test_an_api_key_rate_limit_pauses_for_a_while(
    home: Path, tmp_path: Path, claude_any: tuple[str, Path]
) -> None:
    """No subscription, no gateway: the CLI ignores the headers and draws `API
    Error: Request rejected (429) · MESSAGE`; agentd pauses for `pause_for`."""
    version, claude = claude_any
    project = ClaudeProject(tmp_path, claude)
    with LimitModel(tmp_path / "requests.jsonl") as model:
        model.control(
            script=[{"error": RATE_LIMITED}] * 3,
            error_headers=limit_headers(None, time.time() + 60),
        )
        write_unit(home, "rl", project.unit(model.url))
        started = time.time()
        run_until(home, "rl", lambda: state_change(home, "paused"), what="the unit paused")
    hit = sentinel(home)
    assert hit is not None and hit["name"] == "rate-limited", (version, hit)
    print(f"claude-code {version}: {hit['name']} on {hit['line'].strip()!r} until {hit['until']}")
    assert "API Error: Request rejected (429) · fake rate limit message" in hit["line"]
    until = parse_iso(hit["until"])
    assert until is not None and 290 <= until - started <= 330, hit["until"]


HANDOFF_ASK = "your context is nearly full"


def _handoff_brain(body: dict[str, Any]) -> dict[str, Any] | None:
    """Work near the context wall (60k of the 67k threshold: `10% until
    auto-compact`); when agentd asks, record a handoff."""
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


@pytest.mark.parametrize("version", versions("claude-code")[1:])
def test_the_newer_versions_hand_over_on_their_footer(
    home: Path, tmp_path: Path, version: str
) -> None:
    """The first pinned version is tested by test_claude_code.py; the footer's
    `10% until auto-compact` of the newer ones asks for the handoff too."""
    project = ClaudeProject(tmp_path, claude_exe(version))
    agentctl("state", "--dir", str(project.project / ".agent"), "init", cwd=tmp_path)
    with FakeModel(tmp_path / "requests.jsonl", brain=_handoff_brain) as model:
        unit = project.unit(model.url, handoff={"wait": "60s"})
        unit["env"] = with_agentctl_on_path(unit["env"])
        write_unit(home, "ho", unit)
        run_until(
            home, "ho", lambda: second_bootstrap_read(model, "ho"), what="session 2's bootstrap"
        )
    asked, done = events(home, "session.handoff")[:2]
    print(f"claude-code {version}: handoff on {asked['line'].strip()!r}")
    assert asked["phase"] == "asked" and asked["left"] <= 15, asked
    assert "until auto-compact" in asked["line"], asked
    assert done["changed"] is True
    assert session_starts(home, "ho")[1]["reason"] == "context"
    second = (home / "logs" / "ho" / "bootstrap-2.md").read_text(encoding="utf-8")
    assert "refactor half done: order_service next" in second
