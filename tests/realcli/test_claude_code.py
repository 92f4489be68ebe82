"""The real Claude Code (pinned, from npm) under agentd, against a fake model.

What these prove is about the real CLI, not about a stand-in: the texts it
draws, the hooks it runs, how it compacts. The fake model (``model.py``) only
answers; compaction is Claude Code's own (two replies reporting ~97k tokens of
a 100k window).
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import poll_for
from tests.helpers import agentd_popen, events, records, write_unit
from tests.realcli.conftest import ClaudeProject
from tests.realcli.model import bash, fake_model, first_user_text

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

BIG = 97_000  # reported input tokens: two such replies make Claude Code compact


def _stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate(timeout=10)
    return err or ""


def _session_starts(home: Path, unit: str) -> list[dict[str, object]]:
    return [r for r in records(home / "logs" / unit / "history.jsonl") if r.get("kind") == "start"]


def test_screen_sentinel_restarts_with_a_bootstrap_that_says_why(
    home: Path, tmp_path: Path, claude_project: ClaudeProject,
) -> None:
    """No hooks: Claude Code draws `Compacting conversation`, the preset's sentinel
    ends the session, and session 2 is started with a fresh bootstrap naming why."""
    with fake_model(tmp_path / "requests.jsonl") as model:
        model.control(script=[bash("echo one", BIG), bash("echo two", BIG)])
        write_unit(home, "cc", claude_project.unit(model.url))
        proc = agentd_popen(home, "run", "cc")
        try:
            poll_for(lambda: len(_session_starts(home, "cc")) >= 2, timeout=90,
                     what="a second session")
            second = home / "logs" / "cc" / "bootstrap-2.md"
            poll_for(lambda: any("# agentd bootstrap: cc, session 2" in first_user_text(r["body"])
                                 for r in model.main_requests()),
                     timeout=60, what="session 2's prompt at the model")
        finally:
            err = _stop(proc)
    header = "\n\n".join(second.read_text(encoding="utf-8").split("\n\n")[:2])
    sentinel = events(home, "session.sentinel")[0]
    assert sentinel["name"] in ("compacting", "compacted"), sentinel
    assert f"sentinel:{sentinel['name']}" in header, header
    assert "stopped" in err  # the run ended by our SIGINT, nothing else
