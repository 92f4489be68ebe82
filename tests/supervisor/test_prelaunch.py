"""How the supervisor starts agents (agentd.session.launch): through the fork server
(agentd.session.forkserver) a session's agent is agentd's own child, born in its
cgroup; where the fork server cannot clone, the next session's exec stub is started
while the last session ends, the session that follows a restart runs in it, and a
stub started for a session that does not come is ended, with its cgroup."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from agentd.config.unitfile import load_unit
from agentd.events import EventLog
from agentd.paths import Paths
from agentd.process import cgroup as cgroups
from agentd.process.tree import MARKER_VAR
from agentd.session.forkserver import ForkServer
from agentd.supervisor.api import Supervisor
from agentd.supervisor.states import State
from tests.support import async_poll_for, fake, poll_for, write_unit

QUICK = {"min_uptime": "0s", "delay": "0s", "max_delay": "200ms", "burst": 1000}


@pytest.fixture
def no_fork_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """As where clone3 is refused: agents start through the exec stub."""
    monkeypatch.setattr(ForkServer, "supported", staticmethod(lambda: False))


def marked(unit: str, session: int) -> list[int]:
    """The live processes whose environment carries session ``session``'s marker (this
    test process's: the other workers' units may have the same name)."""
    mine = f"{os.environ.get('AGENTD_MARKER_PREFIX', '')}{unit}:{session}:"
    found = []
    for proc in psutil.process_iter(["pid", "environ", "status"]):
        marker = (proc.info.get("environ") or {}).get(MARKER_VAR, "")
        if marker.startswith(mine) and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc.info["pid"])
    return found


def run_unit(
    home: Path, unit: dict[str, Any], until: State, *, ahead: bool = True
) -> list[dict[str, Any]]:
    """Run unit ``p`` in-process until it is ``until``; the events, each session's end
    with ``ahead`` (if asked): the processes then carrying the next session's marker."""
    path = write_unit(home, "p", unit)
    paths = Paths.resolve(home)
    seen: list[dict[str, Any]] = []

    def note(event: dict[str, Any]) -> None:
        if ahead and event["event"] == "session.exit":  # (its spawn may be on its thread)
            found = poll_for(lambda: marked("p", event["session"] + 1), what="a process ahead")
            event = {**event, "ahead": found}
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


def test_the_session_after_a_restart_runs_in_the_stub_started_for_it(
    home: Path, no_fork_server: None
) -> None:
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


def test_a_stop_in_a_short_backoff_ends_the_stub_started_ahead(
    home: Path, no_fork_server: None
) -> None:
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
            number = svc.session_no + 1
            waiting.append(
                await async_poll_for(lambda: marked("p", number), what="the process started ahead")
            )
            await sup.stop("p")
            # (a stub still being spawned on its thread is ended once it is spawned)
            await async_poll_for(
                lambda: not marked("p", number),
                what="no process of the next session",
                seen=lambda: marked("p", number),
            )
            waiting.append(marked("p", number))
        finally:
            await sup.shutdown()
            log.close()

    asyncio.run(main())
    before, after = waiting
    assert len(before) == 1  # the next session's process, waiting out the backoff
    assert after == [] and not psutil.pid_exists(before[0])


def test_the_fork_server_makes_the_agent_agentds_child_in_its_cgroup(
    home: Path, tmp_path: Path
) -> None:
    """Each session's agent: agentd's child (it reaps it: exit codes arrive), in the
    session's cgroup where there is one, and nothing of the next session runs before
    its turn (no stub started ahead)."""
    if not ForkServer.supported():
        pytest.skip("the fork server needs Linux")
    out = tmp_path / "seen"
    script = (
        "import os, sys\n"
        "with open(sys.argv[1], 'a') as f:\n"
        "    f.write(f\"{os.getppid()} {open('/proc/self/cgroup').read().split()[-1]}\\n\")\n"
        "sys.exit(0 if os.environ['AGENTD_SESSION'] == '3' else 42)\n"
    )
    seen = run_unit(
        home,
        {"command": [sys.executable, "-c", script, str(out)], "restart": QUICK},
        until=State.DONE,
        ahead=False,
    )
    exits = [e for e in seen if e["event"] == "session.exit"]
    assert [e.get("code") for e in exits] == [42, 42, 0]  # reaped by agentd: codes known
    rows = [line.split() for line in out.read_text().splitlines()]
    assert {int(ppid) for ppid, _ in rows} == {os.getpid()}  # agentd (here: this process)
    if cgroups.delegated_base() is not None:
        assert all(group.startswith("0::/") and "agentd-" in group for _, group in rows)
        assert len({group for _, group in rows}) == 3  # one per session


def test_a_refused_clone_falls_back_to_the_stub(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where clone3 is refused (seccomp, old kernels), sessions start all the same."""
    from agentd.session import forkserver

    async def refuse(self: ForkServer, *_: Any) -> tuple[int, str]:
        self.refused = "clone:38:Function not implemented"
        raise forkserver.ServerGone(self.refused)

    monkeypatch.setattr(ForkServer, "start", refuse)
    seen = run_unit(
        home,
        {"command": fake("if-session:2:exit:0", "exit:42"), "restart": QUICK},
        until=State.DONE,
        ahead=False,
    )
    assert [e.get("code") for e in seen if e["event"] == "session.exit"] == [42, 0]
