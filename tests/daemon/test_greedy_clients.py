"""Greedy clients of the control socket: floods of idle connections, clients that never read.

Every agent has AGENTD_SOCKET: the daemon must stay responsive (`status` under
1 s at every moment), keep its fds bounded and give them all back.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from agentd.daemon.control.client import Client
from agentd.daemon.control.connections import MAX_PER_UID, WRITE_DEADLINE
from tests.support import Served, fake, poll_for, write_unit

FLOOD = 5000


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def status_time(d: Served) -> float:
    """How long `agentctl status`'s request takes (its client, with a 1 s deadline)."""
    started = time.monotonic()
    with Client(d.socket, timeout=1.0) as client:
        client.call("status")
    return time.monotonic() - started


# Opens N connections (retrying while the daemon's backlog is full) and never says a
# word; prints how many it made, then holds them until its stdin closes. A process of
# its own: its fd limit raised, and the clients under test do not share its GIL.
FLOODER = r"""
import resource, socket, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = int(sys.argv[2]) + 64
resource.setrlimit(resource.RLIMIT_NOFILE, (want if hard < 0 else min(want, hard), hard))
held = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    for _ in range(500):
        try:
            s.connect(sys.argv[1])
            held.append(s)
            break
        except BlockingIOError:
            time.sleep(0.01)
        except OSError:
            break
print(len(held), flush=True)
sys.stdin.read()
"""


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts fds in /proc")
def test_half_open_connections_and_clients_that_never_read(
    dhome: Path,
    serve: list[Served],
) -> None:
    write_unit(dhome, "a", {"command": fake("wait")})
    logs = dhome / "logs" / "a"
    logs.mkdir(parents=True)
    (logs / "transcript.log").write_bytes(b"a line of the agent's output, long enough\n" * 200_000)
    d = Served(dhome).ready()
    serve.append(d)
    poll_for(lambda: d.status("a")["state"] == "running", what="unit a running")
    baseline = fds(d.proc.pid)
    worst: list[float] = []
    with ExitStack() as held:
        flooder = held.enter_context(
            subprocess.Popen(  # closing its stdin ends it
                [sys.executable, "-c", FLOODER, str(d.socket), str(FLOOD)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
        while not select.select([flooder.stdout], [], [], 0)[0]:  # answers during the flood
            worst.append(status_time(d))
        assert int(flooder.stdout.readline()) == FLOOD
        poll_for(
            lambda: fds(d.proc.pid) <= baseline + MAX_PER_UID,
            timeout=10,
            what="the flood capped at MAX_PER_UID fds (once the last are closed)",
        )
        # Clients that ask for megabytes and never read them, and a follower that never reads.
        for _ in range(20):
            s = held.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
            s.connect(str(d.socket))
            s.sendall(
                json.dumps({"cmd": "logs", "args": {"unit": "a", "lines": 100_000}}).encode()
                + b"\n"
            )
        s = held.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        s.connect(str(d.socket))
        s.sendall(b'{"cmd": "events", "args": {"follow": true, "lines": 100000}}\n')
        for _ in range(20):
            worst.append(status_time(d))
        res = subprocess.run(  # the real CLI answers too (its start-up is bench.py's)
            [Path(sys.executable).parent / "agentctl", "status"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert res.returncode == 0, res.stderr
        # Everything is given back: the flood ends, the non-readers (still connected)
        # are dropped by the write deadline.
        flooder.communicate(timeout=30)
        poll_for(
            lambda: fds(d.proc.pid) <= baseline,
            timeout=WRITE_DEADLINE + 20,
            what="fds back to baseline",
        )
    assert max(worst) < 1.0, max(worst)
    assert d.stop() == 0
    assert "Traceback" not in d.stderr
    refused = [
        json.loads(line)
        for line in (dhome / "logs" / "agentd.jsonl").read_text().splitlines()
        if '"control.refused"' in line
    ]
    assert len(refused) <= 1  # said once, if at all
