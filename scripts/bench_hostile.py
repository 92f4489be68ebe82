#!/usr/bin/env python3
"""The hostile-input probe's load figures, again: is agentd answered under floods?

Starts ``python -m agentd.cli serve --http 127.0.0.1:0`` in a temporary
AGENTD_HOME with 100 units (each an idle agent) and one that floods its pty
with tool output (the claude-code sentinel pack on), then runs these phases
(``--seconds`` each), while one thread asks the control socket for
``status`` back to back and another runs the real ``agentctl status`` every
half second:

  quiet        the 100 units and the flood
  unix-flood   + 3,000 connections to the control socket, kept up (each one
               closed by agentd is opened again), never sending a byte
  tcp-flood    + 3,000 connections to the dashboard's port from a second uid
               (``agentd-probe``, made with useradd; needs root), half of them
               idle, half sending the first line of a request, kept up
  both         both floods at once

and prints, per phase: the worst and p99 ``status`` latency on the socket and
from exec to exit of ``agentctl status``, the event log's growth (bytes a
minute, rotated files included), the daemon's fds and RSS at their highest,
and the ``daemon.error`` and ``control.refused`` events it wrote. Exit status
1 when ``agentctl status`` took 1 s or more, or the event log grew more than
1 MB a minute, in any phase.

usage: python scripts/bench_hostile.py [--seconds S] [--units N] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from agentd.daemon.control.client import Client  # noqa: E402
from agentd.errors import AgentdError  # noqa: E402

PROBE_USER = "agentd-probe"
FLOOD_CONNECTIONS = 3000
CTL_EVERY = 0.5

IDLE = "import sys, time; print('up', flush=True); time.sleep(10**6)"
FLOOD = (
    "import os\n"
    "line = b'  tool output line: reading src/module.py ... ok, 42 tests passed\\r\\n' * 2000\n"
    "while True:\n"
    "    os.write(1, line)\n"
)
# Keeps N connections to a Unix socket path or a TCP port up until its stdin closes:
# one the far end closes is opened again. FIRST is sent on each TCP one (half of them).
HOLDER = r"""
import resource, selectors, socket, sys, time
target, n, first = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 256), hard))
sel = selectors.DefaultSelector()
sel.register(sys.stdin, selectors.EVENT_READ, None)
made = dropped = 0
def one(i):
    global made
    if target.startswith("/"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address = target
    else:
        s = socket.socket()
        address = ("127.0.0.1", int(target))
    s.settimeout(1.0)
    for _ in range(100):  # a Unix socket's full backlog says EAGAIN at once: try again
        try:
            s.connect(address)
            break
        except BlockingIOError:
            time.sleep(0.01)
        except OSError:
            s.close()
            return
    else:
        s.close()
        return
    try:
        if first and i % 2 and not target.startswith("/"):
            s.sendall(first)
    except OSError:
        s.close()
        return
    s.setblocking(False)
    made += 1
    sel.register(s, selectors.EVENT_READ, i)
for i in range(n):
    one(i)
while True:
    for key, _ in sel.select(1.0):
        if key.data is None:
            print(made, dropped, flush=True)
            sys.exit(0)
        try:
            data = key.fileobj.recv(4096)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if not data:
            sel.unregister(key.fileobj)
            key.fileobj.close()
            dropped += 1
            one(key.data)
"""


class Pollers:
    """``status`` on the socket back to back, and the real ``agentctl status`` every
    ``CTL_EVERY`` s: the latencies of the current window."""

    def __init__(self, sock: Path, env: dict[str, str]) -> None:
        self.sock, self.env = sock, env
        self.socket_s: list[float] = []
        self.ctl_s: list[float] = []
        self.failures: list[str] = []
        self.running = True
        self.threads = [
            threading.Thread(target=self._socket, daemon=True),
            threading.Thread(target=self._ctl, daemon=True),
        ]
        for t in self.threads:
            t.start()

    def _socket(self) -> None:
        while self.running:
            started = time.monotonic()
            try:  # as agentctl asks (it waits while the backlog is full)
                with Client(self.sock, timeout=60) as client:
                    client.call("status")
            except (OSError, AgentdError) as exc:
                self.failures.append(repr(exc)[:200])
            self.socket_s.append(time.monotonic() - started)
            time.sleep(0.01)

    def _ctl(self) -> None:
        argv = [str(Path(sys.executable).parent / "agentctl"), "status"]
        if not Path(argv[0]).exists():
            argv = [sys.executable, "-m", "agentd.cli.agentctl", "status"]
        while self.running:
            started = time.monotonic()
            done = subprocess.run(argv, env=self.env, capture_output=True, timeout=120)
            self.ctl_s.append(time.monotonic() - started)
            if done.returncode not in (0, 3):
                self.failures.append(done.stderr.decode(errors="replace")[:200])
            time.sleep(CTL_EVERY)

    def window(self) -> tuple[list[float], list[float], list[str]]:
        out = self.socket_s, self.ctl_s, self.failures
        self.socket_s, self.ctl_s, self.failures = [], [], []
        return out

    def stop(self) -> None:
        self.running = False
        for t in self.threads:
            t.join(130)


def second_user() -> tuple[int, int, str] | None:
    """(uid, gid, python) of ``agentd-probe`` (made if missing), or None: not root."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(PROBE_USER)
    except KeyError:
        if shutil.which("useradd") is None:
            return None
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/bin/false", PROBE_USER],
            capture_output=True,
            check=False,
        )
        entry = pwd.getpwnam(PROBE_USER)
    for python in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        if not python:
            continue
        with contextlib.suppress(OSError):
            done = subprocess.run(
                [python, "-c", "pass"],
                user=entry.pw_uid,
                group=entry.pw_gid,
                extra_groups=[],
                cwd="/",
                capture_output=True,
                check=False,
            )
            if done.returncode == 0:
                return entry.pw_uid, entry.pw_gid, python
    return None


def holder(target: str, first: str, user: tuple[int, int, str] | None) -> subprocess.Popen[str]:
    kwargs: dict[str, object] = {}
    python = sys.executable
    if user is not None:
        uid, gid, python = user
        kwargs = {"user": uid, "group": gid, "extra_groups": [], "cwd": "/"}
    return subprocess.Popen(
        [python, "-c", HOLDER, target, str(FLOOD_CONNECTIONS), first],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        **kwargs,  # type: ignore[arg-type]
    )


def ended(proc: subprocess.Popen[str]) -> str:
    """Close its stdin; what it said (connections made, closed by agentd)."""
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    made, _, dropped = (out or "? ? ?").strip().partition(" ")
    return f"{made} opened, {dropped} closed by agentd"


def log_bytes(home: Path) -> int:
    return sum(p.stat().st_size for p in (home / "logs").glob("agentd.jsonl*"))


def events(home: Path, name: str) -> int:
    count = 0
    for path in (home / "logs").glob("agentd.jsonl*"):
        with path.open(encoding="utf-8", errors="replace") as f:
            count += sum(1 for line in f if f'"event": "{name}"' in line)
    return count


def worst(xs: list[float]) -> str:
    if not xs:
        return "-"
    p99 = statistics.quantiles(xs, n=100)[98] if len(xs) >= 2 else xs[0]
    return f"{max(xs) * 1000:.0f} / {p99 * 1000:.0f} ms ({len(xs)})"


def sample(pid: int, peak: dict[str, float], stop: threading.Event) -> None:
    while not stop.wait(0.2):
        with contextlib.suppress(OSError):
            peak["fds"] = max(peak["fds"], len(os.listdir(f"/proc/{pid}/fd")))
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    peak["rss"] = max(peak["rss"], int(line.split()[1]) / 1024)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each phase")
    parser.add_argument("--units", type=int, default=100, help="idle units besides the flood")
    parser.add_argument("--keep", action="store_true", help="keep the temporary AGENTD_HOME")
    parser.add_argument("--no-flood", action="store_true", help="no unit flooding its pty")
    parser.add_argument("--only", default="", help="phases to run, e.g. quiet,tcp-flood")
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        help="run agentd (and so its sessions) at this nice value, e.g. -10 on a machine "
        "others load (root only for a negative one)",
    )
    opts = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="bh", dir="/tmp"))
    (home / "units").mkdir()
    (home / "work").mkdir()
    env = dict(os.environ, AGENTD_HOME=str(home), PYTHONPATH=str(REPO))
    env.pop("AGENTD_SOCKET", None)
    env.pop("NOTIFY_SOCKET", None)
    for n in range(opts.units):
        text = f"command: [{sys.executable}, -c, {json.dumps(IDLE)}]\nworkdir: {home / 'work'}\n"
        text += f"state: {{dir: {home / 'work' / f'state-{n}'}}}\ninject: {{mode: none}}\n"
        (home / "units" / f"idle{n:03d}.yaml").write_text(text)
    if not opts.no_flood:
        (home / "units" / "flood.yaml").write_text(
            f"preset: claude-code\ncommand: [{sys.executable}, -c, {json.dumps(FLOOD)}]\n"
            f"workdir: {home / 'work'}\nstate: {{dir: {home / 'work' / 'state-flood'}}}\n"
            "inject: {mode: none}\n"
        )
    for path in (home / "units").iterdir():
        path.chmod(0o600)
    daemon = subprocess.Popen(
        [sys.executable, "-m", "agentd.cli", "serve", "--http", "127.0.0.1:0"],
        preexec_fn=(lambda: os.nice(opts.nice)) if opts.nice else None,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=(home / "serve.err").open("wb"),
    )
    sock = home / "run" / "agentd.sock"
    rows: list[str] = []
    missed: list[str] = []
    pollers: Pollers | None = None
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.connect(str(sock))
                    s.sendall(b'{"cmd": "ping"}\n')
                    url = json.loads(s.makefile("rb").readline())["result"]["dashboard"]
                break
            except (OSError, ValueError, KeyError):
                if time.monotonic() > deadline or daemon.poll() is not None:
                    said = (home / "serve.err").read_text()
                    raise SystemExit(f"agentd did not start: {said}") from None
                time.sleep(0.2)
        port = url.rsplit(":", 1)[1].rstrip("/")
        time.sleep(10)  # the units start
        user = second_user()
        if user is None:
            print("tcp-flood: skipped (needs root and useradd for a second local user)")
        pollers = Pollers(sock, env)
        phases: list[tuple[str, list[tuple[str, str, tuple[int, int, str] | None]]]] = [
            ("quiet", []),
            ("unix-flood", [(str(sock), "", None)]),
        ]
        if user is not None:
            phases += [
                ("tcp-flood", [(port, "GET / HTTP/1.1\r\n", user)]),
                ("both", [(str(sock), "", None), (port, "GET / HTTP/1.1\r\n", user)]),
            ]
        if opts.only:
            phases = [p for p in phases if p[0] in opts.only.split(",")]
        for name, floods in phases:
            peak = {"fds": 0.0, "rss": 0.0}
            stop = threading.Event()
            sampler = threading.Thread(target=sample, args=(daemon.pid, peak, stop), daemon=True)
            sampler.start()
            before_log = log_bytes(home)
            before_errors = events(home, "daemon.error")
            before_refused = events(home, "control.refused")
            pollers.window()
            started = time.monotonic()
            held = [holder(target, first, who) for target, first, who in floods]
            time.sleep(opts.seconds)
            socket_s, ctl_s, failures = pollers.window()
            said = [ended(h) for h in held]
            took = time.monotonic() - started
            stop.set()
            sampler.join(5)
            grown = (log_bytes(home) - before_log) / took * 60
            rows.append(
                f"| {name} | {worst(socket_s)} | {worst(ctl_s)} | {grown / 1e3:.1f} kB/min | "
                f"{peak['fds']:.0f} | {peak['rss']:.0f} MB | "
                f"{events(home, 'daemon.error') - before_errors} | "
                f"{events(home, 'control.refused') - before_refused} | "
                f"{'; '.join(said) or '-'} | {len(failures)} |"
            )
            if ctl_s and max(ctl_s) >= 1.0:
                missed.append(f"{name}: agentctl status took {max(ctl_s):.2f}s")
            if grown > 1e6:
                missed.append(f"{name}: the event log grew {grown / 1e6:.1f} MB/min")
            if failures:
                missed.append(f"{name}: {len(failures)} status requests failed: {failures[:2]}")
            time.sleep(6)  # what the floods left is closed by the deadlines
    finally:
        if pollers is not None:
            pollers.stop()
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(120)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        if not opts.keep:
            shutil.rmtree(home, ignore_errors=True)
    print(
        f"{opts.units} idle units{'' if opts.no_flood else ' and a flood'}; "
        f"{opts.seconds:.0f} s a phase; {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f}; agentd at nice {opts.nice}; Python {sys.version.split()[0]}"
    )
    print(
        "| phase | status on the socket, worst / p99 (n) | agentctl status, exec to exit, "
        "worst / p99 (n) | event log growth | fds at most | RSS at most | daemon.error | "
        "control.refused | floods | failed requests |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    for miss in missed:
        print(f"MISS: {miss}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
