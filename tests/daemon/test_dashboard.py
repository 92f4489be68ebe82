"""The dashboard (``agentd serve --http``) without a browser: its pure parts from
tables (the timeline, who may bind and ask, the token), then the real daemon
over HTTP (tokens, cookies, CSRF, the SVG, live events, ``agentctl dashboard``).
The browser tests are in ``test_dashboard_browser``."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from agentd.daemon.control.commands import Context
from agentd.daemon.dashboard.access import (
    TOKEN_FILE,
    Bind,
    BindRefused,
    csrf_token,
    load_token,
    peer_allowed,
)
from agentd.daemon.dashboard.timeline import COLOURS, MIN_BAR, layout
from agentd.events import EventLog
from agentd.paths import Paths
from agentd.supervisor.api import Supervisor
from tests.support import QUICK, Served, agentd, dashboard_daemon, fake, poll_for, write_unit

NOW = 1_800_000_000.0


def at(seconds_ago: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - seconds_ago))


def row(
    n: int,
    start: float,
    end: float | None,
    outcome: str | None,
    reason: str | None,
    started_by: str = "start",
    **more: Any,
) -> dict[str, Any]:
    """A session row as ``agentd.supervisor.records.history.sessions`` makes them."""
    out = {
        "session": n,
        "started_at": at(start),
        "started_by": started_by,
        "outcome": outcome,
        "reason": reason,
        "duration_s": None if end is None else start - end,
        **more,
    }
    if end is not None:
        out["ended_at"] = at(end)
    return out


RUN = [
    row(1, 7200, 6000, "handoff", "exit:42"),
    row(2, 6000, 5000, "context", "sentinel:compaction", started_by="exit:42"),
    row(3, 4000, 3000, "usage-limited", "sentinel:limit", started_by="manual", reset_at=at(2500)),
    row(4, 2400, 1800, "crashed", "exit:1", started_by="usage-limited"),
    row(5, 1200, None, None, None, started_by="exit:1"),
]


# --- the timeline, from tables -----------------------------------------------------------------


def test_the_whole_run_has_one_bar_per_session_coloured_by_outcome() -> None:
    line = layout(RUN, NOW, "all", running=5)
    assert [(b.session, b.outcome) for b in line.bars] == [
        (1, "handoff"),
        (2, "context"),
        (3, "usage-limited"),
        (4, "crashed"),
        (5, "running"),
    ]
    assert all(b.colour == COLOURS[b.outcome] for b in line.bars)
    assert line.start == NOW - 7200 and line.end == NOW
    assert line.bars[0].x == pytest.approx(10.0)
    assert line.bars[-1].x + line.bars[-1].width == pytest.approx(990.0)  # running: up to now
    assert [b.x for b in line.bars] == sorted(b.x for b in line.bars)
    assert "session 2: context (sentinel:compaction), 16m40s" in line.bars[1].title
    assert line.bars[4].title.startswith("session 5: running for 20m00s")
    assert [name for name, _ in line.legend] == [
        "running",
        "handoff",
        "context",
        "usage-limited",
        "crashed",
    ]


def test_marks_for_sentinels_restarts_and_pauses() -> None:
    marks = layout(RUN, NOW, "all", running=5).marks
    kinds = [(m.kind, m.title) for m in marks]
    assert ("sentinel", "session 2 ended on sentinel:compaction") in kinds
    assert ("sentinel", "session 3 ended on sentinel:limit") in kinds
    assert ("restart", "session 3 began: restart after manual") in kinds
    assert sum(kind == "restart" for kind, _ in kinds) == 4  # every session but the first
    pause = next(m for m in marks if m.kind == "pause")
    assert pause.title.startswith("paused (usage-limited) until ")
    line = layout(RUN, NOW, "all", running=5)
    assert pause.x == pytest.approx(line.x(NOW - 3000))  # from the end of session 3
    assert pause.x + pause.width == pytest.approx(line.x(NOW - 2500))  # to its reset time


def test_zoom_shows_the_last_hour_only() -> None:
    line = layout(RUN, NOW, "1h", running=5)
    assert [b.session for b in line.bars] == [3, 4, 5]  # 3 ended 50 minutes ago
    assert line.start == NOW - 3600 and line.bars[0].x == pytest.approx(10.0)  # cut at the edge
    assert all(":" in t.label for t in line.ticks) and 2 <= len(line.ticks) <= 10


def test_a_session_with_no_end_and_a_paused_unit() -> None:
    lost = [row(1, 600, None, None, None)]  # agentd was killed: no end recorded
    line = layout(
        lost,
        NOW,
        "all",
        paused={
            "since": at(300),
            "paused_until": at(-600),
            "last_reason": "budget:max_sessions_per_day",
        },
    )
    assert [(b.outcome, b.width) for b in line.bars] == [("unknown", MIN_BAR)]
    assert "no end recorded" in line.bars[0].title
    assert [m.title.split(" until")[0] for m in line.marks if m.kind == "pause"] == [
        "paused (budget:max_sessions_per_day)"
    ]
    assert layout([], NOW, "all").bars == []
    with pytest.raises(ValueError, match="span must be one of"):
        layout(RUN, NOW, "2h")


# --- who may bind and ask ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [
        ("127.0.0.1:8765", "127.0.0.1", 8765),
        ("[::1]:0", "::1", 0),
        ("localhost:80", "localhost", 80),
        ("127.9.9.9:1", "127.9.9.9", 1),
    ],
)
def test_loopback_binds_are_accepted(text: str, host: str, port: int) -> None:
    bind = Bind.parse(text)
    assert (bind.host, bind.port, bind.allow_remote) == (host, port, False)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("0.0.0.0:8765", "would serve other machines (0.0.0.0)"),
        (":8765", "would serve other machines (every address)"),
        ("[::]:8765", "would serve other machines (::)"),
        ("192.0.2.7:80", "would serve other machines (192.0.2.7)"),
        ("8765", "give HOST:PORT"),
        ("127.0.0.1:99999", "give HOST:PORT"),
        ("127.0.0.1", "HOST:PORT"),
    ],
)
def test_other_binds_are_refused_without_allow_remote(text: str, says: str) -> None:
    with pytest.raises(BindRefused, match=re.escape(says)):
        Bind.parse(text)


def test_allow_remote_lets_any_address_bind() -> None:
    assert Bind.parse("0.0.0.0:8765", allow_remote=True).url() == "http://0.0.0.0:8765/"
    assert Bind.parse("[::1]:9", allow_remote=True).url(1234) == "http://[::1]:1234/"


@pytest.mark.parametrize(
    ("remote", "served"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("10.0.0.5", False),
        ("192.168.1.20", False),
        ("::ffff:192.168.1.20", False),
        ("2001:db8::1", False),
        ("fe80::1%eth0", False),
        (None, False),
        ("not-an-address", False),
    ],
)
def test_only_loopback_peers_are_served_unless_allowed(remote: str | None, served: bool) -> None:
    assert peer_allowed(remote, allow_remote=False) is served
    assert peer_allowed(remote, allow_remote=True) is True


def test_the_token_file_is_0600_kept_and_replaced_when_unsafe(tmp_path: Path) -> None:
    token = load_token(tmp_path)
    path = tmp_path / TOKEN_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and len(token) >= 40
    assert load_token(tmp_path) == token  # kept across daemon restarts
    path.chmod(0o644)  # others could have read it: a new one
    fresh = load_token(tmp_path)
    assert fresh != token and stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text("short\n")
    assert load_token(tmp_path) not in ("short", fresh)
    assert csrf_token(fresh) == csrf_token(fresh) != csrf_token(token)


def test_a_request_from_another_machine_is_refused_before_the_token(tmp_path: Path) -> None:
    """The guard in front of every page, with a request from a non-loopback peer (a
    real one cannot reach a loopback bind, and this machine's other addresses are off
    limits to tests)."""
    from agentd.daemon.dashboard.server import Dashboard

    async def check() -> None:
        sup = Supervisor(Paths.resolve(tmp_path / "home"), EventLog())

        async def reload(_why: str) -> dict[str, Any]:
            return {}

        board = Dashboard(Context(sup, reload), Bind.parse("127.0.0.1:0"))
        guard = board._guard()
        served = mock.AsyncMock(return_value=web.Response(text="the page"))
        for remote, token, status in [
            ("10.1.2.3", board.token, 403),
            ("127.0.0.1", "wrong", 401),
            ("127.0.0.1", board.token, 200),
        ]:
            transport = mock.Mock()
            transport.get_extra_info.side_effect = lambda key, default=None, r=remote: (
                (r, 40000) if key == "peername" else default
            )
            request = make_mocked_request(
                "GET",
                "/",
                headers={"Authorization": f"Bearer {token}", "Host": "127.0.0.1:0"},
                transport=transport,
            )
            try:
                answer = await guard(request, served)
            except web.HTTPException as exc:
                answer = exc
            assert answer.status == status, (remote, token)
        assert served.await_count == 1

    asyncio.run(check())


# --- the real daemon over HTTP -------------------------------------------------------------------


@pytest.mark.slow
def test_every_request_needs_the_token_and_a_post_its_csrf(
    dhome: Path, serve: list[Served]
) -> None:
    write_unit(dhome, "w", {"command": fake("out:hello", "wait")})
    d, site = dashboard_daemon(dhome, serve)
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", site.url)
    assert stat.S_IMODE((dhome / "run" / TOKEN_FILE).stat().st_mode) == 0o600
    assert "agentd: dashboard at " + site.url in d.stderr
    assert site.token not in d.stderr  # logs are read by others (journald): no token in them
    for path in (
        "/",
        "/units/w",
        "/units/w/timeline.svg",
        "/static/dashboard.css",
        "/events",
        "/nope",
    ):
        code, head, body = site.get(path, token=False)
        assert code == 401, path
        assert "needs its token" in body and head["WWW-Authenticate"].startswith("Bearer")
    assert site.get("/", token=False, headers={"Authorization": "Bearer nope"})[0] == 401
    code, head, body = site.get("/")
    assert code == 200 and 'href="/units/w"' in body
    assert "default-src 'none'" in head["Content-Security-Policy"]
    assert head["X-Frame-Options"] == "DENY" and head["Referrer-Policy"] == "no-referrer"
    # ?token= sets a session cookie (not the token) that serves the next requests
    code, head, _ = site.get(f"/?token={site.token}", token=False)
    cookie = head["Set-Cookie"].split(";")[0]
    assert code == 200 and cookie.startswith(f"agentd-{site.port}=")
    assert site.token not in head["Set-Cookie"]
    assert "HttpOnly" in head["Set-Cookie"] and "SameSite=Strict" in head["Set-Cookie"]
    assert site.get("/units/w", token=False, headers={"Cookie": cookie})[0] == 200
    # state changes: POST only, and only with the CSRF token of the pages. The unit is
    # running first (on loaded cores it may still be starting), so "still running" after
    # the refused stops says they were refused.
    poll_for(lambda: d.status("w")["state"] == "running", timeout=30, what="w running")
    assert site.get("/units/w/stop", data={})[0] == 403
    assert site.get("/units/w/stop", data={"csrf": "forged"})[0] == 403
    assert site.get("/units/w/stop", token=False, data={"csrf": csrf_token(site.token)})[0] == 401
    assert d.status("w")["state"] == "running"
    code, _, body = site.get("/units/w/stop", data={"csrf": csrf_token(site.token)})
    assert code == 200 and '<span class="state s-stopped">stopped</span>' in body  # redirected
    assert d.status("w")["state"] == "stopped"
    assert site.get("/units/ghost")[0] == 404 and site.get("/units/w?span=2h")[0] == 400


@pytest.mark.slow
def test_the_unit_page_svg_screen_and_bootstraps(dhome: Path, serve: list[Served]) -> None:
    write_unit(
        dhome,
        "t",
        {
            "command": fake(
                "out:step one",
                "if-session:2:out:Compacting conversation",
                "if-session:2:wait",
                "if-session:3:exit:0",
                "exit:42",
            ),
            "sentinels": [
                {"name": "compaction", "match": "Compacting conversation", "action": "restart"}
            ],
            "restart": {**QUICK, "exit_codes": [42], "max_sessions": 3},
        },
    )
    d, site = dashboard_daemon(dhome, serve)
    poll_for(lambda: d.status("t")["state"] == "done", timeout=30, what="three sessions")
    code, head, svg = site.get("/units/t/timeline.svg")
    assert code == 200 and head["Content-Type"].startswith("image/svg+xml")
    rects = re.findall(
        r'<rect class="session o-([\w-]+)" data-session="(\d+)".*?fill="(#\w+)"'
        r".*?<title>(.*?)</title>",
        svg,
    )
    assert [(o, n) for o, n, _, _ in rects] == [("handoff", "1"), ("context", "2"), ("done", "3")]
    assert all(fill == COLOURS[o] for o, _, fill, _ in rects)
    assert rects[1][3].startswith("session 2: context (sentinel:compaction), ")
    assert svg.count("<rect") == 3
    code, _, page = site.get("/units/t?span=1h")
    assert code == 200 and "<b>1h</b>" in page and page.count('<rect class="session') == 3
    assert '<pre id="screen" class="screen' in page and "step one" in page
    code, head, boot = site.get("/units/t/bootstraps/2")
    assert code == 200 and boot.startswith("# agentd bootstrap: t, session 2")
    assert head["Content-Type"].startswith("text/plain")
    assert site.get("/units/t/bootstraps/9")[0] == 404
    assert site.get("/units/t/bootstraps/next")[2].startswith("# agentd bootstrap: t, session 4")
    screen = json.loads(site.get("/units/t/screen")[2])
    assert screen["session"] == 3 and "step one" in screen["rows"]
    assert site.get("/static/dashboard.js")[1]["Content-Type"].startswith("text/javascript")


@pytest.mark.slow
def test_live_events_stream_until_the_daemon_stops(dhome: Path, serve: list[Served]) -> None:
    write_unit(dhome, "e", {"command": fake("out:hi", "wait"), "autostart": False})
    d, site = dashboard_daemon(dhome, serve)
    conn = http.client.HTTPConnection("127.0.0.1", site.port, timeout=20)
    conn.request("GET", "/units/e/events", headers={"Authorization": f"Bearer {site.token}"})
    answer = conn.getresponse()
    assert answer.status == 200 and answer.getheader("Content-Type") == "text/event-stream"
    assert answer.readline() == b"retry: 3000\n"
    d.result("start", units=["e"])
    seen: list[str] = []
    while "session.start" not in seen:
        line = answer.readline().decode()
        if line.startswith("data: "):
            event = json.loads(line[6:])
            assert event["unit"] == "e"
            seen.append(event["event"])
    d.kill(signal.SIGTERM)
    rest = answer.read().decode()  # the daemon ends the stream, then the connection
    assert 'event: end\ndata: "daemon stopping"' in rest
    conn.close()
    assert d.stop() == 0


@pytest.mark.slow
def test_agentctl_dashboard_prints_the_link(dhome: Path, serve: list[Served]) -> None:
    env = {**os.environ, "AGENTD_HOME": str(dhome)}
    ctl = [sys.executable, "-m", "agentd.cli.agentctl", "dashboard"]
    d = Served(dhome)  # no --http: it says how to get one
    serve.append(d.ready())
    done = subprocess.run(ctl, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "agentd serve --http 127.0.0.1:8765" in done.stderr
    assert d.stop() == 0
    _, site = dashboard_daemon(dhome, serve)
    done = subprocess.run(ctl, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout == f"{site.url}?token={site.token}\n"
    assert site.get(f"/?token={site.token}", token=False)[0] == 200


@pytest.mark.slow
def test_a_wide_bind_is_refused_unless_allowed(dhome: Path, serve: list[Served]) -> None:
    done = agentd(dhome, "serve", "--http", "0.0.0.0:0")
    assert done.returncode == 1
    assert "would serve other machines (0.0.0.0)" in done.stderr
    assert "--http-allow-remote" in done.stderr and not (dhome / "run" / "agentd.sock").exists()
    d, site = dashboard_daemon(dhome, serve, "--http-allow-remote")  # still loopback here
    assert site.get("/", token=False)[0] == 401 and site.get("/")[0] == 200
    assert d.stop() == 0


def test_the_daemon_without_http_loads_no_web_stack() -> None:
    code = (
        "import sys, agentd.cli.agentd.main, agentd.daemon.serve; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aiohttp', 'jinja2') "
        "or m.startswith('agentd.daemon.dashboard')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "[]\n", done.stderr
