"""The way from a session's end to the next session's start (a respawn) holds only
what must come first: the old tree ended, the history's record of how it ended
durable, the next session's record written. What the ended session leaves that
can wait (closing its pty, drawing and keeping its last screen) is done once the
next session is spawned; the history's fsync runs on a thread meanwhile. The
usage records of a CLI that exited by itself are read while its tree is ended."""

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
from agentd.session import session as session_module
from agentd.session.child import Child
from agentd.session.screen import ScreenCapture
from agentd.supervisor.api import Supervisor
from agentd.supervisor.records.history import History
from agentd.supervisor.records.sessions import Recorded, SessionRecords
from agentd.supervisor.states import State
from agentd.supervisor.usage.sources import Source
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

    asyncio.run(run_to_done(paths, path, "r", lambda: steps))
    second = steps.index(("begin", 2))
    ended = steps.index(("appended", "outcome", 1))
    assert ended < second
    assert ("history synced",) in steps[ended:second]  # session 1's end is durable first
    # session 1's pty is closed and its screen drawn once session 2 was spawned
    assert ("pty closed",) not in steps[:second] and ("pty closed",) in steps[second:]
    assert ("drawn", 1) in steps[second:]


async def run_to_done(paths: Paths, path: Path, name: str, seen: Any) -> None:
    sup = Supervisor(paths, EventLog(paths.events_file))
    sup.attach()
    sup.add(load_unit(path))
    try:
        svc = sup.get(name)
        svc.start()
        await async_wait_for(
            svc.wait(lambda s: s == State.DONE), timeout=30, what="the unit done", seen=seen
        )
    finally:
        await sup.shutdown()


@pytest.mark.slow
def test_a_cli_that_exited_by_itself_has_its_usage_read_while_its_tree_is_ended(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unit = {
        "command": fake("exit:0"),
        "env": {"HOME": str(tmp_path)},  # where the CLI's records would be: none
        "inject": {"mode": "none"},
        "usage": {"source": "claude-transcript"},
    }
    path = write_unit(home, "u", unit)
    reading = threading.Event()  # the last read of its records began
    began: list[bool] = []  # for each tree ended: had that read begun by then?
    real_read, real_end = Source.read, session_module.end_session_tree

    def read(self: Source, *, final: bool = False) -> Any:
        if final:
            reading.set()
        return real_read(self, final=final)

    async def end_session_tree(**kw: Any) -> Any:
        ended = await real_end(**kw)
        began.append(await asyncio.to_thread(reading.wait, 5))
        return ended

    monkeypatch.setattr(Source, "read", read)
    monkeypatch.setattr(session_module, "end_session_tree", end_session_tree)
    asyncio.run(run_to_done(Paths.resolve(home), path, "u", lambda: began))
    assert began == [True]
