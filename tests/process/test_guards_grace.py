"""The stop grace, in seconds, as the process layer spends it (real processes).

An agent that shuts down cleanly within ``grace`` is left to do so, never
SIGKILLed; one that ignores the signal lives until ``grace`` has passed, then
is killed. (The unit file's ``stop.grace: 10s`` reaches here as 10.0.)
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from agentd.process.ending import EndResult, end_session_tree
from agentd.process.tree import MARKER_VAR, session_env_marker
from tests.support import FAKE_AGENT

# SIGTERM: wait 300 ms (a clean shutdown that takes a while), then exit 0
SLOW_CLEAN = "trap 'sleep 0.3; exit 0' TERM; echo up; while :; do sleep 0.02; done"


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
        if p.stdout is not None:
            p.stdout.close()


def start(procs: list[subprocess.Popen[bytes]], argv: list[str]) -> tuple[int, str]:
    marker = session_env_marker("grace", len(procs) + 1)
    p = subprocess.Popen(
        argv,
        env={**os.environ, MARKER_VAR: marker},
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    procs.append(p)
    assert p.stdout is not None and p.stdout.readline()  # up, its trap set
    return p.pid, marker


def end(pid: int, marker: str, grace: float) -> EndResult:
    return asyncio.run(
        end_session_tree(leader=pid, marker=marker, sid=pid, sig=signal.SIGTERM, grace=grace)
    )


def test_an_agent_that_shuts_down_within_the_grace_is_never_killed(
    started: list[subprocess.Popen[bytes]],
) -> None:
    pid, marker = start(started, ["sh", "-c", SLOW_CLEAN])
    result = end(pid, marker, grace=5.0)
    assert started[0].wait(10) == 0  # its own clean exit, not a SIGKILL
    assert result.killed == [] and result.survivors == [] and pid in result.signalled


def test_an_agent_that_ignores_the_signal_lives_until_the_grace_has_passed(
    started: list[subprocess.Popen[bytes]],
) -> None:
    argv = [sys.executable, FAKE_AGENT, "ignore-term", "out:up", "wait"]
    pid, marker = start(started, argv)
    result = end(pid, marker, grace=0.5)
    assert started[0].wait(10) == -signal.SIGKILL and result.killed == [pid]
    assert result.duration_s >= 0.5  # a lower bound: it had its whole grace
