"""`agentd.process.oneshot.run`: one command to its end beside the loop - its exit, the
end of its output (bounded), its whole tree ended at its timeout, on abort, and what
it left behind when it ended by itself; its pid owned, so a subreaper never steals it."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import psutil
import pytest

from agentd.process import oneshot
from agentd.process.reaper import Reaper
from agentd.process.tree import session_env_marker

pytestmark = pytest.mark.timeout(60)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def pids_in(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def run(argv: list[str], tmp: Path, **kw: object) -> oneshot.Finished:
    marker = session_env_marker("t.check", 1)
    return asyncio.run(
        oneshot.run(argv, cwd=tmp, env=dict(os.environ), marker=marker, **kw)  # type: ignore[arg-type]
    )


def test_exit_code_and_both_streams_in_order(tmp_path: Path) -> None:
    done = run(["sh", "-c", "echo out; echo err >&2; pwd; exit 3"], tmp_path, timeout=30)
    assert (done.code, done.signal, done.timed_out, done.ok) == (3, None, False, False)
    assert done.output == f"out\nerr\n{tmp_path}\n".encode()
    assert done.total == len(done.output)
    assert run(["true"], tmp_path, timeout=30).ok


def test_output_is_bounded_to_its_end(tmp_path: Path) -> None:
    script = "import sys\nfor i in range(200000): sys.stdout.write(f'line {i}\\n')"
    done = run([sys.executable, "-c", script], tmp_path, timeout=30, keep=4096)
    assert done.code == 0
    assert len(done.output) == 4096
    assert done.output.endswith(b"line 199999\n")
    assert done.total == sum(len(f"line {i}\n") for i in range(200000))


def test_at_its_timeout_its_whole_tree_is_ended(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = (
        f"sleep 300 & echo $! >> {pids}; "
        f"(setsid sh -c 'echo $$ >> {pids}.setsid; trap \"\" TERM; exec sleep 301' &); "
        f"echo $$ >> {pids}; trap '' TERM; sleep 302"
    )
    done = run(["sh", "-c", script], tmp_path, timeout=1.0, grace=0.5)
    started = pids_in(pids)
    [escaped] = pids_in(Path(f"{pids}.setsid"))
    assert len(started) == 2, started
    assert done.timed_out and not done.ok
    assert all(gone(pid) for pid in [*started, escaped])
    # out of the group and deaf to TERM: found by its marker, ended by SIGKILL
    assert escaped in done.ended


def test_what_it_leaves_running_is_ended_when_it_exits(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = (
        f"(setsid sh -c 'echo $$ >> {pids}.setsid; exec sleep 303' &); "
        f"sleep 304 & echo $! >> {pids}; "
        f"while [ ! -s {pids}.setsid ]; do sleep 0.01; done; exit 0"
    )
    done = run(["sh", "-c", script], tmp_path, timeout=30)
    [grouped] = pids_in(pids)
    [escaped] = pids_in(Path(f"{pids}.setsid"))
    assert done.code == 0
    assert gone(grouped) and gone(escaped)
    assert escaped in done.ended  # out of its session: found by its marker, and ended


def test_abort_ends_it_at_once(tmp_path: Path) -> None:
    async def go() -> oneshot.Finished:
        abort = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.call_later(0.2, abort.set)
        return await oneshot.run(
            ["sleep", "300"], cwd=tmp_path, env=dict(os.environ), timeout=600, abort=abort
        )

    done = asyncio.run(go())
    assert done.aborted and not done.timed_out and not done.ok
    assert done.signal == signal.SIGTERM


def test_a_command_that_cannot_start_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        run(["no-such-program-xyz"], tmp_path, timeout=5)
    with pytest.raises(OSError):
        run(["true"], tmp_path / "missing", timeout=5)


def test_an_owned_pid_keeps_its_exit_status_under_a_subreaper(tmp_path: Path) -> None:
    """With a reaper on SIGCHLD that reaps every child it does not own, the exit
    status reaches the runner every time: the pid is owned from the fork on."""
    owned: set[int] = set()
    reaped: list[tuple[int, int]] = []

    async def go() -> list[int | None]:
        loop = asyncio.get_running_loop()
        reaper = Reaper(owned=lambda pid: pid in owned)
        loop.add_signal_handler(signal.SIGCHLD, lambda: reaped.extend(reaper.reap()))
        try:
            codes = []
            for _ in range(20):
                done = await oneshot.run(
                    ["sh", "-c", "exit 7"],
                    cwd=tmp_path,
                    env=dict(os.environ),
                    timeout=30,
                    owned=owned,
                )
                codes.append(done.code)
            return codes
        finally:
            loop.remove_signal_handler(signal.SIGCHLD)

    assert asyncio.run(go()) == [7] * 20
    assert reaped == []  # the reaper left every one of them to its owner
    assert owned == set()  # each pid is given up once reaped
