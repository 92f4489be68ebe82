"""The dashboard against hostile peers and input (issue 27): invalid unit files, the
port's caps and deadlines, DNS rebinding, the session cookie, slow live-event readers,
and other local users (a second uid: CI runs as root and can `useradd`)."""

from __future__ import annotations

import http.client
import os
import pwd
import resource
import select
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest

from agentd.daemon.control.connections import WRITE_DEADLINE
from agentd.daemon.control.server import LISTEN_BACKLOG
from agentd.daemon.dashboard.gate import REQUEST_DEADLINE
from tests.support import (
    Served,
    StatusWatch,
    Web,
    dashboard_daemon,
    events,
    fake,
    poll_for,
    write_unit,
)


def test_one_invalid_unit_file_does_not_make_the_pages_answer_500(
    dhome: Path, serve: list[Served]
) -> None:
    write_unit(dhome, "good", {"command": fake("wait"), "autostart": False})
    bad = dhome / "units" / "bad.yaml"
    bad.write_text(f"workdir: {dhome / 'work'}\ncommand: [true]\nrestart: {{exit_code: [42]}}\n")
    bad.chmod(0o600)
    _, site = dashboard_daemon(dhome, serve)
    code, _, page = site.get("/")
    assert code == 200, page
    assert 'href="/units/good"' in page and 'href="/units/bad"' in page
    assert "exit_code" in page  # what is wrong with it, as agentctl status says
    code, _, page = site.get("/units/bad")
    assert code == 200, page
    assert "invalid" in page and "exit_code" in page
    assert site.get("/units/bad/timeline.svg")[0] == 200
    assert site.get("/units/bad/screen")[0] == 404
    assert site.get("/units/bad/bootstraps/next")[0] == 404
    assert site.get("/units/bad/bootstraps/1")[0] == 404


# --- a second local user -------------------------------------------------------------------

PROBE_USER = "agentd-probe"


@pytest.fixture(scope="session")
def other_user() -> tuple[int, int, str]:
    """(uid, gid, python) of a second local user, created once (idempotently); skips
    loudly where that cannot be done (not root, no useradd, no python it may run)."""
    if os.geteuid() != 0:
        pytest.skip("acting as a second local user needs root (CI runs as root)")
    try:
        entry = pwd.getpwnam(PROBE_USER)
    except KeyError:
        if shutil.which("useradd") is None:
            pytest.skip("useradd is not available here: cannot make a second local user")
        done = subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/bin/false", PROBE_USER],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode not in (0, 9):  # 9: made meanwhile by another run
            pytest.skip(f"useradd {PROBE_USER} failed: {done.stderr.strip()}")
        entry = pwd.getpwnam(PROBE_USER)
    for python in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        try:
            if python and as_user(entry.pw_uid, entry.pw_gid, python, "pass").returncode == 0:
                return entry.pw_uid, entry.pw_gid, python
        except PermissionError:
            continue  # under a directory only root may enter (/root/.pyenv...)
    pytest.skip(f"no python that {PROBE_USER} may run (the venv's is under /root?)")


def as_user(
    uid: int, gid: int, python: str, code: str, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-c", code, *args],
        user=uid,
        group=gid,
        extra_groups=[],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
    )


def popen_as(user: tuple[int, int, str], code: str, *args: str) -> subprocess.Popen[str]:
    uid, gid, python = user
    return subprocess.Popen(
        [python, "-c", code, *args],
        user=uid,
        group=gid,
        extra_groups=[],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
    )


# Opens N TCP connections to PORT and sends each the first line of a request (or
# nothing), retrying while the backlog is full; prints how many stayed open after
# HOLD seconds, then holds them until its stdin closes.
TCP_FLOOD = r"""
import resource, socket, sys, time
port, n, first, hold = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode(), float(sys.argv[4])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
held = []
for _ in range(n):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
        if first:
            s.sendall(first)
        held.append(s)
    except OSError:
        s.close()
time.sleep(hold)
alive = 0
for s in held:
    s.setblocking(False)
    try:
        s.recv(1, socket.MSG_PEEK)  # data (a 503), EOF or a reset: closed by the far end
    except BlockingIOError:
        alive += 1  # nothing yet: still open
    except OSError:
        pass
print(len(held), alive, flush=True)
sys.stdin.read()
"""


class Limited(Served):
    """``agentd serve --http`` with a hard fd limit of ``fds`` (as a small systemd service)."""

    def __init__(self, home: Path, fds: int) -> None:
        self.home = home
        self.socket = home / "run" / "agentd.sock"
        self.err_path = home / f"serve-{time.monotonic_ns()}.err"
        with self.err_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "agentd.cli", "serve", "--http", "127.0.0.1:0"],
                env=dict(os.environ, AGENTD_HOME=str(home)),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (fds, fds)),
            )


def stop(proc: subprocess.Popen[str]) -> None:
    """End a helper that holds connections until its stdin closes (killed if it hangs)."""
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("first", ["", "GET / HTTP/1.1\r\n"])  # idle, and half-sent (slowloris)
def test_a_tcp_flood_from_another_user_is_capped_and_closed(
    dhome: Path, serve: list[Served], other_user: tuple[int, int, str], first: str
) -> None:
    """3,000 connections to the dashboard's port from another uid, without the token:
    they took every fd (the socket's caps did not apply), `status` timed out; now that
    uid gets its share, the owner is served, and each is closed within the deadline."""
    write_unit(dhome, "w", {"command": fake("wait")})
    d = Limited(dhome, 1024).ready()
    serve.append(d)
    site = Web(d)
    baseline = fds(d.proc.pid)
    flood = popen_as(other_user, TCP_FLOOD, str(site.port), "3000", first, "1")
    assert flood.stdin is not None and flood.stdout is not None
    try:
        with StatusWatch(d.socket) as watch:
            while not select.select([flood.stdout], [], [], 0)[0]:
                assert site.get("/")[0] == 200  # the owner's browser, all along
                # the caps (256 at this fd limit), and those being refused (a backlog's)
                assert fds(d.proc.pid) <= baseline + 256 + LISTEN_BACKLOG + 16
            made, alive = map(int, flood.stdout.readline().split())
            assert made > 1000  # the flood got through the backlog: it was answered, not stuck
            assert alive <= 192  # its uid's share of a 1024-fd daemon (3/4 of its 256)
            poll_for(  # no complete request within the deadline: closed
                lambda: fds(d.proc.pid) <= baseline + 4,
                timeout=REQUEST_DEADLINE + 10,
                what="the flood's connections closed by the deadline",
            )
            assert site.get("/")[0] == 200
        watch.check()
    finally:
        stop(flood)
    assert d.stop() == 0
    said = events(dhome, "daemon.error")
    assert len(said) <= 2, said[:3]  # no storm of accept errors
    assert len(events(dhome, "control.refused")) <= 3


def test_a_half_sent_request_is_closed_within_the_deadline(
    dhome: Path, serve: list[Served]
) -> None:
    _, site = dashboard_daemon(dhome, serve)
    with socket.create_connection(("127.0.0.1", site.port), timeout=30) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and nothing more
        started = time.monotonic()
        assert s.recv(4096) == b""  # closed by the server (a recv timeout raises instead)
        assert time.monotonic() - started < REQUEST_DEADLINE + 10
    with socket.create_connection(("127.0.0.1", site.port), timeout=30) as s:
        assert s.recv(4096) == b""  # nothing sent at all: closed too


@pytest.mark.parametrize(
    ("host", "code"),
    [
        ("evil.example:{port}", 421),  # DNS rebinding: a name of the attacker's, our address
        ("127.0.0.1:1", 421),  # another port
        ("127.0.0.1:{port}", 200),
        ("localhost:{port}", 200),
        ("[::1]:{port}", 200),
    ],
)
def test_a_request_for_another_host_is_refused(
    dhome: Path, serve: list[Served], host: str, code: int
) -> None:
    _, site = dashboard_daemon(dhome, serve)
    assert site.get("/", headers={"Host": host.format(port=site.port)})[0] == code


COOKIE_GET = r"""
import http.client, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
conn.request("GET", "/", headers={"Cookie": sys.argv[2]})
print(conn.getresponse().status)
"""


def test_the_session_cookie_is_not_the_token_and_opens_nothing_for_another_uid(
    dhome: Path, serve: list[Served], other_user: tuple[int, int, str]
) -> None:
    """Browsers send a 127.0.0.1 cookie to every port of it: another user's local server
    received it, and it was the token. Now it is a session bound to the owner's uid."""
    _, site = dashboard_daemon(dhome, serve)
    code, head, _ = site.get(f"/?token={site.token}", token=False)
    assert code == 200
    set_cookie = head["Set-Cookie"]
    cookie = set_cookie.split(";")[0]
    assert site.token not in set_cookie
    attributes = {a.strip().split("=")[0].lower() for a in set_cookie.split(";")[1:]}
    assert {"path", "httponly", "samesite", "max-age"} <= attributes
    assert "SameSite=Strict" in set_cookie and "Path=/" in set_cookie
    assert site.get("/", token=False, headers={"Cookie": cookie})[0] == 200
    uid, gid, python = other_user
    stolen = as_user(uid, gid, python, COOKIE_GET, str(site.port), cookie)
    assert stolen.stdout.strip() == "401", stolen.stderr
    forged = cookie.split("=", 1)[0] + "=s1.99999999999.deadbeef"
    assert site.get("/", token=False, headers={"Cookie": forged})[0] == 401


BROWSER = r"""#!/bin/sh
printf '%s\n' "$@" >> "$BROWSER_ARGV"
"""
LOGIN = r"""
import http.client, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
conn.request("GET", sys.argv[2])
print(conn.getresponse().status)
"""


def login(port: int, path: str) -> tuple[int, str]:
    """GET a login link as a browser would: its status and the cookie it set."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path)
    answer = conn.getresponse()
    answer.read()
    conn.close()
    return answer.status, (answer.getheader("Set-Cookie") or "").split(";")[0]


def test_dashboard_open_puts_no_token_on_a_command_line(
    dhome: Path, serve: list[Served], other_user: tuple[int, int, str], tmp_path: Path
) -> None:
    """`agentctl dashboard --open` put the token on the browser's command line, which
    every user reads with `ps`; now a one-time code for this uid goes there."""
    _, site = dashboard_daemon(dhome, serve)
    browser, argv = tmp_path / "browser", tmp_path / "argv"
    browser.write_text(BROWSER)
    browser.chmod(0o755)
    env = {
        **os.environ,
        "AGENTD_HOME": str(dhome),
        "BROWSER": str(browser),
        "BROWSER_ARGV": str(argv),
    }
    ctl = [sys.executable, "-m", "agentd.cli.agentctl", "dashboard", "--open"]

    def opened() -> str:
        done = subprocess.run(ctl, env=env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"{site.url}?token={site.token}\n"  # to its user, on stdout
        url = argv.read_text().split()[-1]
        assert site.token not in url and "/login?code=" in url
        return urllib.parse.urlsplit(url)._replace(scheme="", netloc="").geturl()

    path = opened()
    status, cookie = login(site.port, path)
    assert status == 303 and cookie
    assert site.get("/", token=False, headers={"Cookie": cookie})[0] == 200
    assert login(site.port, path)[0] == 401  # once only
    uid, gid, python = other_user
    theirs = as_user(uid, gid, python, LOGIN, str(site.port), opened())
    assert theirs.stdout.strip() == "401", theirs.stderr  # read from `ps` by another user


SSE_HOLD = r"""
import socket, sys
port, token, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
held = []
for _ in range(n):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and never reads
    s.connect(("127.0.0.1", port))
    head = f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}"
    s.sendall(head.encode() + b"\r\n\r\n")
    held.append(s)
print("held", flush=True)
sys.stdin.read()
"""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def stream_status(port: int, token: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/events", headers={"Authorization": f"Bearer {token}"})
    status = conn.getresponse().status
    conn.close()
    return status


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_live_event_readers_that_stop_reading_are_dropped(dhome: Path, serve: list[Served]) -> None:
    """64 of them took every slot (503 for everyone else) and ~180 MB of RSS."""
    write_unit(
        dhome,
        "spam",
        {
            "command": fake("spam:60000", "wait"),
            "sentinels": [
                {"name": "line", "match": r"tool output line (?P<n>\d+)", "action": "ignore"}
            ],
            "inject": {"mode": "none"},
            "autostart": False,
        },
    )
    d, site = dashboard_daemon(dhome, serve)
    before = rss_mb(d.proc.pid)
    holder = subprocess.Popen(
        [sys.executable, "-c", SSE_HOLD, str(site.port), site.token, "64"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "held"
        poll_for(
            lambda: stream_status(site.port, site.token) == 503,
            timeout=10,
            what="the 64 silent readers to take every slot",
        )
        d.result("start", units=["spam"])
        poll_for(  # their writes stall, then the deadline drops them: room again
            lambda: stream_status(site.port, site.token) == 200,
            timeout=WRITE_DEADLINE + 60,
            interval=0.5,
            what="a slot for a reader that reads",
        )
        assert rss_mb(d.proc.pid) - before < 60, (before, rss_mb(d.proc.pid))
    finally:
        stop(holder)
    assert d.stop() == 0
