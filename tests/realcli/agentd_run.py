"""agentd and agentctl as the real-CLI tests run them: `agentd run UNIT` in the
background (and the sessions it started), `agentctl` from the test or on the CLI's PATH."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support import agentd_popen, poll_for, records


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate(timeout=10)


def session_starts(home: Path, unit: str) -> list[dict[str, object]]:
    return [r for r in records(home / "logs" / unit / "history.jsonl") if r.get("kind") == "start"]


@contextmanager
def running(home: Path, unit: str, *, sessions: int = 2, timeout: float = 90) -> Iterator[None]:
    """`agentd run UNIT` until ``sessions`` sessions started (then the body runs),
    stopped with SIGINT at the end whatever happens."""
    proc = agentd_popen(home, "run", unit)
    try:
        poll_for(
            lambda: len(session_starts(home, unit)) >= sessions,
            timeout=timeout,
            what=f"session {sessions} of {unit}",
        )
        yield
    finally:
        _stop(proc)


def agentctl(*args: str, cwd: Path) -> None:
    """`agentctl ARGS` run by the test (the state dir, hooks); it must succeed."""
    done = subprocess.run(
        [sys.executable, "-m", "agentd.cli.agentctl", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr


def with_agentctl_on_path(env: dict[str, str]) -> dict[str, str]:
    """The CLI's shell tool finds `agentctl` as a user's shell would: on PATH."""
    return {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
