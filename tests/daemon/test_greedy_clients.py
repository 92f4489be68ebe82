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
from contextlib import ExitStack, suppress
from pathlib import Path

import pytest

from agentd.daemon.control.client import Client
from agentd.daemon.control.connections import MAX_PER_UID, WRITE_DEADLINE
from tests.support import Served, fake, poll_for, write_unit

FLOOD = 5000


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def connections(pid: int, path: Path) -> int:
    """The control connections the daemon holds open: its fds that are sockets
    connected at ``path`` (an accepted socket carries the listener's path in
    /proc/net/unix; state 03 is connected, the listener's is 01)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with suppress(OSError):  # closed meanwhile
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    count = 0
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()  # Num RefCount Protocol Flags Type St Inode Path
        if len(fields) == 8 and fields[7] == str(path) and fields[5] == "03":
            count += fields[6] in inodes
    return count


def status_answered(d: Served) -> bool:
    """`agentctl status`'s request, answered whole (unit a's status). How fast is the
    bench's business (scripts/bench_hostile.py): a shared machine says nothing of it."""
    with Client(d.socket, timeout=30.0) as client:
        return [u["unit"] for u in client.call("status")] == ["a"]


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
    # The baseline with no client connected: the daemon closes its end of the last
    # status request's connection a moment after the client has closed its own.
    poll_for(lambda: connections(d.proc.pid, d.socket) == 0, what="no control connection")
    baseline = fds(d.proc.pid)
    answered: list[bool] = []
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
            answered.append(status_answered(d))
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
            answered.append(status_answered(d))
        res = subprocess.run(  # the real CLI answers too (its start-up is bench.py's)
            [Path(sys.executable).parent / "agentctl", "status"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert res.returncode == 0, res.stderr
        # Everything is given back: the flood ends, the non-readers (still connected)
        # are dropped by the write deadline. The follower stays: what it was sent
        # fits in its socket's buffer, so it reads nothing late; it holds one fd.
        flooder.communicate(timeout=30)
        poll_for(
            lambda: connections(d.proc.pid, d.socket) == 1 and fds(d.proc.pid) <= baseline + 1,
            timeout=WRITE_DEADLINE + 20,
            what="the follower's connection alone left (fds back to baseline + 1)",
            seen=lambda: (connections(d.proc.pid, d.socket), fds(d.proc.pid), baseline),
        )
    # The follower closed (the ExitStack): its fd goes too.
    poll_for(
        lambda: connections(d.proc.pid, d.socket) == 0 and fds(d.proc.pid) <= baseline,
        what="fds back to baseline",
        seen=lambda: (connections(d.proc.pid, d.socket), fds(d.proc.pid), baseline),
    )
    assert answered and all(answered), answered  # asked during the flood and after, always answered
    assert d.stop() == 0
    assert "Traceback" not in d.stderr
    refused = [
        json.loads(line)
        for line in (dhome / "logs" / "agentd.jsonl").read_text().splitlines()
        if '"control.refused"' in line
    ]
    assert len(refused) <= 1  # said once, if at all
