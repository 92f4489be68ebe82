"""The fixtures every directory's tests share (helpers are in ``tests/support.py``);
every test fails if it leaves a process behind."""

from __future__ import annotations

import compileall
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from hypothesis import settings

from tests.support import Served

# A suite started with SIGINT ignored (in the background of a script, under nohup)
# would hand that on to every process a test starts, and a Ctrl-C a test sends to
# one (agentctl logs -f, agentd run) would do nothing: the processes the tests start
# get the default, as from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Hypothesis: no deadline (a busy machine makes any example slow) and the examples a
# test does not name itself: 100 in the suite, 1,000 with HYPOTHESIS_PROFILE=thorough.
settings.register_profile("suite", deadline=None)
settings.register_profile("thorough", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


def pytest_configure(config: pytest.Config) -> None:
    """Every Python the tests start (agentd, agentctl, the fake agent's hooks: over a
    thousand) would compile agentd's modules again under PYTHONDONTWRITEBYTECODE (the
    daemon's: 0.8 CPU-seconds to start instead of 0.45): they are compiled once here
    (``__pycache__`` is gitignored) and the processes the tests start read them."""
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is None:
        return
    sys.dont_write_bytecode = False
    if not hasattr(config, "workerinput"):  # xdist's controller, or a run without xdist
        import agentd

        compileall.compile_dir(Path(agentd.__file__).parent, quiet=1)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers a core. Most of a test's time is spent waiting for the
    processes it started (a daemon, an agent, a real CLI) to answer; with one worker a
    core the cores idle through those waits (on 2 idle cores: 6 min 23 s for 9.4
    CPU-minutes, against 4 min 42 s with two a core)."""
    return 2 * (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first, each group in its own order: xdist's workers then end the
    run on quick tests side by side, not one worker alone on the last file of long ones
    (the real CLIs' sort late by name)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def _descendants_and_marked() -> dict[int, str]:
    """Processes this test run is responsible for: our descendants and any
    process carrying an AGENTD_SESSION_ID marker that names this test process."""
    if not os.path.isdir("/proc/self"):
        return _descendants_and_marked_psutil()
    me = os.getpid()
    tag = f"\0AGENTD_SESSION_ID=t{me}-".encode()
    owner = f"\0AGENTD_TEST_OWNER={me}\0".encode()
    parent: dict[int, int] = {}
    live: set[int] = set()
    marked: set[int] = set()
    # One pass over /proc (psutil's children() and process_iter() each walk it, and
    # build a Process per pid: a tenth of a second per test on a busy machine).
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            with open(f"/proc/{name}/environ", "rb") as f:
                env = b"\0" + f.read()
        except OSError:  # gone, or not ours to read
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        parent[pid] = int(fields[1])
        if fields[0] != b"Z":
            live.add(pid)
        if tag in env or owner in env:
            marked.add(pid)
    below: set[int] = set()
    frontier = {me}
    while frontier:
        frontier = {pid for pid, ppid in parent.items() if ppid in frontier} - below
        below |= frontier
    return {pid: _cmdline(pid) for pid in sorted((below & live) | marked)}


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return ""


def _descendants_and_marked_psutil() -> dict[int, str]:
    """As ``_descendants_and_marked``, where there is no /proc (macOS)."""
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
    children = _children()
    zombies = [pid for pid, zombie in children.items() if zombie]
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
    # Reap what is ours of it, the killed too: the next test must not inherit them
    # (and fail for zombies it did not make).
    ours = set(children) & {*left, *zombies}
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


def _children() -> dict[int, bool]:
    """This process's children, each with whether it is a zombie."""
    if not os.path.isdir("/proc/self"):
        return {p.pid: _is_zombie(p) for p in psutil.Process().children()}
    me = os.getpid()
    found: dict[int, bool] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        if int(fields[1]) == me:
            found[int(name)] = fields[0] == b"Z"
    return found


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
