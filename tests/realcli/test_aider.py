"""The real aider (pinned, from PyPI, in a venv of its own) under `preset: aider`,
against a fake model (Chat Completions). Each session is one `--message-file`
turn whose message is the bootstrap; aider exits 0 after it and the preset
starts the next.

- its own context error: the provider's context-window error makes aider print
  `Model openai/fake has hit a token limit!`; the session ends and the next
  one's message is a fresh bootstrap;
- the URLs aider offers (`--yes-always` accepts them): the preset's
  `BROWSER=true` keeps a browser from opening;
- a missing message file: aider prints `FILE: file not found error` and waits at
  its prompt for ever; the unit is `failed`, and says why;
- a rate limit: aider prints no reset time and retries by itself, doubling its
  wait; once it waits 8 s or more the unit is paused for 5 minutes.

aider prints no context-pressure line of its own (only `/tokens` does, on
request), so there is no handoff to test: every turn is a fresh session.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agentd.times import parse_iso
from tests.realcli.agentd_run import session_starts
from tests.realcli.gemini_aider import AiderProject, FakeChat, aider_exe, chat_text
from tests.realcli.runs import run_until, sentinel, state_change
from tests.support import events, write_unit

pytestmark = [pytest.mark.timeout(150), pytest.mark.slow]
CONTEXT_ERROR = {
    "status": 400,
    "type": "invalid_request_error",
    "code": "context_length_exceeded",
    "message": "This model's maximum context length is 128000 tokens. However, your messages "
    "resulted in 130000 tokens. Please reduce the length of the messages.",
}
RATE_LIMIT = {
    "status": 429,
    "type": "rate_limit_error",
    "code": "rate_limit_exceeded",
    "message": "Rate limit reached for requests",
}


@pytest.fixture(scope="session")
def aider_bin() -> Path:
    return aider_exe()


def bootstrap_of(model: FakeChat, unit: str, session: int) -> bool:
    head = f"# agentd bootstrap: {unit}, session {session}"
    return any(
        head in chat_text(r["body"]) for r in model.chats() if isinstance(r.get("body"), dict)
    )


def test_a_token_limit_restarts_with_a_fresh_bootstrap(
    home: Path, tmp_path: Path, aider_bin: Path
) -> None:
    def brain(body: dict[str, Any]) -> dict[str, Any]:
        if "session 1" in chat_text(body):
            return {"error": CONTEXT_ERROR}
        return {"reply": "done with this turn", "input_tokens": 100}

    project = AiderProject(tmp_path, aider_bin)
    with FakeChat(tmp_path / "requests.jsonl", brain=brain) as model:
        write_unit(home, "ad", project.unit(model.url))
        run_until(home, "ad", lambda: bootstrap_of(model, "ad", 2), what="session 2's bootstrap")
    hit = sentinel(home)
    assert hit is not None
    print(f"aider: {hit['name']} on {hit['line'].strip()!r}")
    assert hit["name"] == "token-limit", hit
    assert "Model openai/fake has hit a token limit!" in hit["line"]
    assert session_starts(home, "ad")[1]["reason"] == "sentinel:token-limit"


URL_ERROR = {
    "status": 400,
    "type": "invalid_request_error",
    "message": "Invalid request, see https://example.invalid/docs/errors for details",
}


def test_the_urls_aider_offers_open_no_browser(
    home: Path, tmp_path: Path, aider_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider error naming a URL: `--yes-always` says yes to opening it, and
    Python's webbrowser runs $BROWSER. agentd's environment names a browser (a
    desktop's; here one that logs); the preset's `BROWSER=true` opens none. The
    same unit with the desktop's BROWSER in its own env does open it."""
    log = tmp_path / "browser.log"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "opened $*" >> {log}\n', encoding="utf-8")
    browser.chmod(0o755)
    monkeypatch.setenv("BROWSER", str(browser))
    project = AiderProject(tmp_path, aider_bin)
    # The same unit with the desktop's BROWSER in its own env: the URL is opened.
    with FakeChat(tmp_path / "ac.jsonl", brain=lambda body: {"error": URL_ERROR}) as model:
        unit = project.unit(model.url)
        unit["env"]["BROWSER"] = str(browser)
        write_unit(home, "ac", unit)
        run_until(home, "ac", log.exists, what="the URL opened by the unit's own BROWSER")
    assert "opened https://example.invalid/docs/errors" in log.read_text()
    log.unlink()
    # The preset's BROWSER=true: the turn ends (the next one starts), nothing opened.
    with FakeChat(tmp_path / "ab.jsonl", brain=lambda body: {"error": URL_ERROR}) as model:
        write_unit(home, "ab", project.unit(model.url))
        run_until(home, "ab", lambda: len(session_starts(home, "ab")) >= 2, what="a second turn")
    shown = (home / "logs" / "ab" / "transcript.log").read_bytes()
    assert b"https://example.invalid/docs/errors" in shown, "aider offered no URL"
    assert not log.exists(), f"a browser opened: {log.read_text()}"


def test_a_missing_message_file_fails_the_unit_with_the_reason(
    home: Path, tmp_path: Path, aider_bin: Path
) -> None:
    project = AiderProject(tmp_path, aider_bin)
    missing = tmp_path / "nope.txt"
    with FakeChat(tmp_path / "requests.jsonl") as model:
        unit = project.unit(model.url)
        unit["command"] = [*unit["command"][:-1], str(missing)]  # --message-file nope.txt
        write_unit(home, "am", unit)
        # aider 0.86 goes on to chat after the error: whether agentd's SIGTERM comes
        # first is a race on loaded cores, so what the unit does is asserted, not that
        failed = run_until(home, "am", lambda: state_change(home, "failed"), what="failed")
    hit = sentinel(home)
    assert hit is not None
    print(f"aider: {hit['name']} on {hit['line'].strip()!r}")
    assert hit["name"] == "message-file-unreadable", hit
    assert failed["reason"] == "sentinel:message-file-unreadable", failed
    assert f"{missing}: file not found error" in (failed.get("detail") or ""), failed
    assert len(session_starts(home, "am")) == 1


def test_a_persisting_rate_limit_pauses(home: Path, tmp_path: Path, aider_bin: Path) -> None:
    project = AiderProject(tmp_path, aider_bin)
    with FakeChat(tmp_path / "requests.jsonl", brain=lambda body: {"error": RATE_LIMIT}) as model:
        write_unit(home, "ar", project.unit(model.url))
        run_until(home, "ar", lambda: state_change(home, "paused"), what="paused", timeout=60)
        tries = len(model.chats())
    hit = sentinel(home, "provider-retrying")
    assert hit is not None, events(home, "session.sentinel")
    print(f"aider: {hit['name']} on {hit['line'].strip()!r} until {hit['until']}")
    assert "Retrying in 8.0 seconds" in hit["line"], hit
    assert any(
        "The API provider has rate limited you" in e["line"]
        for e in events(home, "session.sentinel")
    )
    until, at = parse_iso(hit["until"]), parse_iso(hit["timestamp"])
    assert until is not None and at is not None and 290 <= until - at <= 310
    assert tries >= 4, tries
    assert time.time() < until
