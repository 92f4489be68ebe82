#!/usr/bin/env python3
"""What a compaction costs with the real Claude Code under agentd, per path.

usage: python scripts/bench_realcli.py [--runs N] [--json FILE]

For each path — ``screen`` (the preset's sentinels only) and ``hooks``
(``agentctl hooks claude-code`` installed) — N times: the real Claude Code
(pinned, installed from npm into the test cache like ``tests/realcli``) runs
under ``agentd run`` against the fake model, which reports ~97k tokens on two
tool calls so the CLI compacts on its own; agentd ends the session and starts
the next. Reported per compaction:

- summary requests that reached the model (goal with hooks: 0);
- turns run on the compacted context: main requests after the summary request,
  before agentd ended the session (goal: 0);
- the sentinel that fired, and for the screen path the bytes from the first
  byte of ``Compacting c`` to the chunk where the sentinel fired (0 extra
  chunks = first draw);
- milliseconds from the compaction's start (the summary request reaching the
  model, which the CLI sends as it draws the spinner; for hooks, agentd hearing
  from the hook) to SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.realcli.clis import CACHE, CLAUDE_CODE, ClaudeProject  # noqa: E402
from tests.realcli.model import FakeModel, compacting_brain  # noqa: E402
from tests.support import events as logged_events  # noqa: E402


def claude() -> Path:
    prefix = CACHE / f"claude-code-{CLAUDE_CODE}"
    exe = prefix / "node_modules" / ".bin" / "claude"
    if not exe.exists():
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                f"@anthropic-ai/claude-code@{CLAUDE_CODE}",
            ],
            check=True,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=300,
        )
    return exe


def _ts(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()


def one(path: str, exe: Path, root: Path) -> dict[str, Any]:
    home = root / "home"
    (home / "units").mkdir(parents=True)
    project = ClaudeProject(root, exe)
    env = dict(os.environ, AGENTD_HOME=str(home))
    if path == "hooks":
        subprocess.run(
            [
                sys.executable,
                "-m",
                "agentd.cli.agentctl",
                "hooks",
                "claude-code",
                "--dir",
                str(project.project),
            ],
            check=True,
            env=env,
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )
    with FakeModel(root / "requests.jsonl", brain=compacting_brain) as model:
        unit = project.unit(model.url)
        unit_file = home / "units" / "cc.yaml"
        unit_file.write_text(json.dumps(unit))
        unit_file.chmod(0o600)
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentd.cli", "run", "-q", "cc"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if any(
                    e["event"] == "session.start" and e.get("session") == 2
                    for e in logged_events(home)
                ):
                    break
                time.sleep(0.2)
            else:
                raise SystemExit(f"{path}: no second session within 120 s")
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
        requests = model.requests()
    events = logged_events(home)
    kill = next(e for e in events if e["event"] == "session.kill" and e["session"] == 1)
    hit = next(e for e in events if e["event"] == "session.sentinel" and e["session"] == 1)
    summaries = [r for r in requests if r.get("note") == "summary"]
    t_kill = _ts(kill)
    main = [r for r in requests if isinstance(r.get("body"), dict) and r["body"].get("tools")]
    after = [
        r
        for r in main
        if summaries and summaries[0]["t"] < r["t"] < t_kill and r.get("note") != "summary"
    ]
    start = summaries[0]["t"] if summaries else _ts(hit)
    out: dict[str, Any] = {
        "path": path,
        "sentinel": hit["name"],
        "summaries": len(summaries),
        "turns_after_summary": len(after),
        "ms_to_sigterm": round((t_kill - start) * 1000, 1),
    }
    if path == "screen" and "at_byte" in hit:
        transcript = (home / "logs" / "cc" / "transcript.log").read_bytes()
        begin = transcript.find(b"session 1 starting")
        begin = transcript.find(b"\n", begin) + 1
        first = transcript.find(b"Compacting c", begin)
        out["bytes_after_first_draw"] = hit["at_byte"] - (first - begin) if first >= 0 else None
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    exe = claude()
    rows = []
    for _ in range(args.runs):
        for path in ("screen", "hooks"):
            root = Path(tempfile.mkdtemp(prefix="rc", dir="/tmp"))
            try:
                rows.append(one(path, exe, root))
            finally:
                shutil.rmtree(root, ignore_errors=True)
            print(json.dumps(rows[-1]), flush=True)
    print(f"\nClaude Code {CLAUDE_CODE}, {args.runs} compaction(s) per path")
    print(
        f"{'path':<8}{'summaries/compaction':>22}{'turns on compacted':>20}"
        f"{'ms to SIGTERM (median)':>24}  sentinels"
    )
    for path in ("screen", "hooks"):
        got = [r for r in rows if r["path"] == path]
        print(
            f"{path:<8}{sum(r['summaries'] for r in got) / len(got):>22.2f}"
            f"{sum(r['turns_after_summary'] for r in got):>20}"
            f"{statistics.median(r['ms_to_sigterm'] for r in got):>24.1f}"
            f"  {sorted({r['sentinel'] for r in got})}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
