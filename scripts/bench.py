#!/usr/bin/env python3
"""Benchmarks: agentd against the seeds' shell loop, side by side (issue 4), and agentctl's latency.

usage: python scripts/bench.py [--quick] [--json FILE] [--baseline PATH] [--only PHASE,...]
                              [--crowd N] [--markdown] [--keep]

Exit status 1 when a target is missed (the table says which).

Every figure comes from real processes: the real ``agentd run`` (``python -m
agentd.cli run``, temporary AGENTD_HOME), ``shared/baselines/seed_loop.sh`` and
a bare shell ``while`` loop, each running the fake agent ``bench_agent.py``,
which records CLOCK_MONOTONIC times (one clock for all processes on Linux).

Phases:
  sentinel    sentinel line written -> SIGTERM received: idle, and right after
              bursts of 20,000 and 200,000 lines of tool output
  respawn     exit 42 -> the next session's first instruction (agentd, seed
              loop, shell loop = the floor)
  throughput  an agent writing 200 MB (quick: 50 MB) to its pty, drained by
              agentd with the claude-code sentinels on, vs a bare pty reader
  idle        CPU, wake-ups/s (voluntary context switches) and RSS over 30 s
              (quick: 10 s) with one idle session; 20 sessions once
              ``agentd serve`` exists
  render      ``bootstrap.render`` against decisions.log of 1k/100k/1M lines
  soak        1,000 (quick: 200) sessions that exit 42 at once: sessions/s,
              agentd's RSS and fds early and at the end
  agentctl    exec to exit of ``agentctl state next|done|decide`` and ``agentctl
              status`` (against ``agentd serve``), through the console script
              and ``python -m``, beside ``python -c pass``: median and p90 of 30
              (quick: 15) interleaved rounds (``bench_ctl.py``)
  startup     exec to exit of ``agentd --version`` and ``agentd check`` (one
              small unit), the same way (``bench_startup.py``)

After the table and the targets it prints the figures of issue 25, each with
its anchor: what the do-it-yourself loops measured in the same run, and the
figures of pm2 and supervisord measured in earlier rounds (``ANCHORS`` in
``bench_report.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_phases import PHASES, RUNNERS, Config
from bench_report import render_table, targets
from bench_util import REPO, BenchError, child_env, machine, sweep


def crowd(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` sleeping processes of ours, as on a desktop (agentd's scans read them all)."""
    return [
        subprocess.Popen(
            ["sleep", "86400"],
            env=child_env(),
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        for _ in range(n)
    ]


# --- main ----------------------------------------------------------------------------------
def find_baseline(arg: str | None) -> Path | None:
    """``--baseline``, else ``shared/baselines/seed_loop.sh`` beside the checkout or
    beside one of its parents (a worktree lives deeper than the main checkout)."""
    if arg:
        path = Path(arg)
        return path if path.is_file() else None
    for parent in REPO.parents:
        path = parent / "shared" / "baselines" / "seed_loop.sh"
        if path.is_file():
            return path
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="about one minute, smaller samples")
    ap.add_argument("--json", type=Path, help="also write the results as JSON to FILE")
    ap.add_argument("--baseline", help="seed_loop.sh (default ../shared/baselines/seed_loop.sh)")
    ap.add_argument("--only", help=f"comma-separated phases of: {', '.join(PHASES)}")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument(
        "--crowd",
        type=int,
        default=0,
        metavar="N",
        help="start N idle processes first, as on a busy desktop (agentd scans /proc)",
    )
    args = ap.parse_args(argv)
    only = args.only.split(",") if args.only else list(PHASES)
    if unknown := set(only) - set(PHASES):
        ap.error(f"unknown phase(s): {', '.join(sorted(unknown))}")
    cfg = Config.make(args.quick)
    baseline = find_baseline(args.baseline)
    if baseline is None:
        print(
            f"baseline {args.baseline or '../shared/baselines/seed_loop.sh'} not found: "
            "baseline figures are skipped",
            file=sys.stderr,
        )
    results: dict[str, Any] = {}
    root = Path(tempfile.mkdtemp(prefix="agentd-bench-"))
    started = time.monotonic()
    sleepers = crowd(args.crowd)
    host = machine()  # with the crowd: the process count agentd's scans see
    try:
        for phase in only:
            t0 = time.monotonic()
            print(f"bench: {phase} ...", file=sys.stderr, flush=True)
            try:
                results[phase] = RUNNERS[phase](cfg, root, baseline)
            except BenchError as exc:
                results[phase] = {"error": str(exc)}
                print(f"bench: {phase} failed: {exc}", file=sys.stderr)
            results[phase]["took_s"] = round(time.monotonic() - t0, 1)
    finally:
        for proc in sleepers:
            proc.kill()
            proc.wait()
        if left := sweep():
            print(f"bench: killed left-over processes {left}", file=sys.stderr)
        if args.keep:
            print(f"bench: kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    report = {
        "version": 1,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": cfg.quick,
        "machine": host,
        "baseline": str(baseline) if baseline else None,
        "took_s": round(time.monotonic() - started, 1),
        "results": results,
    }
    report["targets"] = targets(results)
    print(render_table(report, markdown=args.markdown))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if all(t["ok"] is not False for t in report["targets"]) else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
    sys.exit(130)
