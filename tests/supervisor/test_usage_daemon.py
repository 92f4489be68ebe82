"""The daemon records what each session spent, from what its CLI wrote, and acts on
it: daily budgets in real tokens and money, the context fill as a handoff trigger;
files the agent made hostile never block or crash it.

The CLI here is a shell that writes a real Claude Code 2.1.332 transcript (from
tests/fixtures/usage, whose numbers are known) where Claude Code keeps it, then
goes on as the fake agent: agentd finds it as it finds the real one's (the
program is no `claude`, so agentd gives it no --session-id and looks for the
newest transcript of the workdir). tests/realcli does the same with the real CLIs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.realcli.usage_model import chosen, total
from tests.support import agentd, agentd_popen, events, fake, poll_for, records, write_unit

CAPTURES = Path(__file__).resolve().parent.parent / "fixtures" / "usage"
TRANSCRIPT = CAPTURES / "claude-code-2.1.332-transcript.jsonl"
SID = "2e2b9c5d-428a-4fcd-ba2f-1870a0160bce"
QUICK = {"min_uptime": 0, "delay": "50ms"}
SUMS = total([chosen(1), chosen(2)])  # what the fake model reported to the real CLI
pytestmark = pytest.mark.slow  # each runs the daemon and a session (2 s and more)
EVERY = SUMS["input"] + SUMS["output"] + SUMS["cache_read"] + SUMS["cache_write"]


def _where(tmp_path: Path, workdir: Path) -> Path:
    folder = re.sub(r"[^A-Za-z0-9]", "-", os.path.realpath(workdir))
    return tmp_path / "clihome" / ".claude" / "projects" / folder / f"{SID}.jsonl"


def _unit(home: Path, tmp_path: Path, write: str, *steps: str, **keys: Any) -> Path:
    """A unit whose CLI runs shell ``write`` (``$T`` is where the transcript goes)
    and then the fake agent's ``steps``."""
    workdir = tmp_path / "w"
    workdir.mkdir(exist_ok=True)
    where = _where(tmp_path, workdir)
    make = f'T={shlex.quote(str(where))}; mkdir -p "$(dirname "$T")"'
    script = f"{make}; {write}; exec {shlex.join(fake(*steps))}"
    unit: dict[str, Any] = {
        "command": ["sh", "-c", script],
        "workdir": str(workdir),
        "env": {"HOME": str(tmp_path / "clihome")},
        "inject": {"mode": "none"},
        "usage": {"source": "claude-transcript"},
        "restart": QUICK,
        **keys,
    }
    write_unit(home, "u", unit)
    return where


def _ends(home: Path) -> list[dict[str, Any]]:
    return [r for r in records(home / "logs" / "u" / "history.jsonl") if r.get("kind") == "end"]


COPY = f'cat {shlex.quote(str(TRANSCRIPT))} > "$T"'


def test_history_records_what_the_cli_wrote_and_agentctl_shows_it(
    home: Path, tmp_path: Path
) -> None:
    _unit(home, tmp_path, COPY, "exit:0")
    res = agentd(home, "run", "u", timeout=60)
    assert res.returncode == 0, res.stderr
    (end,) = _ends(home)
    usage = end["usage"]
    assert {
        k: usage[k]
        for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    } == {
        "input_tokens": SUMS["input"],
        "output_tokens": SUMS["output"],
        "cache_read_tokens": SUMS["cache_read"],
        "cache_write_tokens": SUMS["cache_write"],
    }
    assert (usage["source"], usage["model"], usage["cost_usd"]) == (
        "claude-transcript",
        "claude-opus-5-5",
        0.015898000000000002,
    )
    (said,) = events(home, "session.usage")
    assert said["input_tokens"] == SUMS["input"]
    shown = subprocess.run(
        [sys.executable, "-m", "agentd.cli.agentctl", "history", "u", "--json"],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, AGENTD_HOME=str(home)),
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)[0]["usage"] == usage
    table = subprocess.run(
        [sys.executable, "-m", "agentd.cli.agentctl", "history", "u"],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, AGENTD_HOME=str(home)),
    )
    assert f"{EVERY:,}" in table.stdout or f"{EVERY / 1000:.1f}k" in table.stdout, table.stdout
    assert "$0.016" in table.stdout, table.stdout


def test_a_session_without_records_keeps_the_estimate_marked_so(home: Path, tmp_path: Path) -> None:
    _unit(home, tmp_path, "true", "out:hello there, some output", "exit:0")
    res = agentd(home, "run", "u", timeout=60)
    assert res.returncode == 0, res.stderr
    (end,) = _ends(home)
    assert end["usage"]["source"] == "estimate"
    assert end["usage"]["output_tokens"] == end["tokens"] > 0
    assert end["usage"]["input_tokens"] is None
    assert "no usage records of claude-transcript found" in end["usage"]["note"]


def test_max_tokens_per_day_pauses_the_unit_when_the_real_count_crosses_it(
    home: Path, tmp_path: Path
) -> None:
    """Session 1 spends 4,282 tokens (its CLI's records) and asks for a fresh session;
    the budget is 4,000: the unit pauses until midnight instead of starting it."""
    _unit(home, tmp_path, COPY, "exit:42", budget={"max_tokens_per_day": EVERY - 1})
    proc = agentd_popen(home, "run", "u")
    try:
        budget = poll_for(lambda: events(home, "unit.budget"), timeout=60, what="unit.budget")
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert (budget[0]["budget"], budget[0]["used"]) == ("max_tokens_per_day", EVERY)
    paused = [e for e in events(home, "unit.state") if e["to"] == "paused"]
    assert paused and paused[0]["reason"] == "budget:max_tokens_per_day"
    starts = [r for r in records(home / "logs" / "u" / "history.jsonl") if r.get("kind") == "start"]
    assert len(starts) == 1


def test_a_session_that_crosses_a_budget_is_handed_over_then_paused(
    home: Path, tmp_path: Path
) -> None:
    """The real count crosses max_cost_per_day mid-session: agentd asks the agent to
    record its state (as a handoff), then ends the session and pauses until midnight."""
    _unit(
        home,
        tmp_path,
        COPY,
        "ctl:state init",
        "prompt:working> ",
        "ctl:state handoff saved-before-the-budget",
        "wait",
        budget={"max_cost_per_day": 0.01},
        handoff={"wait": "30s"},
    )
    proc = agentd_popen(home, "run", "u")
    try:
        poll_for(
            lambda: [e for e in events(home, "unit.state") if e["to"] == "paused"],
            timeout=60,
            what="paused",
        )
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    asked, done = events(home, "session.handoff")[:2]
    assert (asked["why"], done["changed"]) == ("budget:max_cost_per_day", True)
    (budget,) = events(home, "unit.budget")
    assert budget["used"] == pytest.approx(0.015898)
    (end,) = _ends(home)
    assert end["reason"] == "budget:max_cost_per_day"
    transcript = (home / "logs" / "u" / "transcript.log").read_text()
    assert "GOT:agentd: today's budget (max_cost_per_day) is used up" in transcript
    state = json.loads((tmp_path / "w" / ".agent" / "state.json").read_text())
    assert "saved-before-the-budget" in json.dumps(state)


def test_context_percent_hands_over_from_the_records_not_the_screen(
    home: Path, tmp_path: Path
) -> None:
    """The last request filled 2,846 of a 5,000-token window (57%): past
    `handoff.context_percent: 50` the session hands over (reason `context`)."""
    rec = tmp_path / "rec.jsonl"
    _unit(
        home,
        tmp_path,
        COPY,
        f"record:{rec}",
        "if-session:2:exit:0",
        "prompt:working> ",
        "wait",
        handoff={"context_percent": 50, "wait": "1s"},
        usage={"source": "claude-transcript", "context_window": 5000},
    )
    res = agentd(home, "run", "u", timeout=90)
    assert res.returncode == 0, res.stderr
    assert [r["reason"] for r in records(rec)] == ["start", "context"]
    asked = events(home, "session.handoff")[0]
    assert asked["why"] == "context" and "57% full" in asked["line"]


HOSTILE = {
    "fifo": ('mkfifo "$T"', "is a FIFO"),
    "shadow": ('ln -s /etc/shadow "$T"', "leads outside"),
    "dev-zero": ('ln -s /dev/zero "$T"', "leads outside"),
    "not-json": ('printf \'{"usage": [\\n\\377\\376\\n\' > "$T"', "not JSON"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_transcripts_never_block_or_crash_the_daemon(
    home: Path, tmp_path: Path, case: str
) -> None:
    make, said = HOSTILE[case]
    _unit(home, tmp_path, make, "out:some output", "exit:0")
    res = agentd(home, "run", "u", timeout=60)
    assert res.returncode == 0, res.stderr
    (end,) = _ends(home)
    assert end["usage"]["source"] == "estimate" and said in end["usage"]["note"], end["usage"]
    if case != "not-json":
        errors = [e["error"] for e in events(home, "unit.error")]
        assert any(said in e for e in errors), errors


def test_a_1_gb_transcript_is_read_bounded(home: Path, tmp_path: Path) -> None:
    _unit(home, tmp_path, f'{COPY}; truncate -s 1G "$T"', "exit:0")
    res = agentd(home, "run", "u", timeout=120)
    assert res.returncode == 0, res.stderr
    (end,) = _ends(home)
    usage = end["usage"]
    assert usage["source"] == "claude-transcript" and usage["input_tokens"] == SUMS["input"]
    assert "larger than 256 MiB" in usage["partial"]
