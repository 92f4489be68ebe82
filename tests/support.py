"""Helpers shared by the test modules; pytest's fixtures are in conftest.py.

No test module imports another: what two of them share is here. Every wait
here has a deadline and, at it, fails the test saying what it last saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pexpect
import psutil
import pytest
import yaml

from agentd.config.unitfile import load_unit
from agentd.daemon.dashboard.access import TOKEN_FILE
from agentd.events import EventLog
from agentd.memory.bootstrap.render import Bootstrap, BootstrapContext, render
from agentd.memory.layout import LayoutFile, resolve
from agentd.paths import Paths
from agentd.supervisor.api import Supervisor

HERE = Path(__file__).resolve().parent
FAKE_AGENT = str(HERE / "fake_agent.py")
FIXTURES = HERE / "fixtures" / "tui"  # copied from shared/fixtures/tui: raw Claude Code output
LOCAL_FIXTURES = HERE / "fixtures"

T = TypeVar("T")


def fake(*steps: str) -> list[str]:
    """argv for the fake agent running ``steps``."""
    return [sys.executable, FAKE_AGENT, *steps]


# --- waits ---------------------------------------------------------------------------------------


def poll_for(
    probe: Callable[[], T],
    *,
    timeout: float = 10.0,
    interval: float = 0.02,
    what: str = "",
    seen: Callable[[], object] | None = None,
) -> T:
    """Wait until ``probe()`` is truthy (and return it); at ``timeout`` fail the test
    showing what the probe last returned, and ``seen()`` where a falsy value says little."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            _timed_out(timeout, what or repr(probe), last, seen)
        time.sleep(interval)


def _timed_out(
    timeout: float, what: str, last: object, seen: Callable[[], object] | None
) -> NoReturn:
    also = f"; and {seen()!r}" if seen is not None else ""
    pytest.fail(f"timed out after {timeout}s waiting for {what}; last saw {last!r}{also}")


async def async_poll_for(
    probe: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = 10.0,
    interval: float = 0.01,
    what: str = "",
    seen: Callable[[], object] | None = None,
) -> T:
    """``poll_for`` on the running loop, which goes on meanwhile (a session reads, a
    supervisor acts); ``probe`` may be a coroutine function. At ``timeout`` it fails
    the test showing what the probe last returned (and ``seen()``)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = probe()
        if inspect.isawaitable(last):
            last = await last
        if last:
            return last  # type: ignore[no-any-return]
        if time.monotonic() > deadline:
            _timed_out(timeout, what or repr(probe), last, seen)
        await asyncio.sleep(interval)


async def async_wait_for(
    awaitable: Awaitable[T],
    *,
    timeout: float,
    what: str,
    seen: Callable[[], object] | None = None,
) -> T:
    """``asyncio.wait_for`` that, at its deadline, fails the test naming what it
    waited for and showing ``seen()`` (what there was instead)."""
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except TimeoutError:
        last = f"; last saw {seen()!r}" if seen is not None else ""
        pytest.fail(f"timed out after {timeout}s waiting for {what}{last}")


# --- counting instead of timing ------------------------------------------------------------------

# Bounded work is asserted as a count (bytes read, calls made), never as seconds.
READS_COUNTED = os.path.exists("/proc/self/io")
needs_read_count = pytest.mark.skipif(
    not READS_COUNTED, reason="counts the bytes read in /proc/self/io (Linux)"
)


def bytes_read() -> int:
    """The bytes this process has read so far, from any file, by any thread (``rchar``
    of /proc/self/io): a difference of two is what the code between them read."""
    with open("/proc/self/io", encoding="ascii") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


# --- the real CLIs and what they write -----------------------------------------------------------


def write_unit(home: Path, name: str, unit: dict[str, Any]) -> Path:
    """Write ``units/NAME.yaml`` (mode 0600) under ``home``; the workdir defaults to home/work."""
    unit = dict(unit)
    if "workdir" not in unit:
        work = home / "work"
        work.mkdir(exist_ok=True)
        unit["workdir"] = str(work)
    path = home / "units" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(unit, sort_keys=False), encoding="utf-8")
    path.chmod(0o600)
    return path


def agentd(
    home: Path,
    *args: str,
    timeout: float = 30.0,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI (``python -m agentd.cli``) with AGENTD_HOME=home."""
    full_env = dict(os.environ, AGENTD_HOME=str(home), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "agentd.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        stdin=subprocess.DEVNULL,
    )


def events(home: Path, name: str | None = None) -> list[dict[str, Any]]:
    path = home / "logs" / "agentd.jsonl"
    if not path.exists():
        return []
    out = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [e for e in out if name is None or e["event"] == name]


def records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def agentd_popen(
    home: Path,
    *args: str,
    stderr: int = subprocess.PIPE,
) -> subprocess.Popen[str]:
    """The real CLI in the background (AGENTD_HOME=home); the caller ends and reaps it."""
    return subprocess.Popen(
        [sys.executable, "-m", "agentd.cli", *args],
        env=dict(os.environ, AGENTD_HOME=str(home)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
    )


def noted_pid(path: Path) -> int | None:
    """The first pid the fake agent noted in ``$FAKE_PIDS`` (None while there is none)."""
    try:
        first = path.read_text().split()
    except FileNotFoundError:
        return None
    return int(first[0]) if first else None


# --- a served daemon (`agentd serve`) and its control socket -------------------------------------

QUICK = {"min_uptime": "0s", "delay": "50ms", "max_delay": "200ms"}


class Served:
    """One ``python -m agentd.cli serve`` process and a raw client for it."""

    def __init__(
        self, home: Path, args: tuple[str, ...] = ("serve",), env: dict[str, str] | None = None
    ) -> None:
        self.home = home
        self.socket = home / "run" / "agentd.sock"
        self.err_path = home / f"serve-{time.monotonic_ns()}.err"
        full_env = dict(os.environ, AGENTD_HOME=str(home), **(env or {}))
        with self.err_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "agentd.cli", *args],
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )

    @property
    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def ready(self, timeout: float = 15.0) -> Served:
        def up() -> bool:
            if self.proc.poll() is not None:
                pytest.fail(f"agentd exited {self.proc.returncode}: {self.stderr}")
            try:
                return bool(self.call("ping")["ok"])
            except OSError:
                return False

        poll_for(up, timeout=timeout, what="agentd to answer ping")
        return self

    def call(self, cmd: str, timeout: float = 30.0, **args: Any) -> dict[str, Any]:
        """One request on a fresh connection; the raw reply object."""
        return request(self.socket, json.dumps({"cmd": cmd, "args": args}).encode(), timeout)

    def result(self, cmd: str, **args: Any) -> Any:
        reply = self.call(cmd, **args)
        assert reply["ok"], reply
        return reply["result"]

    def status(self, name: str) -> dict[str, Any]:
        return dict(self.result("status", units=[name])[0])

    def kill(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"agentd did not stop within {timeout}s: {self.stderr}")


def request(path: Path, line: bytes, timeout: float = 30.0) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(line + b"\n")
        reply: dict[str, Any] = json.loads(s.makefile("rb").readline())
        return reply


def gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie not yet reaped counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def held(pid: int) -> psutil.Process | None:
    """``pid`` as a process, taken while it is known to be ours: ``kill_held`` on it
    later cannot hit another process that was given the number since."""
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def kill_held(proc: psutil.Process | None) -> None:
    """SIGKILL ``proc`` if it is still that process (psutil checks its start time: a
    number freed and handed to another process of a parallel run is left alone)."""
    if proc is not None:
        with contextlib.suppress(psutil.Error):  # gone (or reaped) since
            proc.kill()


# s: a status request not answered by then fails the watch. The probes' freezes were
# 30-150 s (a backtracking regex, an accept-error storm); how fast status is answered
# under each flood is a figure of scripts/bench_hostile.py, not a correctness bound
# here, where a loaded test machine would make it fail by chance.
STATUS_DEADLINE = 5.0


class StatusWatch:
    """Asks ``status`` every 50 ms on a thread: each must be answered, ok, within
    ``STATUS_DEADLINE``; ``answered`` counts them, ``worst`` is the slowest (s)."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket
        self.worst = 0.0
        self.answered = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> StatusWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(STATUS_DEADLINE + 5)  # a request in flight has its deadline
        if self._thread.is_alive():
            self.failures.append("the status watcher did not stop after its last request")

    def _run(self) -> None:
        while True:  # one request at least, however short the probe
            started = time.monotonic()
            try:
                reply = request(self.socket, b'{"cmd": "status"}', timeout=STATUS_DEADLINE)
                if reply.get("ok"):
                    self.answered += 1
                else:
                    self.failures.append(str(reply))
            except OSError as exc:  # the deadline passed (TimeoutError), or refused
                self.failures.append(f"{exc!r} after {time.monotonic() - started:.1f}s")
            self.worst = max(self.worst, time.monotonic() - started)
            if self._stop.wait(0.05):
                return

    def check(self) -> None:
        assert not self.failures, self.failures[:3]
        assert self.answered > 0, "no status request was made while the probe ran"


# --- the dashboard of a served daemon (`agentd serve --http`) ------------------------------------


class Web:
    """The dashboard of a ``Served`` daemon, asked with urllib."""

    def __init__(self, daemon: Served) -> None:
        self.url = daemon.result("ping")["dashboard"]
        self.token = (daemon.home / "run" / TOKEN_FILE).read_text().strip()
        self.port = urllib.parse.urlsplit(self.url).port

    def get(
        self,
        path: str,
        *,
        token: bool = True,
        headers: dict[str, str] | None = None,
        data: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], str]:
        """Status, headers and body (errors too)."""
        head = dict(headers or {})
        if token:
            head["Authorization"] = f"Bearer {self.token}"
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        req = urllib.request.Request(self.url.rstrip("/") + path, headers=head, data=body)
        try:
            with urllib.request.urlopen(req, timeout=30) as answer:
                return answer.status, dict(answer.headers), answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read().decode()


def dashboard_daemon(home: Path, serve: list[Served], *extra: str) -> tuple[Served, Web]:
    d = Served(home, ("serve", "--http", "127.0.0.1:0", *extra))
    serve.append(d.ready())
    return d, Web(d)


# The dashboard in a real browser (the ``browser`` fixture of tests/daemon/conftest.py).
CHROMIUM = "/usr/bin/chromium"  # the distribution's: no browser is ever downloaded
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
WAIT_MS = 15_000  # for anything the page shows


def console_errors(page: Any) -> list[str]:
    """The errors the (playwright) ``page`` will log (a script or style refused, a
    failed request...). Chromium asks for /favicon.ico now and then on its own,
    without the cookie (the pages say they have none): that 401 is not the page's."""
    said: list[str] = []

    def note(message: Any) -> None:
        if message.type == "error" and not message.location["url"].endswith("/favicon.ico"):
            said.append(f"{message.text} ({message.location['url']})")

    page.on("console", note)
    return said


# --- agentctl on a terminal of its own -----------------------------------------------------------


def ctl_pty(home: Path, *args: str) -> pexpect.spawn:
    """``agentctl ARGS`` on a real terminal of its own (80x24), for keys and raw mode."""
    return pexpect.spawn(
        sys.executable,
        ["-m", "agentd.cli.agentctl", *args],
        env=dict(os.environ, AGENTD_HOME=str(home)),
        dimensions=(24, 80),
        timeout=15,
    )


def end(child: pexpect.spawn) -> int:
    """Wait for ``child`` to exit (killing it after 10 s); its exit status."""
    if child.isalive():
        child.expect(pexpect.EOF, timeout=10)
    child.close(force=True)
    return int(child.exitstatus if child.exitstatus is not None else -1)


def detach(child: pexpect.spawn, unit: str) -> None:
    """Press Ctrl-]: ``agentctl attach`` says so and exits 0."""
    child.send("\x1d")
    child.expect(f"detached from {unit}: you pressed Ctrl-]")
    assert end(child) == 0


def said(home: Path, unit: str, text: str) -> bool:
    """Whether the unit's transcript has ``text`` (the agent got that far)."""
    path = home / "logs" / unit / "transcript.log"
    return path.exists() and text in path.read_text(errors="replace")


# --- the supervisor in-process -------------------------------------------------------------------


def run_with(
    home: Path, name: str, unit: dict[str, Any], body: Callable[[Supervisor], Awaitable[None]]
) -> list[dict[str, Any]]:
    """Load ``unit``, run ``body`` against a live ``Supervisor``, shut it down; return
    the events. ``body`` has 20 s: at that deadline the test fails showing the unit's
    state and the events so far."""
    path = write_unit(home, name, unit)
    paths = Paths.resolve(home)
    seen: list[dict[str, Any]] = []

    async def main() -> None:
        log = EventLog(paths.events_file)
        log.subscribe(seen.append)
        sup = Supervisor(paths, log)
        sup.attach()  # starts the fork server: what follows is undone by shutdown
        try:
            sup.add(load_unit(path))
            await async_wait_for(
                body(sup),
                timeout=20,
                what=f"the test's body against unit {name}",
                seen=lambda: (sup.get(name).state, [e["event"] for e in seen][-20:]),
            )
        finally:
            await sup.shutdown()
            log.close()

    asyncio.run(main())
    return seen


def states(seen: list[dict[str, Any]]) -> list[str]:
    """The states a unit went through, from its ``unit.state`` events."""
    return [e["to"] for e in seen if e["event"] == "unit.state"]


# --- captures of real CLIs -----------------------------------------------------------------------


def resize_phases(scenario: str) -> list[tuple[int, int, bytes]]:
    """(cols, rows, what Claude Code wrote at that size), in order: the capture at
    120x40, then its answer to each resize (``tests/fixtures/captured/README.md``)."""
    found = sorted((LOCAL_FIXTURES / "captured" / "resize").glob(f"*-resize-{scenario}-*.raw"))
    out = []
    for path in found:
        cols, rows = path.stem.rsplit("-", 1)[1].split("x")
        out.append((int(cols), int(rows), path.read_bytes()))
    assert [(c, r) for c, r, _ in out] == [(120, 40), (100, 30), (140, 50)]
    return out


# --- state dirs and their bootstraps, from tables ------------------------------------------------

NOW = 1_764_513_120.0  # 2025-11-30 14:32 UTC: the clock of the bootstrap tables
GOOD_LINE = (
    "[2026-11-30 14:32] [arch] decision: use one cache_manager | why: because x so y "
    "| files: src/cache.py | snapshot: snapshot-014 | alternatives: keep raw redis calls"
)


def entry(path: str, **kw: Any) -> LayoutFile:
    """A layout's ``LayoutFile`` for ``path``."""
    return LayoutFile(path=path, **kw)


def make_dir(root: Path, files: dict[str, str | bytes]) -> Path:
    """A workdir ``root`` with ``files`` written under ``root/.agent``."""
    state = root / ".agent"
    state.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        p = state / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    return state


def boot(
    root: Path,
    files: dict[str, str | bytes] | None = None,
    layout: list[LayoutFile] | None = None,
    **kw: Any,
) -> Bootstrap:
    """The ``Bootstrap`` rendered for a state dir of ``files`` (the agentd layout
    unless ``layout``), at ``NOW``."""
    state = make_dir(root, files or {})
    ctx = BootstrapContext(
        unit=kw.pop("unit", "shop"),
        session=kw.pop("session", 2),
        last_reason=kw.pop("last_reason", "exit:42"),
        state_dir=state,
        workdir=root,
        layout=layout if layout is not None else resolve("agentd"),
        budget_tokens=kw.pop("budget_tokens", 3000),
        now=NOW,
        **kw,
    )
    return render(ctx)


def git(root: Path, *args: str) -> str:
    """``git -C root ARGS`` as a throwaway identity; its stdout."""
    config = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    return subprocess.run(
        ["git", "-C", str(root), *config, *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


class Tmux:
    """A private tmux server with one window of ``cols`` x ``rows``; call it with a
    tmux command, get its stdout."""

    def __init__(self, cols: int, rows: int, env: dict[str, str] | None = None) -> None:
        self.workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"tm{os.getpid()}-{time.time_ns()}"
        self.workdir.mkdir()
        self.socket = self.workdir / "s"
        self.env = dict(os.environ, **(env or {}))
        self.env.pop("TMUX", None)
        self(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            str(cols),
            "-y",
            str(rows),
            "exec sleep 600",
        )

    def __call__(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(self.socket), *args],
            capture_output=True,
            text=True,
            timeout=15,
            env=self.env,
            stdin=subprocess.DEVNULL,
        )
        return done.stdout.rstrip("\n")

    def __enter__(self) -> tuple[Tmux, Path]:
        return self, self.workdir

    def __exit__(self, *exc: object) -> None:
        self("kill-server")
        shutil.rmtree(self.workdir, ignore_errors=True)


def agentctl(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real agentctl (``python -m agentd.cli.agentctl``) with AGENTD_HOME=home."""
    return subprocess.run(
        [sys.executable, "-m", "agentd.cli.agentctl", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, AGENTD_HOME=str(home)),
        stdin=subprocess.DEVNULL,
    )
