"""The daemon's ways to start an agent (``agentd.session.launch``), neither a fork of
the daemon: a clone by the fork server (``agentd.session.forkserver``) and, where
clone3 is refused, posix_spawn of an exec stub. What ptyprocess's fork gave must
still hold either way:
the agent leads its own session with the pty as its controlling terminal and
its group in the foreground, it is in its cgroup before it can fork, it gets
exactly its environment, workdir, size and fds 0-2, SIGPIPE at its default, and
what cannot be executed is a SpawnError with the OS's reason."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psutil
import pytest

from agentd.errors import SpawnError
from agentd.process import cgroup as cgroups
from agentd.process.tree import MARKER_VAR, session_env_marker
from agentd.session import launch as launch_module
from agentd.session.child import Child
from agentd.session.forkserver import ForkServer
from agentd.session.launch import Launch
from tests.support import async_poll_for

pytestmark = pytest.mark.skipif(not launch_module.supported(), reason="posix_spawn path: Linux")

T = TypeVar("T")


@pytest.fixture(params=["fork-server", "stub"])
def server(request: pytest.FixtureRequest) -> Iterator[ForkServer | None]:
    """Each way: the fork server's clone, or the exec stub (no server)."""
    if request.param == "stub":
        yield None
        return
    forks = ForkServer()
    yield forks
    forks.close()


# What the agent reports about itself at its first instructions, as JSON.
REPORT = r"""
import json, os, signal, sys
child = os.fork()
if child == 0:  # the agent's first fork: where is its child?
    with open(sys.argv[1], "w") as born:
        born.write(open("/proc/self/cgroup").read())
    os._exit(0)
os.waitpid(child, 0)
fds = sorted(int(f) for f in os.listdir("/proc/self/fd"))  # (one is listdir's own)
tty = open("/dev/tty", "wb", buffering=0)  # fails without a controlling terminal
print(json.dumps({
    "pid": os.getpid(), "sid": os.getsid(0), "pgid": os.getpgid(0),
    "fg": os.tcgetpgrp(0), "tty": os.ttyname(0), "cwd": os.getcwd(),
    "argv0": sys.argv[0], "env": dict(os.environ), "cgroup": open("/proc/self/cgroup").read(),
    "fds": fds,
    "size": list(os.get_terminal_size(0)),
    "blocked": sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])),
}), flush=True)
"""


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(coro, 30))


async def output_of(child: Child) -> bytes:
    out = b""
    deadline = time.monotonic() + 20
    while not child.poll_exit():
        assert time.monotonic() < deadline, f"the agent did not exit; it wrote {out!r}"
        out += child.read() or b""
        await asyncio.sleep(0.01)
    while chunk := child.read():
        out += chunk
    child.close()
    return out


def report_argv(born: Path) -> list[str]:
    """The agent: REPORT, whose forked child writes its cgroup to ``born``."""
    return [sys.executable, "-c", REPORT, str(born)]


def parsed(out: bytes) -> dict[str, Any]:
    line = next(ln for ln in out.decode(errors="replace").splitlines() if ln.startswith("{"))
    return json.loads(line)  # type: ignore[no-any-return]


def test_the_agent_leads_its_session_with_the_pty_as_its_terminal(
    tmp_path: Path, server: ForkServer | None
) -> None:
    # (a UTF-8 locale: in the C locale Python itself would add LC_CTYPE, PEP 538)
    env = {
        "PATH": os.defpath,
        "LANG": "C.UTF-8",
        "ONLY": "this",
        "AGENTD_TEST_OWNER": str(os.getpid()),
    }

    async def main() -> dict[str, Any]:
        child = await Launch.start(None, cols=97, rows=31, server=server).exec(
            report_argv(tmp_path / "born"), cwd=tmp_path, env=env, cols=91, rows=29
        )
        got = parsed(await output_of(child))
        assert got["pid"] == child.pid
        return got

    got = run(main())
    assert got["sid"] == got["pid"] == got["pgid"] == got["fg"]  # leader, in the foreground
    assert got["tty"].startswith("/dev/pts/")
    assert got["cwd"] == str(tmp_path)
    assert got["size"] == [91, 29]  # the size given at exec, not at the start
    assert got["env"] == env  # exactly the session's environment: nothing of the stub
    assert got["fds"] == [0, 1, 2, 3]  # 3: os.listdir's own
    assert got["blocked"] == []  # (what it ignores: Python ignores SIGPIPE itself; see below)


def test_the_program_is_found_on_the_sessions_path_and_named_by_it(
    tmp_path: Path, server: ForkServer | None
) -> None:
    """As pexpect does: a bare name is looked up on the PATH the session gets, and
    argv[0] becomes the path found."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "mytool"
    tool.write_text(f"#!{sys.executable}\nimport sys\nprint('ARGV0', sys.argv[0])\n")
    tool.chmod(0o755)
    env = {"PATH": str(bindir), "AGENTD_TEST_OWNER": str(os.getpid())}

    async def main() -> bytes:
        return await output_of(
            await Launch.start(None, server=server).exec(["mytool"], cwd=tmp_path, env=env)
        )

    assert f"ARGV0 {tool}".encode() in run(main())


def test_the_agent_and_its_first_child_are_in_the_sessions_cgroup(
    tmp_path: Path, server: ForkServer | None
) -> None:
    if cgroups.delegated_base() is None:
        pytest.skip(f"no delegated cgroup v2 here (own cgroup {cgroups.own_cgroup()})")
    group = cgroups.session_cgroup(session_env_marker("launch", 1))
    assert group is not None

    async def main() -> tuple[dict[str, Any], Path | None]:
        launch = Launch.start(group, server=server)
        child = await launch.exec(
            report_argv(tmp_path / "born"), cwd=tmp_path, env=dict(os.environ)
        )
        return parsed(await output_of(child)), launch.cgroup

    try:
        got, kept = run(main())
    finally:
        cgroups.remove(group)
    assert kept == group
    assert got["cgroup"].strip().endswith(group.name)
    assert (tmp_path / "born").read_text().strip().endswith(group.name)  # its child too


@pytest.mark.parametrize(
    "program, said, permanent",
    [
        ("no-such-agent-here", "command not found", True),
        ("{tmp}/plain.txt", "[Errno 13] Permission denied", True),
        ("{tmp}", "[Errno 21] Is a directory", True),
        ("{tmp}/garbage.bin", "[Errno 8] Exec format error", True),
    ],
)
def test_what_cannot_be_executed_is_a_spawn_error(
    tmp_path: Path, server: ForkServer | None, program: str, said: str, permanent: bool
) -> None:
    (tmp_path / "plain.txt").write_text("not a program\n")
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x00\x01\x02 not an executable format\n")
    garbage.chmod(0o755)
    argv = [program.format(tmp=tmp_path)]

    async def main() -> None:
        await Launch.start(None, server=server).exec(argv, cwd=tmp_path, env={"PATH": os.defpath})

    with pytest.raises(SpawnError) as caught:
        run(main())
    assert said in str(caught.value)
    assert caught.value.permanent is permanent


def test_a_workdir_removed_after_the_check_comes_back_from_the_process(
    tmp_path: Path, server: ForkServer | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(launch_module, "check_spawnable", lambda *a: None)
    gone = tmp_path / "gone"

    async def main() -> None:
        await Launch.start(None, server=server).exec(
            [sys.executable, "-c", "pass"], cwd=gone, env={}
        )

    with pytest.raises(SpawnError, match=r"\[Errno 2\] No such file or directory: '.*gone'"):
        run(main())


def test_a_launch_given_up_leaves_no_process(tmp_path: Path) -> None:
    """Given up before its command (a session that does not come), at once or once
    its stub runs: the stub is killed and reaped, its cgroup removed."""
    group = cgroups.session_cgroup(session_env_marker("launch", 2))
    first = session_env_marker(f"launch-{os.getpid()}", 1)

    async def main() -> int:
        at_once = Launch.start(None, marker=first)
        spawning = at_once._started
        at_once.abandon()  # its spawn is still under way on the worker thread
        later = Launch.start(group)
        await later._spawned()
        pid = later.pid
        assert pid is not None and psutil.pid_exists(pid)
        later.abandon()
        assert spawning is not None
        await spawning  # the first one's clean-up runs once its spawn is done
        await async_poll_for(
            lambda: not carrying(first), what="the first stub gone", seen=lambda: carrying(first)
        )
        assert at_once.pid is None
        return pid

    pid = run(main())
    assert not psutil.pid_exists(pid)  # reaped: not even a zombie
    assert group is None or not group.exists()


def carrying(marker: str) -> list[int]:
    """The processes, zombies too, whose environment carries ``marker``."""
    found = []
    for proc in psutil.process_iter(["pid", "environ"]):
        if (proc.info.get("environ") or {}).get(MARKER_VAR) == marker:
            found.append(proc.info["pid"])
    return found


def test_the_stub_exits_when_agentd_goes_away(tmp_path: Path) -> None:
    """A stub whose command never comes (its agentd was killed) ends by itself: its
    command pipe reaches EOF when the last writer is gone."""

    async def main() -> int:
        launch = Launch.start(None)
        await launch._spawned()
        assert launch.pid is not None and launch._command is not None
        os.close(launch._command)  # as the kernel does for a killed agentd
        launch._command = None
        pid = launch.pid
        deadline = time.monotonic() + 10
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            assert time.monotonic() < deadline, "the stub did not exit"
            await asyncio.sleep(0.01)
        launch.pid = None
        launch.abandon()
        return pid

    run(main())


def test_sigpipe_reaches_the_agent_as_its_default(
    tmp_path: Path, server: ForkServer | None
) -> None:
    """``agent | head`` in the session: the writer dies of SIGPIPE (status 141 in a
    shell), as in a terminal; it would get EPIPE if the daemon's ignored SIGPIPE
    (Python ignores it) had come along."""
    argv = ["sh", "-c", '(yes; echo "YES $?" >&2) | head -c 1 >/dev/null']

    async def main() -> bytes:
        child = await Launch.start(None, server=server).exec(
            argv, cwd=tmp_path, env=dict(os.environ)
        )
        return await output_of(child)

    assert b"YES 141" in run(main())
