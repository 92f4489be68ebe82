"""The state dir's lifecycle under the real `agentd run`: created on the first
session, a handoff shown once, `agentctl state complete` ending the unit `done`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import agentd, events, fake, records, write_unit

QUICK = {"min_uptime": "0s", "delay": "50ms", "max_delay": "200ms"}


@pytest.mark.slow
def test_state_complete_ends_the_unit_done_under_a_failure_exit_code(
    home: Path, tmp_path: Path
) -> None:
    rec = tmp_path / "rec.jsonl"
    write_unit(
        home,
        "c",
        {
            "command": fake(
                f"record:{rec}", "if-session:2:ctl:state complete ported-every-module", "exit:143"
            ),
            # 143 is neither a success nor a restart code: without the mark, a crash loop
            "restart": {**QUICK, "burst": 5, "success_codes": [0], "exit_codes": [42]},
        },
    )
    res = agentd(home, "run", "c")
    assert res.returncode == 0, res.stderr
    assert [r["session"] for r in records(rec)] == ["1", "2"]  # session 1: a failure, backoff
    last = events(home, "unit.state")[-1]
    assert (last["to"], last["reason"]) == ("done", "complete")
    assert last["detail"] == "mission complete: ported-every-module"
    history = [
        json.loads(line)
        for line in (home / "logs" / "c" / "history.jsonl").read_text().splitlines()
    ]
    outcome = [h for h in history if h.get("kind") == "outcome"][-1]
    assert (outcome["outcome"], outcome["next"]) == ("done", "done")
    assert outcome["detail"] == "mission complete: ported-every-module"
    assert "state complete" in records(rec)[0]["bootstrap"]  # the rules tell the agent


@pytest.mark.slow
def test_the_first_session_creates_the_state_dir_and_a_handoff_is_shown_once(
    home: Path,
    tmp_path: Path,
) -> None:
    rec = tmp_path / "rec.jsonl"
    write_unit(
        home,
        "h",
        {
            "command": fake(
                f"record:{rec}",
                "if-session:1:ctl:state handoff parser-half-done",
                "if-session:3:exit:0",
                "exit:42",
            ),
            "state": {"layout": "contract"},
            "restart": QUICK,
        },
    )
    res = agentd(home, "run", "h")
    assert res.returncode == 0, res.stderr
    state = home / "work" / ".agent"
    [made] = events(home, "state.init")
    assert made["dir"] == str(state) and made["layout"] == "contract" and made["session"] == 1
    assert (state / ".layout").read_text() == "contract\n"
    assert {"PROJECT_CONTRACT.md", "TASK_STATE.md", "SCRATCH.md", "decisions.log"} <= {
        p.name for p in state.iterdir()
    }
    boots = [r["bootstrap"] for r in records(rec)]
    assert "parser-half-done" not in boots[0]
    assert "parser-half-done" in boots[1] and "· session 1]" in boots[1]  # dated, by session 1
    assert "parser-half-done" not in boots[2]  # shown once, then history
    history = (state / "handoffs.md").read_text()
    assert "## Shown to session 2" in history and "parser-half-done" in history
    assert "parser-half-done" not in (state / "TASK_STATE.md").read_text()
