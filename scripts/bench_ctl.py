"""The ``agentctl`` phase of ``scripts/bench.py``: how long a verb takes, start to exit.

Agents run ``agentctl state next|done|decide`` after every step, so the time
from exec to exit is what they wait. Each round runs every command once, in
the same order (rounds interleave, so all commands share the machine's
noise): ``python -c pass`` (the floor: this interpreter's start-up, its site
and .pth files included), then each verb through the installed console script
(``<venv>/bin/agentctl``) and as ``python -m agentd.cli.agentctl``. The state
verbs write to a state dir made by ``agentctl state init``; ``status`` asks a
running ``agentd serve`` (temporary AGENTD_HOME, one idle unit). A first round
warms the page cache and writes the .pyc files (``PYTHONDONTWRITEBYTECODE``
is dropped for these runs: an installed package has them) and is not counted.

Per command: wall-clock median and p90 (ms), and the median CPU time (user +
system, from the reaped child's rusage) - on a shared machine the CPU time
says what the command costs, the wall time what an agent waits.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench_util import (
    BenchError,
    Supervised,
    agent_argv,
    child_env,
    popen,
    quantile,
    wait_for,
    write_unit,
)

if TYPE_CHECKING:
    from bench_phases import Config

FLOOR = "python -c pass"
VERBS: dict[str, list[str]] = {
    "state next": ["next", "measure agentctl"],
    "state done": ["done", "measured agentctl"],
    "state decide": ["decide", "measure every verb", "--why", "because agents run them often"],
    "status": [],
}


def console_script(name: str = "agentctl") -> Path | None:
    """The console script ``name`` pip installed beside this interpreter, if any."""
    path = Path(sys.executable).parent / name
    return path if path.is_file() else None


def commands(state: Path) -> dict[str, list[str]]:
    """Label -> argv, the floor first."""
    script = console_script()
    entries = {"module": [sys.executable, "-m", "agentd.cli.agentctl"]}
    if script is not None:
        entries = {"script": [str(script)], **entries}
    out = {FLOOR: [sys.executable, "-c", "pass"]}
    for entry, prefix in entries.items():
        for verb, args in VERBS.items():
            out[f"{verb} ({entry})"] = (
                [*prefix, "status"]
                if verb == "status"
                else [*prefix, "state", "--dir", str(state), *args]
            )
    return out


def time_run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall s, CPU s) of one run of ``argv``; BenchError if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=60,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise BenchError(
            f"{' '.join(argv)} exited {done.returncode}: "
            f"{done.stderr.decode(errors='replace')[-400:]}"
        )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def figures(walls: list[float], cpus: list[float]) -> dict[str, Any]:
    ms = [w * 1000 for w in walls]
    return {
        "n": len(ms),
        "median": statistics.median(ms),
        "p90": quantile(ms, 0.9),
        "min": min(ms),
        "cpu_median": statistics.median(c * 1000 for c in cpus),
    }


def phase_agentctl(cfg: Config, root: Path, baseline: Path | None) -> dict[str, Any]:
    work = root / "ctl"
    state = work / ".agent"
    home = root / "ctl-home"  # the socket path stays far below sun_path's 108 bytes
    rec = root / "ctl.rec"
    write_unit(home, "idle", agent_argv("idle", rec=rec, count=root / "ctl.count"))
    env = child_env(AGENTD_HOME=str(home))
    # A pip install compiles the package's .pyc files; an editable checkout gets
    # them from the first run, unless the environment forbids writing them (some
    # CI images set this): without them every run compiles every module again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    work.mkdir()
    time_run(
        [sys.executable, "-m", "agentd.cli.agentctl", "state", "--dir", str(state), "init"],
        env,
        work,
    )
    log = root / "ctl-serve.log"
    serve = Supervised(
        "agentd", popen([sys.executable, "-m", "agentd.cli", "serve"], log, env), rec, log, home
    )
    try:
        wait_for(serve.records, timeout=60, what="the idle unit under agentd serve")
        times = timed(commands(state), env, work, cfg.ctl_runs)
    finally:
        serve.stop()
    return summary(times, cfg.ctl_runs, console_script())


def timed(
    argvs: dict[str, list[str]], env: dict[str, str], cwd: Path, runs: int
) -> dict[str, tuple[list[float], list[float]]]:
    """Label -> (walls, cpus) of ``runs`` rounds, each running every command once in
    turn, after a round that warms the caches."""
    times: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in argvs}
    for round_ in range(runs + 1):
        for label, argv in argvs.items():
            wall, cpu = time_run(argv, env, cwd)
            if round_:  # round 0 warms the caches
                times[label][0].append(wall)
                times[label][1].append(cpu)
    return times


def summary(
    times: dict[str, tuple[list[float], list[float]]], runs: int, script: Path | None
) -> dict[str, Any]:
    """The floor, and each ``VERB (ENTRY)`` label's figures under its entry and verb."""
    out: dict[str, Any] = {
        "runs": runs,
        "floor": figures(*times.pop(FLOOR)),
        "console_script": str(script) if script else None,
    }
    for label, (walls, cpus) in times.items():
        verb, entry = label[:-1].split(" (")
        out.setdefault(entry, {})[verb] = figures(walls, cpus)
    return out
