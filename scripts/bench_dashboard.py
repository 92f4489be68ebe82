#!/usr/bin/env python3
"""What the web dashboard costs the daemon (``agentd serve --http``), in CPU and wake-ups.

usage: python scripts/bench_dashboard.py [--seconds S] [--json FILE]

Three windows of ``S`` seconds (default 30) on the real ``agentd serve --http
127.0.0.1:0``, measured from outside (``bench_util.sample``):

  idle, --http, no browser   one idle session: the dashboard must add nothing
  working, no browser        one session printing a line every 100 ms
  working, one dashboard     the same with headless Chromium on that unit's page
                             (live events, the screen redrawn every 3 s)

The third minus the second is what one connected dashboard costs (target:
under 1% of a core). Needs /usr/bin/chromium (``apt-get install chromium``)
and playwright (the ``[test]`` extra).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_util import child_env, idle_cost, machine, popen, sample, sweep, wait_for, write_unit

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
WORKING = [
    sys.executable,
    "-I",
    "-S",
    "-c",
    "import time, itertools\n"
    "for i in itertools.count():\n"
    "    print('\\x1b[32mstep %d\\x1b[0m: editing src/module_%d.py' % (i, i % 7),\n"
    "          flush=True)\n"
    "    time.sleep(0.1)\n",
]
IDLE = [sys.executable, "-I", "-S", "-c", "import time; time.sleep(86400)"]
SETTLE = 3.0


@contextlib.contextmanager
def daemon(root: Path, command: list[str]) -> Iterator[tuple[psutil.Process, str]]:
    """``agentd serve --http 127.0.0.1:0`` with one unit running ``command``; the
    daemon's process and the dashboard's tokened link."""
    home = root / f"home-{time.monotonic_ns()}"
    write_unit(home, "work", command)
    env = child_env(AGENTD_HOME=str(home))
    proc = popen(
        [sys.executable, "-m", "agentd.cli", "serve", "-q", "--http", "127.0.0.1:0"],
        root / "serve.log",
        env,
    )
    try:

        def link() -> str | None:
            done = subprocess.run(
                [sys.executable, "-m", "agentd.cli.agentctl", "dashboard"],
                env=env,
                capture_output=True,
                text=True,
                timeout=30,
            )
            return done.stdout.strip() if done.returncode == 0 else None

        def running() -> bool:
            done = subprocess.run(
                [sys.executable, "-m", "agentd.cli.agentctl", "status", "--json", "work"],
                env=env,
                capture_output=True,
                text=True,
                timeout=30,
            )
            return done.returncode == 0 and json.loads(done.stdout)[0]["state"] == "running"

        url = wait_for(link, timeout=30, what="the dashboard to answer")
        wait_for(running, timeout=30, what="the unit to run")
        yield psutil.Process(proc.pid), url
    finally:
        proc.terminate()
        proc.wait(30)


def window(proc: psutil.Process, seconds: float) -> dict[str, float]:
    time.sleep(SETTLE)
    before = sample([proc])
    time.sleep(seconds)
    return idle_cost(before, sample([proc]))


def measure(seconds: float) -> dict[str, dict[str, float]]:
    from playwright.sync_api import sync_playwright

    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="abd") as tmp:
        root = Path(tmp)
        with daemon(root, IDLE) as (proc, _):
            out["idle, --http, no browser"] = window(proc, seconds)
        with daemon(root, WORKING) as (proc, link):
            out["working, no browser"] = window(proc, seconds)
            with sync_playwright() as driver:
                browser = driver.chromium.launch_persistent_context(
                    str(root / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS
                )
                try:
                    page = browser.new_page()
                    page.goto(link)
                    page.goto(link.split("?")[0] + "units/work")
                    out["working, one dashboard"] = window(proc, seconds)
                finally:
                    browser.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    try:
        results = measure(args.seconds)
    finally:
        sweep()
    cost = results["working, one dashboard"]["cpu_pct"] - results["working, no browser"]["cpu_pct"]
    print(f"agentd serve --http, {args.seconds:.0f} s windows, on {machine()['cpu']}\n")
    print(f"{'window':<28} {'CPU % of a core':>16} {'wake-ups/s':>11} {'RSS MB':>8}")
    for name, figures in results.items():
        print(
            f"{name:<28} {figures['cpu_pct']:>16.3f} {figures['wakeups_per_s']:>11.2f} "
            f"{figures['rss_mb']:>8.1f}"
        )
    verdict = "PASS" if cost < 1.0 else "MISS"
    print(f"\n{verdict}  one connected dashboard costs {cost:.3f}% of a core (target < 1%)")
    if args.json:
        report: dict[str, Any] = {
            "seconds": args.seconds,
            "windows": results,
            "dashboard_cpu_pct": cost,
            "machine": machine(),
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if cost < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
