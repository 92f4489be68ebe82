"""The next session's process is started while the last one ends (agentd.session.launch):
the session that follows a restart runs in the process started ahead for it, and a
process started ahead for a session that does not come is ended, with its cgroup."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psutil

from agentd.config.unitfile import load_unit
from agentd.events import EventLog
from agentd.paths import Paths
from agentd.process import cgroup as cgroups
from agentd.process.tree import MARKER_VAR
from agentd.supervisor.api import Supervisor
from agentd.supervisor.states import State
from tests.conftest import fake, poll_for
from tests.helpers import write_unit

QUICK = {"min_uptime": "0s", "delay": "0s", "max_delay": "200ms", "burst": 1000}


def marked(unit: str, session: int) -> list[int]:
    """The live processes whose environment carries session ``session``'s marker."""
    found = []
    for proc in psutil.process_iter(["pid", "environ", "status"]):
        marker = (proc.info.get("environ") or {}).get(MARKER_VAR, "")
        if f"{unit}:{session}:" in marker and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc.info["pid"])
    return found


def run_unit(home: Path, unit: dict[str, Any], until: State) -> list[dict[str, Any]]:
    """Run unit ``p`` in-process until it is ``until``; the events, each session's end
    with ``ahead``: the processes then carrying the next session's marker."""
    path = write_unit(home, "p", unit)
    paths = Paths.resolve(home)
    seen: list[dict[str, Any]] = []

    def note(event: dict[str, Any]) -> None:
        if event["event"] == "session.exit":  # (its spawn may still be on its thread)
            ahead = poll_for(lambda: marked("p", event["session"] + 1), what="a process ahead")
            event = {**event, "ahead": ahead}
        seen.append(event)

    async def main() -> None:
        log = EventLog(paths.events_file)
        log.subscribe(note)
        sup = Supervisor(paths, log)
        sup.attach()
        sup.add(load_unit(path))
        try:
            svc = sup.get("p")
            svc.start()
            await asyncio.wait_for(svc.wait(lambda s: s == until), 30)
        finally:
            await sup.shutdown()
            log.close()

    asyncio.run(main())
    return seen


def test_the_session_after_a_restart_runs_in_the_process_started_for_it(home: Path) -> None:
    seen = run_unit(
        home,
        {"command": fake("if-session:4:exit:0", "exit:42"), "restart": QUICK},
        until=State.DONE,
    )
    starts = {e["session"]: e["pid"] for e in seen if e["event"] == "session.start"}
    ends = {e["session"]: e["ahead"] for e in seen if e["event"] == "session.exit"}
    assert sorted(starts) == [1, 2, 3, 4]
    for session in (1, 2, 3):  # each ended with the next one's process already there
        assert ends[session] == [starts[session + 1]], (session, ends, starts)
    # The last one (done) ended with one too (it could have been restarted): gone now.
    assert len(ends[4]) == 1 and not psutil.pid_exists(ends[4][0])
    base = cgroups.delegated_base()
    if base is not None:  # and no cgroup of a session that did not come
        assert not [p for p in base.glob("agentd-*") if ".p.5." in p.name]


def test_a_stop_in_a_short_backoff_ends_the_process_started_ahead(home: Path) -> None:
    """Three quick failures in a row back off (here 150 ms, short enough to keep the
    next session's process waiting); a stop then ends that process too."""
    unit = {"command": fake("exit:3"), "restart": {**QUICK, "delay": "150ms"}}
    path = write_unit(home, "p", unit)
    paths = Paths.resolve(home)
    waiting: list[list[int]] = []

    async def main() -> None:
        log = EventLog(paths.events_file)
        sup = Supervisor(paths, log)
        sup.attach()
        sup.add(load_unit(path))
        try:
            svc = sup.get("p")
            svc.start()
            await asyncio.wait_for(svc.wait(lambda s: s == State.BACKOFF), 30)
            waiting.append(marked("p", svc.session_no + 1))
            await sup.stop("p")
            waiting.append(marked("p", svc.session_no + 1))
        finally:
            await sup.shutdown()
            log.close()

    asyncio.run(main())
    before, after = waiting
    assert len(before) == 1  # the next session's process, waiting out the backoff
    assert after == [] and not psutil.pid_exists(before[0])
