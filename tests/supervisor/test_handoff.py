"""Graceful handoff: agentd asks the agent to save its state before the wall."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import agentd, events, fake, records, write_unit

QUICK = {"min_uptime": 0, "delay": "50ms"}
WHEN = r"(?P<left>\d+)% until auto-compact"


def _unit(home: Path, rec: Path, steps: list[str], **handoff: object) -> None:
    write_unit(
        home,
        "ho",
        {
            "command": fake(f"record:{rec}", "if-session:2:exit:0", *steps),
            "inject": {"mode": "none"},
            "handoff": {"when": WHEN, "below": 15, **handoff},
            "restart": QUICK,
        },
    )


@pytest.mark.slow
def test_handoff_types_the_request_waits_for_the_state_then_restarts(
    home: Path, tmp_path: Path
) -> None:
    rec = tmp_path / "rec.jsonl"
    _unit(
        home,
        rec,
        [
            "ctl:state init",
            "out:  12% until auto-compact",
            "prompt:",
            "ctl:state handoff saved-by-me",
            "wait",
        ],
        wait="20s",
    )
    res = agentd(home, "run", "ho", timeout=60)
    assert res.returncode == 0, res.stderr
    assert [r["reason"] for r in records(rec)] == ["start", "context"]
    asked, done = events(home, "session.handoff")
    assert (asked["phase"], asked["left"]) == ("asked", 12)
    assert (done["phase"], done["changed"], done["exited"]) == ("done", True, False)
    assert done["waited_s"] < 15  # ended once the state settled, not at the deadline
    transcript = (home / "logs" / "ho" / "transcript.log").read_text()
    assert "GOT:agentd: your context is nearly full" in transcript  # typed into the session
    assert "saved-by-me" in (home / "logs" / "ho" / "bootstrap-2.md").read_text()


@pytest.mark.slow
def test_handoff_without_a_state_change_restarts_after_the_wait(home: Path, tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    _unit(home, rec, ["out:9% until auto-compact", "wait"], wait="300ms")
    res = agentd(home, "run", "ho", timeout=60)
    assert res.returncode == 0, res.stderr
    assert [r["reason"] for r in records(rec)] == ["start", "context"]
    done = events(home, "session.handoff")[-1]
    assert (done["changed"], done["exited"]) == (False, False)
    assert done["waited_s"] >= 0.3


@pytest.mark.slow
def test_no_handoff_above_the_threshold(home: Path, tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    _unit(home, rec, ["out:40% until auto-compact", "exit:42"], wait="300ms")
    res = agentd(home, "run", "ho", timeout=60)
    assert res.returncode == 0, res.stderr
    assert [r["reason"] for r in records(rec)] == ["start", "exit:42"]
    assert events(home, "session.handoff") == []


@pytest.mark.slow
def test_an_agent_that_exits_during_the_handoff_is_not_waited_for(
    home: Path, tmp_path: Path
) -> None:
    rec = tmp_path / "rec.jsonl"
    _unit(home, rec, ["out:5% until auto-compact", "prompt:", "exit:42"], wait="30s")
    res = agentd(home, "run", "ho", timeout=60)
    assert res.returncode == 0, res.stderr
    assert [r["reason"] for r in records(rec)] == ["start", "exit:42"]
    done = events(home, "session.handoff")[-1]
    assert (done["phase"], done["exited"]) == ("done", True)
