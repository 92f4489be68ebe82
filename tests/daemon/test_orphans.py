"""What a ``kill -9``ed agentd left is ended by the next one, whatever became of its
unit file; a grandchild that cleared its environment and left the session is
ended through its cgroup where agentd has one (issue 11, finding 5)."""

from __future__ import annotations

import json
import os
import shlex
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from agentd.process import cgroup as cgroups
from tests.support import (
    Served,
    StatusWatch,
    events,
    fake,
    gone,
    held,
    kill_held,
    noted_pid,
    poll_for,
    records,
    write_unit,
)


def escapee(pidfile: Path) -> list[str]:
    """A session whose grandchild clears its environment (no marker), leaves the
    session (setsid) and is orphaned (a double fork), then ignores SIGTERM/SIGHUP."""
    hide = f"trap '' TERM HUP; sleep 300 & echo $! > {shlex.quote(str(pidfile))}; exec true"
    return [
        "/bin/sh",
        "-c",
        f"env -i setsid /bin/sh -c {shlex.quote(hide)} </dev/null "
        ">/dev/null 2>&1; echo up; exec sleep 300",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("fate", ["deleted", "broken"])
def test_a_session_of_a_unit_that_does_not_load_again_is_ended(
    dhome: Path, serve: list[Served], fate: str
) -> None:
    pids = dhome / "pids"
    path = write_unit(
        dhome,
        "gone",
        {
            "command": fake("orphan", "wait"),
            "env": {"FAKE_PIDS": str(pids)},
            "stop": {"grace": "300ms"},
        },
    )
    first = Served(dhome)
    serve.append(first.ready())
    poll_for(lambda: noted_pid(pids), what="the orphan's pid")
    orphan, leader = noted_pid(pids), first.status("gone")["pid"]
    assert orphan is not None
    procs = [held(orphan), held(leader)]
    try:
        first.stop(signal.SIGKILL)
        assert (dhome / "run" / "sessions" / "gone.json").exists()
        if fate == "deleted":
            path.unlink()
        else:
            path.write_text("command: [\n")
        second = Served(dhome)
        serve.append(second.ready())
        with StatusWatch(second.socket) as watch:
            for pid in (orphan, leader):
                poll_for(lambda pid=pid: gone(pid), what=f"pid {pid} left by the killed agentd")
            poll_for(
                lambda: not (dhome / "run" / "sessions" / "gone.json").exists(),
                what="the record to go",
            )
        watch.check()
        assert {e["unit"] for e in events(dhome, "session.orphan_killed")} == {"gone"}
        ends = [r for r in records(dhome / "logs" / "gone" / "history.jsonl") if r["kind"] == "end"]
        assert ends[-1]["reason"] == "agentd-lost"
        assert second.stop() == 0
        assert "Traceback" not in second.stderr
    finally:
        for proc in procs:
            kill_held(proc)


def _need_cgroups() -> None:
    if cgroups.delegated_base() is None:
        pytest.skip(
            f"no delegated cgroup v2 here (own cgroup {cgroups.own_cgroup()}, "
            f"uid {os.geteuid()}): sessions are found by their marker only"
        )


@pytest.fixture
def escaped(dhome: Path, serve: list[Served]) -> Iterator[tuple[Served, int]]:
    """A daemon running unit ``esc`` (needs cgroups) and the pid of its escapee."""
    _need_cgroups()
    pidfile = dhome / "escapee.pid"
    write_unit(dhome, "esc", {"command": escapee(pidfile), "stop": {"grace": "300ms"}})
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: pidfile.exists() and pidfile.read_text().strip(), what="the escapee")
    hidden = int(pidfile.read_text())
    proc = held(hidden)
    try:
        yield d, hidden
    finally:
        kill_held(proc)


@pytest.mark.slow
def test_an_env_i_escapee_is_ended_with_its_session(
    dhome: Path, escaped: tuple[Served, int]
) -> None:
    d, hidden = escaped
    assert "AGENTD_SESSION_ID" not in psutil.Process(hidden).environ()
    group = Path(json.loads((dhome / "run" / "sessions" / "esc.json").read_text())["cgroup"])
    assert hidden in cgroups.members(group)
    assert d.result("stop", units=["esc"])[0]["state"] == "stopped"
    poll_for(lambda: gone(hidden), what="the escapee to be ended with its session")
    poll_for(lambda: not group.exists(), what="the session's cgroup to be removed")
    assert d.stop() == 0


@pytest.mark.slow
def test_an_env_i_escapee_left_by_a_killed_agentd_is_reclaimed(
    dhome: Path, serve: list[Served], escaped: tuple[Served, int]
) -> None:
    first, hidden = escaped
    first.stop(signal.SIGKILL)
    (dhome / "units" / "esc.yaml").unlink()  # and its unit is gone too
    assert not gone(hidden)
    second = Served(dhome)
    serve.append(second.ready())
    with StatusWatch(second.socket) as watch:
        poll_for(lambda: gone(hidden), what="the escapee to be reclaimed through its cgroup")
    watch.check()
    assert second.stop() == 0
