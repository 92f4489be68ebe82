"""The fixtures every directory's tests share (helpers are in ``tests/support.py``);
every test fails if it leaves a process behind."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.support import Served

# A suite started with SIGINT ignored (in the background of a script, under nohup)
# would hand that on to every process a test starts, and a Ctrl-C a test sends to
# one (agentctl logs -f, agentd run) would do nothing: the processes the tests start
# get the default, as from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _descendants_and_marked() -> dict[int, str]:
    """Processes this test run is responsible for: our descendants and any
    process carrying an AGENTD_SESSION_ID marker that names this test process."""
    me = psutil.Process()
    found: dict[int, str] = {}
    for p in me.children(recursive=True):
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                found[p.pid] = " ".join(p.cmdline())[:120]
        except psutil.Error:
            pass
    tag = f"t{os.getpid()}-"
    for p in psutil.process_iter(["pid", "environ", "cmdline"]):
        env = p.info.get("environ") or {}
        marker = env.get("AGENTD_SESSION_ID", "")
        if marker.startswith(tag) or env.get("AGENTD_TEST_OWNER") == str(os.getpid()):
            found[p.info["pid"]] = " ".join(p.info.get("cmdline") or [])[:120]
    return found


@pytest.fixture(autouse=True)
def no_terminal_size_in_the_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """xdist's workers have LINES=24 and COLUMNS=80 in their environment: a terminal
    program a test starts (agentctl top in tmux) would take that size for its
    terminal's. Every test runs as it does without xdist."""
    monkeypatch.delenv("LINES", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    """Fail a test that leaves a process (or a zombie child) behind; kill what it left."""
    os.environ["AGENTD_TEST_OWNER"] = str(os.getpid())
    os.environ["AGENTD_MARKER_PREFIX"] = f"t{os.getpid()}-"
    yield
    deadline = time.monotonic() + 3.0
    left = _descendants_and_marked()
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _descendants_and_marked()
    zombies = [p.pid for p in psutil.Process().children() if _is_zombie(p)]
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
    # Reap what is ours of it, the killed too: the next test must not inherit them
    # (and fail for zombies it did not make).
    ours = {p.pid for p in psutil.Process().children()} & ({*left, *zombies})
    deadline = time.monotonic() + 3.0
    while ours and time.monotonic() < deadline:
        for pid in list(ours):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    ours.discard(pid)
            except ChildProcessError:
                ours.discard(pid)
        time.sleep(0.01)
    _remove_cgroups(f"agentd-t{os.getpid()}-")
    if left:
        pytest.fail(f"test left processes behind: {left}")
    if zombies:
        pytest.fail(f"test left zombie children: {zombies}")


def _remove_cgroups(prefix: str) -> None:
    """Remove the empty session cgroups of this run (a ``kill -9``ed daemon leaves them)."""
    from agentd.process import cgroup

    base = cgroup.delegated_base()
    if base is not None:
        for path in base.glob(f"{prefix}*"):
            cgroup.remove(path)


def _is_zombie(p: psutil.Process) -> bool:
    try:
        return p.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An AGENTD_HOME with units/ and a workdir, kept short for AF_UNIX paths."""
    h = tmp_path / "h"
    (h / "units").mkdir(parents=True)
    monkeypatch.setenv("AGENTD_HOME", str(h))
    return h


@pytest.fixture
def dhome(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short AGENTD_HOME for a served daemon (the socket path must fit in sun_path)."""
    root = Path(tempfile.mkdtemp(prefix="ad", dir="/tmp"))
    (root / "units").mkdir()
    (root / "work").mkdir()
    monkeypatch.setenv("AGENTD_HOME", str(root))
    monkeypatch.delenv("AGENTD_SOCKET", raising=False)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def serve(dhome: Path) -> Iterator[list[Served]]:
    """Start daemons with ``serve.append(Served(...))``; all are stopped at the end."""
    started: list[Served] = []
    yield started
    for d in started:
        if d.proc.poll() is None:
            d.stop()
