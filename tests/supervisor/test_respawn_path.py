"""The way from a session's end to the next session's start (a respawn) holds only
what must come first: the old tree ended, the history's record of how it ended
durable, the next session's record written. What the ended session leaves that
can wait (closing its pty, drawing and keeping its last screen) is done once the
next session is spawned; the history's fsync runs on a thread meanwhile."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentd.config.unitfile import load_unit
from agentd.events import EventLog
from agentd.paths import Paths
from agentd.session.child import Child
from agentd.session.screen import ScreenCapture
from agentd.supervisor.api import Supervisor
from agentd.supervisor.records.history import History
from agentd.supervisor.records.sessions import Recorded, SessionRecords
from agentd.supervisor.states import State
from tests.support import async_wait_for, fake, write_unit

QUICK = {"min_uptime": "0s", "delay": "0s", "max_delay": "200ms", "burst": 1000}
SLOW_FSYNC = 0.3  # s an fsync of the history takes off the loop's thread here


@pytest.mark.slow
def test_an_ended_sessions_leftovers_wait_for_the_next_spawn_and_its_end_is_durable_first(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_unit(
        home,
        "r",
        {"command": fake("out:HELLO", "if-session:2:exit:0", "exit:42"), "restart": QUICK},
    )
    paths = Paths.resolve(home)
    history_file = str(paths.unit_logs("r") / "history.jsonl")
    steps: list[tuple[Any, ...]] = []  # in the order they happened, on any thread
    main = threading.get_ident()

    real_begin, real_append = SessionRecords.begin, History.append
    real_close, real_draw, real_fsync = Child.close, ScreenCapture.draw, os.fsync

    def begin(self: SessionRecords, record: Recorded) -> None:
        steps.append(("begin", record.session))
        real_begin(self, record)

    def append(self: History, record: dict[str, Any], **kw: Any) -> None:
        steps.append(("appended", record["kind"], record["session"]))
        real_append(self, record, **kw)

    def close(self: Child) -> None:
        if not self.closed:
            steps.append(("pty closed",))
        real_close(self)

    def draw(self: ScreenCapture, **kw: Any) -> Any:
        steps.append(("drawn", self.session))
        return real_draw(self, **kw)

    def fsync(fd: int) -> None:
        history = os.readlink(f"/proc/self/fd/{fd}") == history_file
        if history and threading.get_ident() != main:
            time.sleep(SLOW_FSYNC)  # a busy disk: the loop must not go on without it
        real_fsync(fd)
        if history:
            steps.append(("history synced",))

    monkeypatch.setattr(SessionRecords, "begin", begin)
    monkeypatch.setattr(History, "append", append)
    monkeypatch.setattr(Child, "close", close)
    monkeypatch.setattr(ScreenCapture, "draw", draw)
    monkeypatch.setattr(os, "fsync", fsync)

    async def run() -> None:
        sup = Supervisor(paths, EventLog(paths.events_file))
        sup.attach()
        sup.add(load_unit(path))
        try:
            svc = sup.get("r")
            svc.start()
            await async_wait_for(
                svc.wait(lambda s: s == State.DONE),
                timeout=30,
                what="the unit done",
                seen=lambda: steps,
            )
        finally:
            await sup.shutdown()

    asyncio.run(run())
    second = steps.index(("begin", 2))
    ended = steps.index(("appended", "outcome", 1))
    assert ended < second
    assert ("history synced",) in steps[ended:second]  # session 1's end is durable first
    # session 1's pty is closed and its screen drawn once session 2 was spawned
    assert ("pty closed",) not in steps[:second] and ("pty closed",) in steps[second:]
    assert ("drawn", 1) in steps[second:]
