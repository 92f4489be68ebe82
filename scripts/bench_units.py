#!/usr/bin/env python3
"""How long ``agentctl status`` waits while unit files arrive (the loop is never blocked).

Starts ``python -m agentd.cli serve`` in a temporary AGENTD_HOME and, while
one thread asks the socket for ``status`` back to back (and another runs the
real ``agentctl status`` process), drops in: an 8 MB unit file, a valid 1 MiB
unit file (50,000 env entries), 200 unit files at once, then changes all 200
at once, then reloads all of them (SIGHUP). Prints, per step, how long agentd
took to take it in and the worst and p99 status latency meanwhile.

``--src DIR`` runs the agentd in DIR (e.g. an export of another commit)
instead of this checkout's.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class Poller:
    """Status requests back to back on a thread; the latencies of each window."""

    def __init__(
        self, sock: Path, argv: list[str] | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.sock, self.argv, self.env = sock, argv, env
        self.samples: list[float] = []
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _once(self) -> None:
        if self.argv is not None:  # the real agentctl process, exec to exit
            subprocess.run(self.argv, env=self.env, capture_output=True, timeout=120)
            return
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(120)
            s.connect(str(self.sock))
            s.sendall(b'{"cmd": "status"}\n')
            s.makefile("rb").readline()

    def _run(self) -> None:
        while self.running:
            started = time.monotonic()
            self._once()
            self.samples.append(time.monotonic() - started)

    def window(self) -> list[float]:
        out, self.samples = self.samples, []
        return out

    def stop(self) -> None:
        self.running = False
        self.thread.join(130)


def unit_text(home: Path, n: int, note: str = "") -> str:
    return (
        f"command: [{sys.executable}, -c, 'pass']\nworkdir: {home}\nautostart: false\n"
        f"description: unit {n} {note}\n"
    )


def write(path: Path, text: str | bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(text.encode() if isinstance(text, str) else text)
    tmp.chmod(0o600)
    os.replace(tmp, path)


def events(home: Path, name: str) -> list[dict[str, object]]:
    path = home / "logs" / "agentd.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [e for e in map(json.loads, lines) if e.get("event") == name]


def wait(probe: Callable[[], bool], timeout: float = 600.0) -> float:
    started = time.monotonic()
    while not probe():
        if time.monotonic() - started > timeout:
            raise TimeoutError("agentd did not take the change in")
        time.sleep(0.05)
    return time.monotonic() - started


def row(step: str, took: float, socket_s: list[float], ctl_s: list[float]) -> str:
    def worst(xs: list[float]) -> str:
        if not xs:
            return "-"
        p99 = statistics.quantiles(xs, n=100)[98] if len(xs) >= 2 else xs[0]
        return f"{max(xs) * 1000:8.1f} / {p99 * 1000:7.1f} ms ({len(xs)})"

    return f"| {step} | {took:6.2f} s | {worst(socket_s)} | {worst(ctl_s)} |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=REPO, help="the agentd source tree to run")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="abu", dir="/tmp"))
    (home / "units").mkdir()
    env = {**os.environ, "AGENTD_HOME": str(home), "PYTHONPATH": str(args.src.resolve())}
    daemon = subprocess.Popen(
        [sys.executable, "-m", "agentd.cli", "serve", "-q"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sock = home / "run" / "agentd.sock"
    try:
        wait(lambda: sock.exists(), 30)
        fast = Poller(sock)
        ctl = Poller(sock, [sys.executable, "-m", "agentd.cli.agentctl", "status"], env)
        print(
            "| step | taken in | socket status: worst / p99 (n) | agentctl status: worst / "
            "p99 (n) |\n|---|---|---|---|"
        )
        time.sleep(3)
        print(row("idle, 3 s", 3.0, fast.window(), ctl.window()))

        write(home / "units" / "big.yaml", b"command: [x]\n" + b"#" * (8 * 1024 * 1024))
        took = wait(lambda: any(e.get("unit") == "big" for e in events(home, "unit.invalid")))
        print(row("an 8 MB unit file dropped in", took, fast.window(), ctl.window()))

        heavy = (
            unit_text(home, 0) + "env:\n" + "".join(f"  V{i}: value{i}\n" for i in range(50_000))
        )
        write(home / "units" / "heavy.yaml", heavy[: 1024 * 1024 - 1])
        took = wait(
            lambda: (
                any(e.get("unit") == "heavy" for e in events(home, "unit.loaded"))
                or any(e.get("unit") == "heavy" for e in events(home, "unit.invalid"))
            )
        )
        print(row("a 1 MiB unit file (50k env entries)", took, fast.window(), ctl.window()))

        for n in range(200):
            write(home / "units" / f"u{n:03d}.yaml", unit_text(home, n))
        took = wait(lambda: len(events(home, "unit.loaded")) >= 201)
        print(row("200 unit files at once", took, fast.window(), ctl.window()))

        for n in range(200):
            write(home / "units" / f"u{n:03d}.yaml", unit_text(home, n, "changed"))
        took = wait(
            lambda: (
                len([e for e in events(home, "unit.loaded") if e.get("change") == "changed"]) >= 200
            )
        )
        print(row("200 unit files changed at once", took, fast.window(), ctl.window()))

        daemon.send_signal(signal.SIGHUP)
        took = wait(lambda: bool(events(home, "daemon.reload")))
        print(row("SIGHUP: all 202 read again", took, fast.window(), ctl.window()))
        fast.stop()
        ctl.stop()
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(60)
        subprocess.run(["rm", "-rf", str(home)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
