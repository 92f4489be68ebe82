"""The phases of ``scripts/bench.py`` (see its docstring); each returns a JSON-able dict.

``agentctl`` (its latency) lives in ``bench_ctl.py``."""

from __future__ import annotations

import json
import os
import pty
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from bench_ctl import phase_agentctl
from bench_startup import phase_startup
from bench_util import (
    REPO,
    BenchError,
    Supervised,
    agent_argv,
    by_session,
    child_env,
    idle_cost,
    popen,
    read_records,
    sample,
    start_agentd,
    start_seed,
    start_shell,
    summary,
    wait_for,
    write_unit,
)

PHASES = ("sentinel", "respawn", "throughput", "idle", "render", "soak", "agentctl", "startup")
SERVE_UNITS = (1, 50)  # idle units under one agentd serve, for its RSS
RESPAWN_ROUNDS = 4
BURSTS = (0, 20_000, 200_000)


@dataclass(frozen=True)
class Config:
    quick: bool
    reps: dict[int, int]  # agentd repetitions per burst size
    seed_reps: dict[int, int]  # seed loop repetitions per burst size
    seed_cap: float  # s the agent waits for the seed loop's SIGTERM before giving up
    respawns: int
    flood_mb: int
    flood_rounds: int
    idle_s: float
    render_sizes: tuple[int, ...]
    render_reps: int
    soak: int
    ctl_runs: int  # rounds of every agentctl command

    @classmethod
    def make(cls, quick: bool) -> Config:
        if quick:
            return cls(
                True,
                {0: 10, 20_000: 4, 200_000: 4},
                {0: 5, 20_000: 1, 200_000: 1},
                4.0,
                40,
                50,
                3,
                10.0,
                (1_000, 100_000, 1_000_000),
                7,
                200,
                15,
            )
        return cls(
            False,
            {0: 40, 20_000: 15, 200_000: 15},
            {0: 20, 20_000: 2, 200_000: 1},
            30.0,
            200,
            200,
            3,
            30.0,
            (1_000, 100_000, 1_000_000),
            21,
            1000,
            30,
        )


# --- 1. sentinel reaction ------------------------------------------------------------
def sentinel_latencies(sup: Supervised, plan: list[int]) -> dict[str, Any]:
    recs = sup.records()
    sent = by_session(recs, "sentinel")
    out: dict[str, Any] = {}
    for burst in BURSTS:
        values, missed = [], 0
        for session, rec in sent.items():
            if plan[session - 1] != burst:
                continue
            end = next(
                (r for r in recs if r.session == session and r.event in ("term", "miss")), None
            )
            if end is not None:
                values.append(end.at - rec.at)
                missed += end.event == "miss"
        out[str(burst)] = summary(values, scale=1000.0, censored=missed)  # ms
    return out


def phase_sentinel(cfg: Config, root: Path, baseline: Path | None) -> dict[str, Any]:
    result: dict[str, Any] = {}
    runs = [("agentd", cfg.reps, 10.0)]
    if baseline is not None:
        runs.append(("seed", cfg.seed_reps, cfg.seed_cap))
    for kind, reps, cap in runs:
        plan = [b for b in BURSTS for _ in range(reps[b])]
        opts = {"plan": ",".join(map(str, plan)), "settle": 0.3, "timeout": cap}
        sup = (
            start_agentd(root, "sentinel", "sentinel", **opts)
            if kind == "agentd"
            else start_seed(root, baseline, "sentinel", "sentinel", **opts)
        )  # type: ignore[arg-type]
        budget = 60 + len(plan) * (cap + 2)
        try:
            code = sup.wait(budget)
        finally:
            sup.kill()
        if code != 0:
            raise BenchError(f"{kind} sentinel run ended with {code}: {sup.log}")
        result[kind] = sentinel_latencies(sup, plan)
        result[kind]["cap_ms"] = cap * 1000
    return result


# --- 2. respawn --------------------------------------------------------------------------
def respawn_gaps(sup: Supervised) -> list[float]:
    recs = sup.records()
    starts, exits = by_session(recs, "start"), by_session(recs, "exit")
    return [starts[s + 1].at - exits[s].at for s in sorted(exits) if s + 1 in starts]


def phase_respawn(cfg: Config, root: Path, baseline: Path | None) -> dict[str, Any]:
    """Each loop in turn, in ``RESPAWN_ROUNDS`` interleaved rounds (load from others drifts)."""
    kinds = ["shell", "agentd"] + (["seed"] if baseline is not None else [])
    per_round = max(2, cfg.respawns // RESPAWN_ROUNDS)
    gaps: dict[str, list[float]] = {k: [] for k in kinds}
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    for i in range(RESPAWN_ROUNDS):
        for kind in kinds:
            name = f"respawn{i}"
            sup = (
                start_shell(root, name, "respawn", n=per_round)
                if kind == "shell"
                else start_agentd(root, name, "respawn", n=per_round)
                if kind == "agentd"
                else start_seed(root, baseline, name, "respawn", n=per_round)
            )  # type: ignore[arg-type]
            try:
                code = sup.wait(60 + per_round * 2)
            finally:
                sup.kill()
            if code != 0:
                raise BenchError(f"{kind} respawn run ended with {code}: {sup.log}")
            gaps[kind] += respawn_gaps(sup)
            t = [r.at for r in sup.records() if r.event == "start"]
            if len(t) > 1:
                rates[kind].append((len(t) - 1) / (t[-1] - t[0]))
    result: dict[str, Any] = {}
    for kind in kinds:
        result[kind] = summary(gaps[kind], scale=1000.0)
        result[kind]["sessions_per_s"] = statistics.median(rates[kind]) if rates[kind] else None
    return result


# --- 3. throughput -----------------------------------------------------------------------
def _flood_rate(recs_path: Path, nbytes: int) -> float:
    recs = read_records(recs_path)
    begin = next(r.at for r in recs if r.event == "begin")
    end = next(r.at for r in recs if r.event == "end")
    return nbytes / (end - begin) / 1e6


def bare_reader(root: Path, nbytes: int) -> dict[str, Any]:
    """The floor: pty.fork + a blocking os.read loop in this process."""
    (root / "bare").mkdir(exist_ok=True)
    for name in ("go", "quit"):
        (root / "bare" / name).touch()
    rec = root / "flood.bare.rec"
    argv = agent_argv(
        "flood", rec=rec, count=root / "flood.bare.count", bytes=nbytes, dir=root / "bare"
    )
    env = child_env()
    before = resource.getrusage(resource.RUSAGE_SELF)
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.execve(argv[0], argv, env)
    got = 0
    try:
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the slave side closed
                break
            if not data:
                break
            got += len(data)
    finally:
        os.close(fd)
        os.waitpid(pid, 0)
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "mb_per_s": _flood_rate(rec, nbytes),
        "cpu_s_per_100mb": cpu * 100e6 / nbytes,
        "bytes_read": got,
    }


def agentd_reader(root: Path, nbytes: int) -> dict[str, Any]:
    flood = root / "agentd-flood-dir"
    flood.mkdir(exist_ok=True)
    sup = start_agentd(root, "flood", "flood", bytes=nbytes, dir=flood)
    try:
        proc = psutil.Process(sup.pid)
        wait_for(
            lambda: any(r.event == "ready" for r in sup.records()),
            timeout=30,
            what="the flood agent to start under agentd",
        )
        before = sample([proc])
        (flood / "go").touch()
        wait_for(
            lambda: any(r.event == "end" for r in sup.records()),
            timeout=600,
            what="the flood agent to finish writing",
            poll=0.01,
        )
        after = sample([proc])
        (flood / "quit").touch()
        code = sup.wait(60)
    finally:
        sup.kill()
    if code != 0:
        raise BenchError(f"agentd flood run ended with {code}: {sup.log}")
    return {
        "mb_per_s": _flood_rate(sup.rec, nbytes),
        "cpu_s_per_100mb": (after.cpu - before.cpu) * 100e6 / nbytes,
        "rss_mb": after.rss / 1e6,
    }


def phase_throughput(cfg: Config, root: Path, baseline: Path | None) -> dict[str, Any]:
    """Alternating rounds (the machine's load drifts); the median round of each."""
    nbytes = cfg.flood_mb * 1_000_000
    rounds: dict[str, list[dict[str, Any]]] = {"bare": [], "agentd": []}
    for i in range(cfg.flood_rounds):
        sub = root / f"flood-{i}"
        sub.mkdir()
        rounds["bare"].append(bare_reader(sub, nbytes))
        rounds["agentd"].append(agentd_reader(sub, nbytes))
    out: dict[str, Any] = {"bytes": nbytes, "rounds": cfg.flood_rounds}
    for kind, got in rounds.items():
        ordered = sorted(got, key=lambda r: r["mb_per_s"])
        out[kind] = {
            **ordered[len(ordered) // 2],
            "all_mb_per_s": [round(r["mb_per_s"], 1) for r in got],
        }
    return out


# --- 4. idle cost ------------------------------------------------------------------------
def measure_idle(
    pick: dict[str, Callable[[], list[psutil.Process]]],
    window: float,
) -> dict[str, dict[str, float]]:
    """Sample each set of processes, sleep ``window``, sample again (all in one window)."""
    procs = {k: f() for k, f in pick.items()}
    before = {k: sample(p) for k, p in procs.items()}
    time.sleep(window)
    return {k: idle_cost(before[k], sample(p)) for k, p in procs.items()}


def _seed_tree(sup: Supervised) -> list[psutil.Process]:
    """The seed loop's own processes (bash, tail, its while loop), not the agent."""
    agents = {int(r.extra) for r in sup.records() if r.event == "start"}
    root = psutil.Process(sup.pid)
    return [p for p in [root, *root.children(recursive=True)] if p.pid not in agents]


def phase_idle(cfg: Config, root: Path, baseline: Path | None) -> dict[str, Any]:
    sups = [start_agentd(root, "idle", "idle")]
    if baseline is not None:
        sups.append(start_seed(root, baseline, "idle", "idle"))
    try:
        for sup in sups:
            wait_for(lambda s=sup: s.records(), timeout=30, what=f"the idle agent under {sup.kind}")
        time.sleep(1.0)  # let start-up work finish
        pick: dict[str, Callable[[], list[psutil.Process]]] = {
            "agentd": lambda: [psutil.Process(sups[0].pid)]
        }
        if len(sups) > 1:
            pick["seed"] = lambda: _seed_tree(sups[1])
        result: dict[str, Any] = measure_idle(pick, cfg.idle_s)
        result["forkserver"] = fork_server_memory(sups[0].pid)
    finally:
        for sup in sups:
            sup.stop()
    for count in SERVE_UNITS:
        result[f"serve_{count}"] = idle_many(cfg, root, count)
    return result


def fork_server_memory(pid: int) -> dict[str, float] | None:
    """RSS and PSS (MB) of agentd's fork server (agentd.session.zygote), a process of its
    own beside agentd: most of its pages are the interpreter's, shared with agentd."""
    for child in psutil.Process(pid).children():
        try:
            if any(arg.endswith("zygote.py") for arg in child.cmdline()):
                full = child.memory_full_info()
                return {"rss_mb": full.rss / 1e6, "pss_mb": getattr(full, "pss", 0) / 1e6}
        except psutil.Error:
            continue
    return None


def idle_many(cfg: Config, root: Path, count: int) -> dict[str, Any]:
    """The daemon with ``count`` idle sessions: needs ``agentd serve``."""
    probe = subprocess.run(
        [sys.executable, "-m", "agentd.cli", "serve", "--help"],
        cwd=REPO,
        env=child_env(),
        capture_output=True,
        timeout=30,
    )
    if probe.returncode != 0:
        return {"skipped": "agentd serve does not exist yet"}
    home = root / f"agentd-serve{count}"
    rec = root / f"serve{count}.rec"
    for i in range(count):
        argv = agent_argv("idle", rec=rec, count=root / f"serve{count}-{i}.count")
        write_unit(home, f"idle{i}", argv)
    log = root / f"serve{count}.log"
    env = child_env(AGENTD_HOME=str(home), AGENTD_MARKER_PREFIX=f"bench{os.getpid()}-")
    sup = Supervised(
        "agentd", popen([sys.executable, "-m", "agentd.cli", "serve"], log, env), rec, log, home
    )
    try:
        wait_for(
            lambda: len(sup.records()) >= count,
            timeout=60,
            what=f"{count} idle sessions under agentd serve",
        )
        time.sleep(1.0)
        return measure_idle({"agentd": lambda: [psutil.Process(sup.pid)]}, cfg.idle_s)["agentd"]
    finally:
        sup.stop()


# --- 5. bootstrap render -----------------------------------------------------------------
def _decision_lines(n: int) -> bytes:
    line = (
        "[2026-11-30 14:32] [arch] decision: use one cache_manager for step {i} | why: because "
        "raw redis calls spread so invalidation broke | files: src/cache.py, src/order.py | "
        "snapshot: snapshot-014 | alternatives: keep raw redis calls\n"
    )
    block = "".join(line.format(i=i) for i in range(min(n, 1000))).encode()
    out = bytearray()
    while len(out) < len(block) * (n // 1000):
        out += block
    return bytes(out) if n >= 1000 else block


def phase_render(cfg: Config, root: Path, baseline: Path | None) -> dict[str, Any]:
    sys.path.insert(0, str(REPO))
    from agentd.memory.bootstrap.render import BootstrapContext, render
    from agentd.memory.layout import resolve

    work = root / "render"
    state = work / ".agent"
    state.mkdir(parents=True, exist_ok=True)
    (state / "identity.md").write_text("You are the cart-refactor agent.\n")
    (state / "state.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "mission": "Refactor the cart module",
                "next_action": "step 2",
                "completed_steps": [{"text": f"step {i}", "verified": True} for i in range(30)],
            }
        )
    )
    result: dict[str, Any] = {}
    for size in cfg.render_sizes:
        (state / "decisions.log").write_bytes(_decision_lines(size))
        ctx = BootstrapContext(
            unit="bench",
            session=2,
            last_reason="exit:42",
            state_dir=state,
            workdir=work,
            layout=resolve("agentd"),
            budget_tokens=3000,
            now=time.time(),
        )
        times = []
        for _ in range(cfg.render_reps):
            t0 = time.perf_counter()
            render(ctx)
            times.append(time.perf_counter() - t0)
        result[str(size)] = summary(times, scale=1000.0)
        result[str(size)]["file_mb"] = (state / "decisions.log").stat().st_size / 1e6
    (state / "decisions.log").unlink()
    return result


# --- 6. soak -------------------------------------------------------------------------------
def phase_soak(cfg: Config, root: Path, baseline: Path | None) -> dict[str, Any]:
    first, mid, last = 10, cfg.soak // 2, cfg.soak
    holds = root / "soak-holds"
    holds.mkdir(exist_ok=True)
    sup = start_agentd(root, "soak", "respawn", n=last, hold=f"{first},{mid},{last}", dir=holds)
    samples: dict[int, dict[str, float]] = {}
    try:
        proc = psutil.Process(sup.pid)
        for point in (first, mid, last):
            wait_for(
                lambda p=point: any(r.event == "hold" and r.session == p for r in sup.records()),
                timeout=60 + cfg.soak * 0.5,
                what=f"soak session {point}",
                poll=0.01,
            )
            s = sample([proc])
            samples[point] = {"rss_mb": s.rss / 1e6, "fds": s.fds, "at": s.at}
            (holds / f"go-{point}").touch()
        code = sup.wait(60)
    finally:
        sup.kill()
    if code != 0:
        raise BenchError(f"agentd soak run ended with {code}: {sup.log}")
    recs = sup.records()
    starts, exits = by_session(recs, "start"), by_session(recs, "exit")
    rate = (last - first) / (starts[last].at - exits[first].at)
    return {
        "sessions": last,
        "sessions_per_s": rate,
        "rss_mb": {str(k): v["rss_mb"] for k, v in samples.items()},
        "fds": {str(k): v["fds"] for k, v in samples.items()},
        "rss_growth_mb": samples[last]["rss_mb"] - samples[first]["rss_mb"],
        "fd_growth": samples[last]["fds"] - samples[first]["fds"],
        "respawn_ms": summary(respawn_gaps(sup), scale=1000.0),
    }


RUNNERS: dict[str, Callable[[Config, Path, Path | None], dict[str, Any]]] = {
    "sentinel": phase_sentinel,
    "respawn": phase_respawn,
    "throughput": phase_throughput,
    "idle": phase_idle,
    "render": phase_render,
    "soak": phase_soak,
    "agentctl": phase_agentctl,
    "startup": phase_startup,
}
