"""``Supervisor.stop`` returns once the unit is stopped and its processes are gone.

In-process, with a real session: an agent that ignores SIGTERM (so the stop
takes its grace, then SIGKILL). Callers (``agentctl stop``, a daemon's
shutdown, a removed unit file) rely on the return meaning "done", not "asked".
"""

from __future__ import annotations

from pathlib import Path

from agentd.supervisor.api import Supervisor
from agentd.supervisor.states import State
from tests.support import fake, gone, run_with, states


def test_stop_returns_with_the_unit_stopped_and_its_processes_gone(home: Path) -> None:
    seen_after: list[object] = []

    async def body(sup: Supervisor) -> None:
        svc = sup.get("u")
        svc.start()
        await svc.wait(lambda s: s == State.RUNNING)
        assert svc.session is not None
        pid = svc.session.pid
        await sup.stop("u")
        seen_after.extend([svc.state, gone(pid)])

    unit = {"command": fake("ignore-term", "wait"), "stop": {"grace": "200ms"}}
    seen = run_with(home, "u", unit, body)
    assert seen_after == [State.STOPPED, True]
    assert states(seen) == ["starting", "running", "stopping", "stopped"]
