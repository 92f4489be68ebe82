"""Plumbing for ``scripts/bench.py``: the supervisors under test, records, statistics.

Each supervisor runs the fake agent ``bench_agent.py`` with the same argv:

- ``agentd``: the real ``python -m agentd.cli run UNIT`` with a temporary
  AGENTD_HOME, the claude-code sentinel pack and ``min_uptime: 0s``;
- ``seed``: ``shared/baselines/seed_loop.sh`` (output to a log file, a
  ``tail -F | grep`` watcher);
- ``shell``: a bare POSIX ``while`` loop that reruns the agent while it exits 42
  (the floor for respawn times).

Every child gets ``BENCH_OWNER=<our pid>`` in its environment, so that
``sweep()`` can end whatever a failed run left behind.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
AGENT = SCRIPTS / "bench_agent.py"
OWNER_VAR = "BENCH_OWNER"
SHELL_LOOP = 'while :; do "$@"; c=$?; [ "$c" -eq 42 ] || exit "$c"; done'


class BenchError(RuntimeError):
    pass


def agent_argv(mode: str, **opts: object) -> list[str]:
    """The fake agent's argv; ``-I -S`` keep its start-up short and the same everywhere."""
    return [sys.executable, "-I", "-S", str(AGENT), mode, *(f"{k}={v}" for k, v in opts.items())]


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    env[OWNER_VAR] = str(os.getpid())
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


# --- records written by the fake agent -------------------------------------------
@dataclass(frozen=True)
class Rec:
    event: str
    session: int
    at: float
    extra: str


def read_records(path: Path) -> list[Rec]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        parts = line.split(" ", 3)
        if len(parts) >= 3:
            extra = parts[3] if len(parts) > 3 else ""
            out.append(Rec(parts[0], int(parts[1]), float(parts[2]), extra))
    return out


def by_session(recs: Iterable[Rec], event: str) -> dict[int, Rec]:
    return {r.session: r for r in recs if r.event == event}


def wait_for(probe: Callable[[], Any], *, timeout: float, what: str, poll: float = 0.005) -> Any:
    """``probe()`` once truthy; BenchError naming ``what`` and the last value on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {timeout:.0f}s waiting for {what}; last saw {got!r}")
        time.sleep(poll)


# --- statistics -------------------------------------------------------------------------
def quantile(values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile (p99 of fewer than 100 values is their maximum)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summary(values: Sequence[float], *, scale: float = 1.0, censored: int = 0) -> dict[str, Any]:
    """median/p99/min/max of ``values`` times ``scale``; ``censored`` of them are lower bounds."""
    vals = [v * scale for v in values]
    out: dict[str, Any] = {"n": len(vals)}
    if vals:
        out.update(
            median=statistics.median(vals), p99=quantile(vals, 0.99), min=min(vals), max=max(vals)
        )
    if censored:
        out["censored"] = censored  # timed out: the true value is larger
    return out


# --- supervisors -----------------------------------------------------------------------
@dataclass
class Supervised:
    """One running supervisor (agentd, seed loop or shell loop) and its fake agent's records."""

    kind: str
    proc: subprocess.Popen[bytes]
    rec: Path
    log: Path
    home: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def records(self) -> list[Rec]:
        return read_records(self.rec)

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise BenchError(
                f"{self.kind} did not finish within {timeout:.0f}s; "
                f"log {self.log}: {tail_text(self.log)}"
            ) from None

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM (agentd stops its session), then the whole process group."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout)
        self.kill()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)


def tail_text(path: Path, n: int = 600) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return "(no log)"


def popen(argv: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(REPO),
            start_new_session=True,
        )


def write_unit(home: Path, name: str, argv: list[str], **extra: Any) -> Path:
    """A unit running ``argv`` (the bootstrap file path appended) with the claude-code sentinels."""
    work = home / "work"
    work.mkdir(parents=True, exist_ok=True)
    unit: dict[str, Any] = {
        "description": f"bench {name}",
        "preset": "claude-code",
        "command": [*argv, "{bootstrap_file}"],
        "workdir": str(work),
        # These agents end at once by design: no delay and no burst, so the brake on
        # quick ends (a backoff after three in a row) lets them through at once.
        "restart": {"min_uptime": "0s", "delay": "0s", "max_delay": "200ms", "burst": 1_000_000},
        "state": {"dir": f".agent-{name}"},  # units may not share a state dir
        "stop": {"signal": "TERM", "grace": "5s"},
    }
    unit.update(extra)
    path = home / "units" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(unit, sort_keys=False), encoding="utf-8")
    path.chmod(0o600)
    return path


def start_agentd(root: Path, name: str, mode: str, **opts: object) -> Supervised:
    home = root / f"agentd-{name}"
    rec = root / f"{name}.agentd.rec"
    argv = agent_argv(mode, rec=rec, count=root / f"{name}.agentd.count", **opts)
    unit = write_unit(home, name, argv)
    log = root / f"{name}.agentd.log"
    env = child_env(AGENTD_HOME=str(home), AGENTD_MARKER_PREFIX=f"bench{os.getpid()}-")
    proc = popen([sys.executable, "-m", "agentd.cli", "run", "-q", str(unit)], log, env)
    return Supervised("agentd", proc, rec, log, home)


def start_seed(root: Path, baseline: Path, name: str, mode: str, **opts: object) -> Supervised:
    rec = root / f"{name}.seed.rec"
    argv = agent_argv(mode, rec=rec, count=root / f"{name}.seed.count", **opts)
    log = root / f"{name}.seed.log"
    out = root / f"{name}.seed.out"
    proc = popen(
        ["bash", str(baseline), str(out), "Compacting conversation", "--", *argv], log, child_env()
    )
    return Supervised("seed", proc, rec, log)


def start_shell(root: Path, name: str, mode: str, **opts: object) -> Supervised:
    rec = root / f"{name}.shell.rec"
    argv = agent_argv(mode, rec=rec, count=root / f"{name}.shell.count", **opts)
    log = root / f"{name}.shell.log"
    proc = popen(["sh", "-c", SHELL_LOOP, "sh", *argv], log, child_env())
    return Supervised("shell", proc, rec, log)


def sweep() -> list[int]:
    """SIGKILL every process that carries our BENCH_OWNER (a run that failed midway)."""
    me, killed = str(os.getpid()), []
    for proc in psutil.process_iter(["pid"]):
        if proc.pid == os.getpid():
            continue
        with contextlib.suppress(psutil.Error):
            if proc.environ().get(OWNER_VAR) == me:
                proc.kill()
                killed.append(proc.pid)
    return killed


# --- measuring a process from outside ------------------------------------------------------
def ctx_switches(pid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches summed over all threads of ``pid``."""
    vol = invol = 0
    task_dir = Path(f"/proc/{pid}/task")
    if not task_dir.exists():  # not Linux: psutil's per-process figure
        c = psutil.Process(pid).num_ctx_switches()
        return c.voluntary, c.involuntary
    for task in task_dir.iterdir():
        with contextlib.suppress(OSError):
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    vol += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    invol += int(line.split()[1])
    return vol, invol


def cpu_seconds(procs: Iterable[psutil.Process]) -> float:
    """CPU time of ``procs``: from /proc/PID/task/*/schedstat (ns) where there is one,
    since cpu_times() counts in clock ticks (10 ms: 0.1% of a core over 10 s)."""
    total = 0.0
    for p in procs:
        with contextlib.suppress(psutil.Error, OSError):
            ns = _schedstat_ns(p.pid)
            if ns is not None:
                total += ns / 1e9
                continue
            t = p.cpu_times()
            total += t.user + t.system
    return total


def _schedstat_ns(pid: int) -> int | None:
    task_dir = Path(f"/proc/{pid}/task")
    if not (task_dir / str(pid) / "schedstat").exists():
        return None
    total = 0
    for task in task_dir.iterdir():
        with contextlib.suppress(OSError):
            total += int((task / "schedstat").read_text().split()[0])
    return total


@dataclass(frozen=True)
class Sample:
    at: float
    cpu: float
    wakeups: int
    rss: int
    fds: int


def sample(procs: Sequence[psutil.Process]) -> Sample:
    """CPU seconds, voluntary switches, RSS and open fds summed over ``procs``."""
    wakeups = rss = fds = 0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            wakeups += ctx_switches(p.pid)[0]
            rss += p.memory_info().rss
            fds += p.num_fds()
    return Sample(time.monotonic(), cpu_seconds(procs), wakeups, rss, fds)


def idle_cost(before: Sample, after: Sample) -> dict[str, float]:
    window = after.at - before.at
    return {
        "window_s": window,
        "cpu_pct": 100.0 * (after.cpu - before.cpu) / window,
        "wakeups_per_s": (after.wakeups - before.wakeups) / window,
        "rss_mb": after.rss / 1e6,
    }


def machine() -> dict[str, Any]:
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": sys.version.split()[0],
        "kernel": os.uname().release,
        "processes": len(psutil.pids()),
        "loadavg": [round(x, 2) for x in os.getloadavg()],  # others' work skews the figures
    }
