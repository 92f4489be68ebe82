"""`agentd serve` end to end: real daemon processes, the real control socket.

Homes live in short /tmp directories (AF_UNIX paths are limited to ~107
bytes); every wait is bounded; every daemon is stopped by its PID.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import stat
import time
from pathlib import Path

import pytest

from tests.support import (
    QUICK,
    Served,
    async_poll_for,
    events,
    fake,
    gone,
    poll_for,
    records,
    write_unit,
)


def _said(home: Path, unit: str, line: str) -> bool:
    """Whether the unit's transcript has a line that ends in ``line`` (the agent got that
    far). Ends in, not is: under load the terminal's echo of the bootstrap typed into the
    session may be processed while the agent prints, and begin the same line."""
    path = home / "logs" / unit / "transcript.log"
    text = path.read_text(errors="replace") if path.exists() else ""
    return re.search(rf"(?m){re.escape(line)}$", text) is not None


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


# --- start, stop, single instance ------------------------------------------------------------


@pytest.mark.slow
def test_bare_agentd_serves_autostarts_and_sigterm_stops_every_tree(
    dhome: Path, serve: list[Served]
) -> None:
    pids = dhome / "pids"
    write_unit(
        dhome,
        "a",
        {
            "command": fake("child", "out:up", "wait"),
            "env": {"FAKE_PIDS": str(pids)},
            "stop": {"grace": "300ms"},
        },
    )
    write_unit(dhome, "b", {"command": fake("wait"), "autostart": False})
    d = Served(dhome, args=())  # bare `agentd` is `agentd serve`
    serve.append(d.ready())
    poll_for(
        lambda: d.status("a")["state"] == "running" and len(_pids(pids)) == 1,
        what="unit a running with its child",
    )
    assert d.status("b")["state"] == "stopped"
    leader, child = d.status("a")["pid"], _pids(pids)[0]
    loaded = {e["unit"]: e for e in events(dhome, "unit.loaded")}
    assert set(loaded) == {"a", "b"} and loaded["a"]["file"].endswith("units/a.yaml")
    [start] = events(dhome, "daemon.start")
    assert start["pid"] == d.proc.pid and start["socket"] == str(d.socket)
    assert d.stop() == 0
    assert gone(leader) and gone(child)  # the child ignored SIGTERM: killed after grace
    assert events(dhome, "daemon.stop")
    assert not d.socket.exists()
    assert "SIGTERM" in d.stderr


@pytest.mark.slow
def test_sigint_stops_too_and_a_second_one_kills_at_once(dhome: Path, serve: list[Served]) -> None:
    write_unit(
        dhome,
        "slow",
        {"command": fake("ignore-term", "out:ignoring-term", "wait"), "stop": {"grace": "30s"}},
    )
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: _said(dhome, "slow", "ignoring-term"), what="the agent to ignore SIGTERM")
    pid = d.status("slow")["pid"]
    d.kill(signal.SIGINT)
    poll_for(lambda: events(dhome, "session.kill"), what="the stop signal")
    assert d.stop(signal.SIGINT) == 0, d.stderr  # (30 s to stop: the grace is as long)
    # the second SIGINT killed the session's processes itself, not the grace's end
    killed = re.search(r"agentd: killed \[([\d, ]+)\]", d.stderr)
    assert killed and str(pid) in killed[1].split(", "), d.stderr
    assert [e["signal"] for e in events(dhome, "session.exit")] == ["KILL"]
    assert gone(pid)


@pytest.mark.slow
def test_a_second_serve_refuses_naming_pid_and_socket(dhome: Path, serve: list[Served]) -> None:
    first = Served(dhome)
    serve.append(first.ready())
    second = Served(dhome)
    assert second.proc.wait(15) == 1
    assert str(first.proc.pid) in second.stderr and str(first.socket) in second.stderr
    assert first.result("ping")["pid"] == first.proc.pid  # the first one is unharmed


@pytest.mark.slow
def test_socket_is_0600_in_a_0700_dir_and_a_stale_one_is_replaced(
    dhome: Path, serve: list[Served]
) -> None:
    run = dhome / "run"
    run.mkdir(mode=0o755)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(run / "agentd.sock"))  # a dead daemon's socket: nobody listens
    stale.close()
    d = Served(dhome)
    serve.append(d.ready())
    assert stat.S_IMODE(os.stat(d.socket).st_mode) == 0o600
    assert stat.S_ISSOCK(os.stat(d.socket).st_mode)
    assert stat.S_IMODE(os.stat(run).st_mode) == 0o700


@pytest.mark.slow
def test_a_socket_path_too_long_is_a_clear_error(dhome: Path) -> None:
    long = dhome / ("x" * 120) / "agentd.sock"
    d = Served(dhome, env={"AGENTD_SOCKET": str(long)})
    assert d.proc.wait(15) == 1
    assert "too long" in d.stderr and str(long) in d.stderr


@pytest.mark.slow
def test_a_regular_file_at_the_socket_path_is_left_alone(dhome: Path) -> None:
    (dhome / "run").mkdir(mode=0o700)
    (dhome / "run" / "agentd.sock").write_text("mine")
    d = Served(dhome)
    assert d.proc.wait(15) == 1
    assert "not a socket" in d.stderr
    assert (dhome / "run" / "agentd.sock").read_text() == "mine"


# --- kill -9 recovery (SPEC 10) -------------------------------------------------------------


@pytest.mark.slow
def test_after_kill_9_a_new_serve_reclaims_sessions_and_keeps_counts(
    dhome: Path, serve: list[Served]
) -> None:
    pids = dhome / "pids"
    write_unit(
        dhome,
        "k",
        {
            "command": fake("orphan", "wait"),
            "env": {"FAKE_PIDS": str(pids)},
            "stop": {"grace": "300ms"},
        },
    )
    # ignores SIGHUP: survives the hangup of its pty when agentd dies
    write_unit(
        dhome,
        "m",
        {
            "command": fake("ignore-term", "out:ignoring-term", "wait"),
            "autostart": False,
            "state": {"dir": ".agent-m"},  # two units may not share one
            "stop": {"grace": "300ms"},
        },
    )
    first = Served(dhome)
    serve.append(first.ready())
    first.result("start", units=["m"])
    poll_for(lambda: _pids(pids) and _said(dhome, "m", "ignoring-term"), what="k and m running")
    orphan, leader_m = _pids(pids)[0], first.status("m")["pid"]
    first.stop(signal.SIGKILL)
    assert not gone(orphan) and not gone(leader_m)  # agentd died hard: its sessions live on
    pids.unlink()

    second = Served(dhome)
    serve.append(second.ready())
    # m is not autostart, yet what the killed daemon left of it is ended too
    for pid in (orphan, leader_m):
        poll_for(lambda pid=pid: gone(pid), what=f"pid {pid} left by the killed agentd")
    poll_for(lambda: second.status("k")["state"] == "running", what="k running again")
    assert second.status("k")["session"] == 2  # the count survives
    poll_for(
        lambda: second.status("m")["last_reason"] == "agentd-lost",
        what="m's left-over session to be recorded as lost",
    )
    assert second.status("m")["state"] == "stopped" and second.status("m")["session"] == 1
    killed = {e["unit"] for e in events(dhome, "session.orphan_killed")}
    assert killed >= {"k", "m"}
    hist = records(dhome / "logs" / "k" / "history.jsonl")
    assert [(r["kind"], r["session"]) for r in hist][:3] == [("start", 1), ("end", 1), ("start", 2)]
    assert hist[1]["reason"] == "agentd-lost"
    assert second.stop() == 0


# --- the units dir ----------------------------------------------------------------------------


@pytest.mark.slow
def test_units_dir_changes_are_picked_up_by_themselves(dhome: Path, serve: list[Served]) -> None:
    d = Served(dhome)
    serve.append(d.ready())
    assert d.result("status") == []
    path = write_unit(dhome, "n", {"command": fake("out:v1", "wait"), "stop": {"grace": "300ms"}})
    poll_for(
        lambda: d.call("status", units=["n"]).get("ok") and d.status("n")["state"] == "running",
        what="the new unit to run",
    )
    pid = d.status("n")["pid"]
    # an invalid edit: reported with file and line, the old definition kept
    path.write_text(path.read_text() + "restart:\n  dealy: 1s\n")
    poll_for(lambda: events(dhome, "unit.invalid"), what="unit.invalid")
    [bad] = events(dhome, "unit.invalid")
    assert bad["file"] == str(path) and bad["line"] > 1 and "restart.dealy" in bad["error"]
    assert bad["unit"] == "n" and bad["kept"]
    assert d.status("n")["pid"] == pid and d.status("n")["state"] == "running"
    # deleted: stopped (its tree ended) and forgotten
    path.unlink()
    poll_for(lambda: d.call("status", units=["n"]).get("code") == 4, what="n to be removed")
    # forgotten at once, its tree ended right after (the removal runs on)
    poll_for(lambda: gone(pid), timeout=10, what=f"pid {pid} of the removed unit to end")
    # reported once the removal is complete: a moment after the pid is gone
    removed = poll_for(lambda: events(dhome, "unit.removed"), what="unit.removed")
    assert [e["unit"] for e in removed] == ["n"]


@pytest.mark.slow
def test_a_changed_unit_applies_from_its_next_session(dhome: Path, serve: list[Served]) -> None:
    rec = dhome / "rec.jsonl"
    unit = {"command": fake(f"record:{rec}", "out:v1", "wait"), "stop": {"grace": "300ms"}}
    path = write_unit(dhome, "c", unit)
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: records(rec), what="session 1")
    write_unit(dhome, "c", {**unit, "command": fake(f"record:{rec}", "wait", "--", "v2")})
    poll_for(
        lambda: any(e.get("change") == "changed" for e in events(dhome, "unit.loaded")),
        what="the change to be loaded",
    )
    assert len(records(rec)) == 1  # the running session goes on
    d.result("restart", units=["c"], reason="new-definition")
    poll_for(lambda: len(records(rec)) == 2, what="session 2")
    second = records(rec)[1]
    assert second["args"] == ["v2"] and second["reason"] == "manual:new-definition"
    assert path.exists()


@pytest.mark.slow
def test_sighup_reloads_what_the_watcher_cannot_see(dhome: Path, serve: list[Served]) -> None:
    later = dhome / "later"
    write_unit(
        dhome, "w", {"command": fake("wait"), "workdir": str(later), "stop": {"grace": "300ms"}}
    )
    d = Served(dhome)
    serve.append(d.ready())
    [bad] = events(dhome, "unit.invalid")
    assert bad["unit"] == "w" and "workdir" in bad["error"]
    later.mkdir()  # the unit file is unchanged: only an explicit reload sees it now
    d.kill(signal.SIGHUP)
    poll_for(lambda: events(dhome, "daemon.reload"), what="daemon.reload")
    assert events(dhome, "daemon.reload")[0]["why"] == "SIGHUP"
    poll_for(
        lambda: d.call("status", units=["w"]).get("ok") and d.status("w")["state"] == "running",
        what="w to start",
    )


@pytest.mark.slow
def test_one_bad_unit_never_stops_the_others(dhome: Path, serve: list[Served]) -> None:
    write_unit(dhome, "good", {"command": fake("wait"), "stop": {"grace": "300ms"}})
    ww = write_unit(dhome, "open", {"command": fake("wait")})
    ww.chmod(0o666)
    (dhome / "units" / "broken.yaml").write_text("command: [unclosed\n")
    (dhome / "units" / "broken.yaml").chmod(0o600)
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: d.status("good")["state"] == "running", what="good running")
    bad = {Path(e["file"]).name: e for e in events(dhome, "unit.invalid")}
    assert set(bad) == {"open.yaml", "broken.yaml"}
    assert "writable" in bad["open.yaml"]["error"] and bad["broken.yaml"]["line"] >= 1
    assert "invalid YAML" in bad["broken.yaml"]["error"]


# --- systemd and idleness ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("abstract", [False, True])
def test_sd_notify_ready_watchdog_and_stopping(
    dhome: Path, serve: list[Served], abstract: bool
) -> None:
    write_unit(
        dhome,
        "e",
        {
            "command": fake("env:NOTIFY_SOCKET", "env:WATCHDOG_USEC", "wait"),
            "stop": {"grace": "300ms"},
        },
    )
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    name = (
        f"@agentd-test-{os.getpid()}-{time.monotonic_ns()}" if abstract else str(dhome / "notify")
    )
    sock.bind("\0" + name[1:] if abstract else name)
    sock.settimeout(15)
    try:
        d = Served(dhome, env={"NOTIFY_SOCKET": name, "WATCHDOG_USEC": "200000"})
        serve.append(d)
        got: list[str] = []
        while not any("READY=1" in m for m in got) or sum("WATCHDOG=1" in m for m in got) < 3:
            got.append(sock.recv(4096).decode())
        ready = next(m for m in got if "READY=1" in m)
        assert "STATUS=1 units" in ready
        d.ready()
        transcript = dhome / "logs" / "e" / "transcript.log"
        poll_for(
            lambda: transcript.exists() and "WATCHDOG_USEC=" in transcript.read_text(),
            what="the session's env",
        )
        # not passed on: each printed empty, at a line's end (see _said)
        assert _said(dhome, "e", "NOTIFY_SOCKET=") and _said(dhome, "e", "WATCHDOG_USEC="), (
            transcript.read_text()
        )
        d.kill(signal.SIGTERM)
        while not any("STOPPING=1" in m for m in got):
            got.append(sock.recv(4096).decode())
        assert d.stop() == 0
    finally:
        sock.close()
        if not abstract:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)


def _ctx_switches(pid: int) -> int:
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            for line in (task / "status").read_text().splitlines():
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[1])
    return total


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
def test_an_idle_daemon_does_not_wake_up(dhome: Path, serve: list[Served]) -> None:
    write_unit(dhome, "idle", {"command": fake("wait"), "autostart": False})
    d = Served(dhome)
    serve.append(d.ready())
    # Start-up done: a first quiet spell, waited for (a loaded machine slows it
    # down, and a fixed sleep would then count start-up work as wake-ups).
    poll_for(
        lambda: _quiet_for(d.proc.pid, 0.3),
        timeout=15,
        interval=0,
        what="the daemon to settle after start-up",
    )
    before = _ctx_switches(d.proc.pid)
    time.sleep(2.0)  # idleness is the absence of events over a span: this span
    woke = _ctx_switches(d.proc.pid) - before
    assert woke <= 2, f"{woke} context switches in 2 s of idleness"


def _quiet_for(pid: int, seconds: float) -> bool:
    """Did ``pid`` not run at all for ``seconds``?"""
    before = _ctx_switches(pid)
    time.sleep(seconds)
    return _ctx_switches(pid) == before


# --- pure parts --------------------------------------------------------------------------------


def test_unit_dir_reparses_only_what_changed(dhome: Path) -> None:
    from agentd.daemon.unitdir import UnitDir, describe_error

    good = write_unit(dhome, "good", {"command": fake("wait")})
    bad = dhome / "units" / "bad.yaml"
    bad.write_text(f"command: [x]\nworkdir: {dhome}\nrestart: {{dealy: 1s, burst: x}}\n")
    bad.chmod(0o600)
    units = UnitDir(dhome / "units")
    first = units.scan()
    assert set(first.units) == {"good"} and first.fresh == [bad]
    assert "restart.dealy: unknown key" in describe_error(first.errors[bad])
    assert "line 3" in describe_error(first.errors[bad])  # two problems: each with its line
    again = units.scan()
    assert again.fresh == [] and list(again.errors) == [bad]  # reported once, still invalid
    assert again.units["good"] is first.units["good"]  # not parsed again
    assert units.scan(force=True).fresh == [bad]
    twin = dhome / "units" / "good.yml"
    shutil.copy(good, twin)
    twin.chmod(0o600)
    dup = units.scan()
    assert list(dup.units) == ["good"] and dup.fresh == [twin]
    assert "already defined by" in str(dup.errors[twin])


@pytest.mark.parametrize(
    ("env", "interval"),
    [
        ({}, None),
        ({"WATCHDOG_USEC": "60000000"}, 30.0),
        ({"WATCHDOG_USEC": "60000000", "WATCHDOG_PID": str(os.getpid())}, 30.0),
        ({"WATCHDOG_USEC": "60000000", "WATCHDOG_PID": "1"}, None),  # meant for another process
        ({"WATCHDOG_USEC": "soon"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
    ],
)
def test_watchdog_interval(env: dict[str, str], interval: float | None) -> None:
    from agentd.daemon.notify import watchdog_interval

    assert watchdog_interval(env) == interval


def test_systemd_notify_takes_its_variables_out_of_the_environment() -> None:
    from agentd.daemon.notify import SystemdNotify

    env = {"NOTIFY_SOCKET": "@sd", "WATCHDOG_USEC": "2000000", "PATH": "/bin"}
    sd = SystemdNotify(env)
    assert env == {"PATH": "/bin"}
    assert sd.address == "\0sd" and sd.watchdog == 1.0 and sd.enabled
    assert SystemdNotify({}).send("READY=1") is False  # no socket: a no-op
    assert SystemdNotify({"NOTIFY_SOCKET": "/nonexistent/sock"}).send("READY=1") is False


def test_reconcile_adds_redefines_and_removes_even_when_cancelled(dhome: Path) -> None:
    import asyncio

    from agentd.config.unitfile import load_unit
    from agentd.events import EventLog
    from agentd.paths import Paths
    from agentd.supervisor.api import Supervisor

    stop = {"grace": "300ms"}
    v1 = load_unit(write_unit(dhome, "a", {"command": fake("ignore-term", "wait"), "stop": stop}))
    v2 = load_unit(
        write_unit(dhome, "a", {"command": fake("ignore-term", "wait", "--", "v2"), "stop": stop})
    )

    async def main() -> int:
        sup = Supervisor(Paths.resolve(dhome), EventLog(None))
        sup.attach()
        try:
            assert (await sup.reconcile({"a": v1})).added == ["a"]
            sup.start("a")
            status = await sup.wait("a", lambda s: s["state"] == "running", 10)
            assert status["state"] == "running", status
            assert (await sup.reconcile({"a": v2})).changed == ["a"]
            assert sup.definition("a") == v2
            assert sup.status(["a"])[0]["pid"] == status["pid"]  # the session goes on
            assert (await sup.reconcile({"a": v2})).changed == []
            removal = asyncio.get_running_loop().create_task(sup.reconcile({}))
            # under way: the unit is forgotten, its session (deaf to SIGTERM for the
            # 300 ms grace) still being ended
            await async_poll_for(lambda: sup.names() == [], what="the removal to begin")
            removal.cancel()  # the caller goes away: the session is still ended
            assert sup.names() == []
            return int(status["pid"])
        finally:
            await sup.shutdown()

    pid = asyncio.run(main())
    assert gone(pid)


@pytest.mark.slow
def test_a_usage_limit_pause_survives_a_daemon_restart(dhome: Path, serve: list[Served]) -> None:
    rec = dhome / "rec.jsonl"
    until = int(time.time()) + 3600
    write_unit(
        dhome,
        "u",
        {
            "command": fake(
                f"record:{rec}", f"out:usage limit reached, resets at {until}.", "wait"
            ),
            "sentinels": [
                {
                    "name": "limit",
                    "action": "pause",
                    "match": r"usage limit reached, resets at (?P<until>\d+)",
                }
            ],
            "stop": {"grace": "300ms"},
        },
    )
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: d.status("u")["state"] == "paused", what="the pause")
    rows = d.result("history", unit="u")
    assert rows[0]["outcome"] == "usage-limited" and rows[0]["reset_at"]
    # restart: a paused unit returns at once (nothing to wait for), still paused; one
    # that waited for the pause (an hour) would fail at the request's 30 s deadline
    d.result("restart", units=["u"])
    poll_for(lambda: d.status("u")["state"] == "paused", what="paused again after restart")
    assert d.stop() == 0
    # a new daemon keeps the pause instead of hitting the limit again at once
    again = Served(dhome)
    serve.append(again.ready())
    status = again.status("u")
    assert status["state"] == "paused" and status["paused_until"]
    assert len(records(rec)) == 2  # session 1 and the manual restart, none since


@pytest.mark.slow
def test_precompact_hook_ends_the_session_through_the_daemon_socket(
    dhome: Path, serve: list[Served]
) -> None:
    """The CLI's PreCompact hook (no terminal) reaches the daemon by AGENTD_SOCKET;
    the session ends while the hook still waits, so the CLI never compacts."""
    rec = dhome / "rec.jsonl"
    write_unit(
        dhome,
        "pc",
        {
            "command": fake(
                f"record:{rec}",
                "if-session:2:wait",
                "sleep:0.2",
                "hook:pre-compact",
                "out:THE CLI COMPACTED",
                "wait",
            ),
            "restart": QUICK,
        },
    )
    d = Served(dhome).ready()
    serve.append(d)
    poll_for(lambda: len(records(rec)) >= 2, timeout=20, what="a second session")
    assert [r["reason"] for r in records(rec)] == ["start", "sentinel:precompact"]
    history = records(dhome / "logs" / "pc" / "history.jsonl")
    outcome = next(r for r in history if r.get("kind") == "outcome" and r["session"] == 1)
    assert outcome["outcome"] == "context"
    assert "THE CLI COMPACTED" not in (dhome / "logs" / "pc" / "transcript.log").read_text()
    stale = d.result("precompact", unit="pc", session=1)  # an old session: nothing to end
    assert stale == {"ending": False}
    assert d.status("pc")["session"] == 2
