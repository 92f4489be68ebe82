"""An ended session's last screen is kept (logs/UNIT/screens/N.json) off the way to
the next session: a restart does not wait for it, but the screens are written in
order, and one is on disk before the unit settles (done, failed, stopped)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from agentd.config.unitfile import load_unit
from agentd.events import EventLog
from agentd.paths import Paths
from agentd.supervisor import service as service_module
from agentd.supervisor.api import Supervisor
from agentd.supervisor.records import screens
from agentd.supervisor.states import State
from tests.support import async_poll_for, async_wait_for, fake, write_unit

QUICK = {"min_uptime": "0s", "delay": "0s", "max_delay": "200ms", "burst": 1000}


@pytest.mark.slow
def test_a_restart_does_not_wait_for_the_last_screen_and_settling_does(
    home: Path, monkeypatch: Any
) -> None:
    path = write_unit(
        home,
        "k",
        {"command": fake("out:HELLO", "if-session:3:exit:0", "exit:42"), "restart": QUICK},
    )
    paths = Paths.resolve(home)
    logs = paths.unit_logs("k")
    release = threading.Event()
    kept: list[int] = []  # the sessions whose screens were written, in order
    real_keep = screens.keep

    def slow_keep(logs_dir: Path, shown: dict[str, Any], **kw: Any) -> None:
        if shown["session"] == 1:
            assert release.wait(30), "the test never let the first screen be written"
        real_keep(logs_dir, shown, **kw)
        kept.append(shown["session"])

    monkeypatch.setattr(service_module.screens, "keep", slow_keep)
    seen: list[dict[str, Any]] = []

    async def main() -> State:
        log = EventLog(paths.events_file)
        log.subscribe(seen.append)
        sup = Supervisor(paths, log)
        sup.attach()
        sup.add(load_unit(path))
        try:
            svc = sup.get("k")
            svc.start()
            # Session 2 starts while session 1's screen is still being written.
            await async_poll_for(
                lambda: any(e["event"] == "session.start" and e["session"] == 2 for e in seen),
                what="session 2 started",
                seen=lambda: [e["event"] for e in seen],
            )
            assert kept == [] and not (screens.folder(logs) / "1.json").exists()
            release.set()
            await async_wait_for(
                svc.wait(lambda s: s == State.DONE),
                timeout=30,
                what="the unit done",
                seen=lambda: [(e["event"], e.get("session"), e.get("to")) for e in seen][-20:],
            )
            # Settled: every screen is on disk, written in the order the sessions ended.
            assert kept == [1, 2, 3]
            assert all((screens.folder(logs) / f"{n}.json").exists() for n in (1, 2, 3))
            return svc.state
        finally:
            release.set()
            await sup.shutdown()
            log.close()

    assert asyncio.run(main()) == State.DONE
