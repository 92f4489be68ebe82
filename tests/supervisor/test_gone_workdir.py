"""A workdir deleted after its unit loaded (issue 27): with the default `.agent` state
dir it was re-created empty and the agent started there with fresh state; now it is
`spawn-error`, as when the state dir is elsewhere."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentd.supervisor.api import Supervisor
from agentd.supervisor.states import State
from tests.support import fake, run_with, states


@pytest.mark.parametrize("state_dir", [None, "notes/agent"])
def test_a_deleted_workdir_is_a_spawn_error_and_is_not_created(
    home: Path, tmp_path: Path, state_dir: str | None
) -> None:
    work = tmp_path / "gone"
    work.mkdir()

    async def body(sup: Supervisor) -> None:
        shutil.rmtree(work)
        svc = sup.get("g")
        svc.start()
        await svc.wait(lambda s: s in (State.FAILED, State.RUNNING, State.BACKOFF))
        assert svc.state == State.FAILED, svc.state

    unit = {"command": fake("wait"), "workdir": str(work), "autostart": False}
    if state_dir:
        unit["state"] = {"dir": state_dir}
    seen = run_with(home, "g", unit, body)
    assert not work.exists()  # nothing made it again, not even the state dir's parent
    assert states(seen)[-1] == "failed"
    ended = [e for e in seen if e["event"] == "session.exit"]
    assert ended and ended[-1]["reason"] == "spawn-error"
    assert str(work) in ended[-1]["error"]
