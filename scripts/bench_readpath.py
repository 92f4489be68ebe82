#!/usr/bin/env python3
"""The CPU a session's read path takes per 100 MB of output, in this process.

A real ``Session`` (screen ring, line matcher with the claude-code sentinels,
transcript with its redaction) is fed by a stand-in for the pty that hands
out reads as a busy pty does (4095 bytes each, 16 a wakeup), with no event
loop wake-ups and no system calls for the reads: what is left is agentd's own
work on the bytes. CPU time (``process_time``) is steadier than wall time on
a shared machine; ``--runs N`` prints the median and the lowest of N.

Outputs (``--output``):
  flood  tool output lines (``bench_agent.py``'s, with the pty's CR LF): what
         ``bench.py``'s throughput phase floods agentd with
  frames a TUI redrawing 30 rows in every synchronized update, each row new
  ink    Ink's way: the dynamic area erased and written again every frame,
         only the spinner row different

``--secret`` gives the unit a secret to hide (an API key in its environment).
``--src DIR`` measures the agentd in DIR (another checkout) instead of this one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
READ = 4095  # what one read of a pty master gives at most
READS_PER_WAKEUP = 16
KEY = "sk-ant-api03-" + "x" * 40


def output(kind: str) -> bytes:
    """A block of ``kind`` output as the pty master reads it (LF written as CR LF)."""
    if kind == "flood":
        from bench_agent import tool_output

        return tool_output(1000).replace(b"\n", b"\r\n")
    frames = []
    rows = [
        f"  \x1b[2m\u2502\x1b[0m row {r}: a tool call's result, src/mod_{r}.py" for r in range(18)
    ]
    for i in range(200):
        spinner = f"\x1b[36m\u280b Thinking\u2026 ({i}s \u00b7 esc to interrupt)\x1b[0m"
        if kind == "frames":
            body = "".join(
                f"\x1b[{r + 1};1H\x1b[2K  row {r} of frame {i}: \x1b[1mbold\x1b[0m src/mod_{i}.py"
                for r in range(30)
            )
            frames.append(f"\x1b[?2026h{body}\x1b[38;1H\x1b[2K{spinner}\x1b[40;1H> \x1b[?2026l")
        else:
            erase = "\x1b[2K\x1b[1A" * 20 + "\x1b[2K\x1b[G"
            frames.append(
                f"\x1b[?2026h{erase}" + "\r\n".join([*rows, spinner, "> "]) + "\x1b[?2026l"
            )
    return "".join(frames).encode()


class Pty:
    """Stands in for a session's child: reads of ``data`` as a busy pty gives them."""

    pid = os.getpid()
    fd = -1
    reaped = False

    def __init__(self, data: bytes) -> None:
        self.data, self.at, self.reads = data, 0, 0

    def read(self) -> bytes | None:
        if self.at >= len(self.data) or self.reads == READS_PER_WAKEUP:
            self.reads = 0
            return None  # nothing more this wakeup
        self.reads += 1
        chunk = self.data[self.at : self.at + READ]
        self.at += len(chunk)
        return chunk


def unit_rules(work: Path) -> tuple[Any, Any]:
    """The sentinels and secret patterns of a claude-code unit."""
    import yaml

    from agentd.config.unitfile import load_unit
    from agentd.supervisor.triggers import rules

    path = work / "u.yaml"
    (work / "w").mkdir(exist_ok=True)
    path.write_text(
        yaml.safe_dump({"preset": "claude-code", "command": ["x"], "workdir": str(work / "w")})
    )
    path.chmod(0o600)
    unit = load_unit(path)
    return rules(unit), unit.secret_patterns


def cpu_per_100mb(data: bytes, work: Path, secret: bool) -> float:
    from agentd.session.redact import Redactor, secrets_from_env
    from agentd.session.screen import ScreenRing
    from agentd.session.session import Session
    from agentd.session.transcript import Transcript
    from agentd.terminal.matcher import LineMatcher

    sentinels, patterns = unit_rules(work)
    env = {"ANTHROPIC_API_KEY": KEY} if secret else {}

    async def run() -> float:
        pty = Pty(data)
        transcript = Transcript(
            work / "transcript.log",
            max_bytes=50 << 20,
            backups=1,
            redactor=Redactor(secrets_from_env(env), patterns),
        )
        session = Session(
            number=1,
            child=pty,  # type: ignore[arg-type]
            marker="bench",
            matcher=LineMatcher(sentinels, cols=120, rows=40),
            transcript=transcript,
            on_output=lambda hits: None,
            on_raw=lambda data: None,
            screen=ScreenRing(120, 40, 1),
        )
        started = time.process_time()
        while pty.at < len(data):
            session._on_readable()
        used = time.process_time() - started
        transcript.close()
        return used

    return asyncio.run(run()) * 100e6 / len(data)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--output", choices=("flood", "frames", "ink"), default="flood")
    ap.add_argument("--mb", type=float, default=30.0, help="MB of output per run (default 30)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--secret", action="store_true", help="a secret to hide in the transcript")
    ap.add_argument("--src", type=Path, help="the agentd checkout to measure (default: this one)")
    args = ap.parse_args()
    sys.path[:0] = [str(SCRIPTS), str(args.src or SCRIPTS.parent)]
    block = output(args.output)
    size = int(args.mb * 1e6)
    data = (block * (size // len(block) + 1))[:size]
    got = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="agentd-readpath-") as tmp:
            got.append(cpu_per_100mb(data, Path(tmp), args.secret))
    print(
        f"{args.output}{' with a secret' if args.secret else ''}: "
        f"{statistics.median(got):.2f} CPU s per 100 MB (median of {args.runs}, lowest "
        f"{min(got):.2f}; {len(data) / 1e6:.0f} MB a run; load {os.getloadavg()[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
