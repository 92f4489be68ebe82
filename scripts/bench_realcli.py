#!/usr/bin/env python3
"""What a compaction costs with the real Claude Code under agentd, per path.

usage: python scripts/bench_realcli.py [--runs N] [--version V ...] [--path P ...] [--json FILE]

For each Claude Code version (default: the pinned ones, tests/realcli/pins.py)
and each path, N times: the real CLI (installed from npm into the test cache
like ``tests/realcli``) runs under ``agentd run`` against the fake model, which
reports ~97k tokens on two tool calls so the CLI compacts on its own; agentd
ends the session and starts the next. The paths:

- ``preset``: ``preset: claude-code`` alone (its hooks, given by ``--settings``);
- ``screen``: the preset's sentinels only (``hooks: none``);
- ``project``: ``hooks: none`` and ``agentctl hooks claude-code`` in the project.

Reported per compaction:

- summary requests that reached the model (goal with hooks: 0);
- turns run on the compacted context: main requests after the summary request,
  before agentd ended the session (goal: 0);
- the sentinel that fired, and for the screen path the bytes from the first
  byte of ``Compacting c`` to the chunk where the sentinel fired (0 = on the
  first draw);
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
from tests.realcli.clis import ClaudeProject, claude_exe  # noqa: E402
from tests.realcli.model import FakeModel, compacting_brain  # noqa: E402
from tests.realcli.pins import versions  # noqa: E402
from tests.support import events as logged_events  # noqa: E402

PATHS = ("preset", "screen", "project")


def claude(version: str) -> Path:
    import pytest  # the installer skips (pytest's Skipped) when npm fails

    try:
        return claude_exe(version)
    except pytest.skip.Exception as exc:
        raise SystemExit(str(exc)) from None


def _ts(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()


def one(path: str, exe: Path, root: Path) -> dict[str, Any]:
    home = root / "home"
    (home / "units").mkdir(parents=True)
    project = ClaudeProject(root, exe)
    env = dict(os.environ, AGENTD_HOME=str(home))
    if path == "project":
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
        # a summary in the tags Claude Code asks for: 2.1.332 asks once more without them
        model.control(summary="<analysis>fake</analysis>\n<summary>FAKE_SUMMARY_OK</summary>")
        unit = project.unit(model.url, **({} if path == "preset" else {"hooks": "none"}))
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
    ap.add_argument("--version", action="append", help="Claude Code version (repeatable)")
    ap.add_argument("--path", action="append", choices=PATHS, help="(repeatable; default all)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    paths = args.path or list(PATHS)
    rows = []
    for version in args.version or versions("claude-code"):
        exe = claude(version)
        for _ in range(args.runs):
            for path in paths:
                root = Path(tempfile.mkdtemp(prefix="rc", dir="/tmp"))
                try:
                    rows.append({"version": version, **one(path, exe, root)})
                finally:
                    shutil.rmtree(root, ignore_errors=True)
                print(json.dumps(rows[-1]), flush=True)
    print(f"\n{args.runs} compaction(s) per version and path")
    print(
        f"{'version':<10}{'path':<9}{'summaries/compaction':>22}{'turns on compacted':>20}"
        f"{'ms to SIGTERM (median)':>24}  sentinels (bytes after first draw)"
    )
    for version in dict.fromkeys(r["version"] for r in rows):
        for path in paths:
            got = [r for r in rows if r["path"] == path and r["version"] == version]
            if not got:
                continue
            late = [r["bytes_after_first_draw"] for r in got if "bytes_after_first_draw" in r]
            print(
                f"{version:<10}{path:<9}{sum(r['summaries'] for r in got) / len(got):>22.2f}"
                f"{sum(r['turns_after_summary'] for r in got):>20}"
                f"{statistics.median(r['ms_to_sigterm'] for r in got):>24.1f}"
                f"  {sorted({r['sentinel'] for r in got})}{f' {late}' if late else ''}"
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
