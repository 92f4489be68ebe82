"""The completion gate with the real Claude Code (pinned, from npm) under `agentd run`,
against the fake model: the model calls `agentctl state complete` too early once, the
unit's check refuses it, the next session is told so in its bootstrap, does the work,
and only then is the unit `done`."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.realcli.agentd_run import with_agentctl_on_path
from tests.realcli.conftest import ClaudeProject
from tests.realcli.model import FakeModel, bash, given, read_bootstrap, tool_results
from tests.support import agentd_popen, events, records, write_unit

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

REFUSED = "## The claimed completion failed verification"
CHECK = "grep -q 'total: 42' report.txt || { echo 'report.txt has no total'; exit 1; }"


def _eager_brain(body: dict[str, Any]) -> dict[str, Any] | None:
    """Claim completion at once; told that the check refused it, do the work first."""
    first = read_bootstrap(body)
    if first is not None:
        return first
    ran = len(tool_results(body)) - 1  # commands run after reading the bootstrap
    if ran >= 1:
        return {"reply": "handed over"}
    if REFUSED not in given(body):
        return bash('agentctl state complete "report written" && agentctl restart "$AGENTD_UNIT"')
    return bash(
        'echo "total: 42" > report.txt && agentctl state complete "report written, total 42" '
        '&& agentctl restart "$AGENTD_UNIT"'
    )


def test_an_early_completion_is_refused_then_done_once_the_check_passes(
    home: Path,
    tmp_path: Path,
    claude_project: ClaudeProject,
) -> None:
    with FakeModel(tmp_path / "requests.jsonl", brain=_eager_brain) as model:
        unit = claude_project.unit(model.url, complete={"verify": CHECK, "attempts": 2})
        unit["env"] = with_agentctl_on_path(unit["env"])
        write_unit(home, "eager", unit)
        proc = agentd_popen(home, "run", "eager")
        try:
            _, err = proc.communicate(timeout=200)  # it ends by itself: done, or failed
        finally:
            if proc.poll() is None:  # it did not end: stop it as Ctrl-C would, then kill
                proc.send_signal(signal.SIGINT)
                try:
                    proc.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.communicate(timeout=10)
        bodies = [r["body"] for r in model.main_requests()]
    assert proc.returncode == 0, err
    history = records(home / "logs" / "eager" / "history.jsonl")
    starts = [r["reason"] for r in history if r.get("kind") == "start"]
    assert starts == ["start", "verify-failed"]
    assert [r["outcome"] for r in history if r.get("kind") == "outcome"] == [
        "verify-failed",
        "done",
    ]
    assert [(e["ok"], e["exit_code"]) for e in events(home, "unit.verify")] == [
        (False, 1),
        (True, 0),
    ]
    second = (home / "logs" / "eager" / "bootstrap-2.md").read_text(encoding="utf-8")
    assert second.split("\n## ")[1].startswith("The claimed completion failed verification")
    assert f"`{CHECK}` exited with code 1" in second and "report.txt has no total" in second
    # the model was given it: session 2 read its bootstrap with the Read tool
    assert any(REFUSED in given(b) and "report.txt has no total" in given(b) for b in bodies)
    assert (claude_project.project / "report.txt").read_text() == "total: 42\n"
    last = events(home, "unit.state")[-1]
    assert (last["to"], last["reason"]) == ("done", "complete")
