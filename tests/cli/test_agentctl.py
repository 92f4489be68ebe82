"""The agentctl daemon verbs against a real daemon: output, exit codes, files."""

from __future__ import annotations

import json
import os
import plistlib
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
from click.testing import CliRunner, Result

from agentd.cli.agentctl.group import main as agentctl_main
from agentd.cli.agentctl.output import format_event, status_rows
from agentd.daemon import notify
from agentd.times import span
from tests.support import Served, events, fake, gone, poll_for, write_unit

REPO = Path(__file__).resolve().parents[2]


def agentctl(*args: str) -> Result:
    """Run ``agentctl ARGS`` in-process."""
    return CliRunner().invoke(agentctl_main, list(args), catch_exceptions=False)


def ctl_process(home: Path, *args: str, out: Path) -> subprocess.Popen[bytes]:
    """``python -m agentd.cli.agentctl ARGS`` in the background, stdout to ``out``."""
    with out.open("wb") as f:
        return subprocess.Popen(
            [sys.executable, "-m", "agentd.cli.agentctl", *args],
            env=dict(os.environ, AGENTD_HOME=str(home)),
            stdin=subprocess.DEVNULL,
            stdout=f,
            stderr=subprocess.STDOUT,
        )


def _end(proc: subprocess.Popen[bytes]) -> int:
    """Ctrl-C ``proc`` and wait for its end (SIGKILL after 30 s, failing the test with
    how the process stood: its state and signal masks); its exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(30)
    except subprocess.TimeoutExpired:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
            stood = [ln for ln in status.splitlines() if ln.startswith(("State", "Sig", "Shd"))]
        except OSError as exc:
            stood = [repr(exc)]
        proc.kill()
        proc.wait()
        pytest.fail(f"{proc.args[3:]} did not end within 30 s of a SIGINT: {stood}")


@pytest.fixture
def daemon(dhome: Path, serve: list[Served]) -> Served:
    """A daemon with unit ``a`` running (it prints a coloured line) and ``b`` stopped.

    ``a`` is given no bootstrap: the tty's echo of a typed one (and of its Enter,
    typed a moment later) would race the coloured line to the transcript's end."""
    write_unit(
        dhome,
        "a",
        {
            "command": fake("out:\\x1b[31mred\\x1b[0m alert", "wait"),
            "inject": {"mode": "none"},
            "stop": {"grace": "300ms"},
        },
    )
    write_unit(
        dhome,
        "b",
        {
            "command": fake("out:b-up", "wait"),
            "autostart": False,
            "state": {"dir": ".agent-b"},  # two units may not share one
            "stop": {"grace": "300ms"},
        },
    )
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: d.status("a")["state"] == "running", what="a running")
    return d


@pytest.mark.slow
def test_status_table_json_and_lsb_exit_codes(daemon: Served) -> None:
    res = agentctl("status")
    assert res.exit_code == 0, res.output
    head, *rows = res.stdout.splitlines()
    assert head.split() == ["UNIT", "STATE", "PID", "SESSION", "UPTIME", "RESTARTS", "LAST"]
    assert rows[0].split()[:4] == ["a", "running", str(daemon.status("a")["pid"]), "1"]
    assert rows[1].split()[:3] == ["b", "stopped", "-"]
    assert agentctl("status", "a").exit_code == 0
    assert agentctl("status", "b").exit_code == 3
    assert agentctl("status", "a", "b").exit_code == 3
    ghost = agentctl("status", "a", "ghost")
    assert ghost.exit_code == 4 and "unknown unit: ghost" in ghost.stderr
    bad = agentctl("status", "../etc")
    assert bad.exit_code == 2 and "invalid unit name" in bad.stderr
    got = json.loads(agentctl("status", "--json", "a").stdout)
    assert got[0]["unit"] == "a" and got[0]["state"] == "running"
    keys = {"unit", "state", "pid", "session", "uptime_s", "restarts", "last_reason", "since"}
    assert keys <= set(got[0]) and isinstance(got[0]["session"], int)


# The console script (``ctlmain``), telling on exit whether it loaded click.
CONSOLE = (
    "import atexit, sys; atexit.register(lambda: print('click loaded:', 'click' in "
    "sys.modules, file=sys.stderr)); from agentd.cli.agentctl.main import main; "
    "sys.argv[0] = 'agentctl'; main()"
)


def console(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CONSOLE, *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, AGENTD_HOME=str(home)),
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_the_console_script_answers_a_plain_status_without_click(
    daemon: Served, dhome: Path
) -> None:
    table, as_json = console(dhome, "status"), console(dhome, "status", "--json")
    for done in (table, as_json):
        assert done.returncode == 0 and "click loaded: False" in done.stderr, done.stderr
    clicked = agentctl("status")
    assert [r.split()[:4] for r in table.stdout.splitlines()] == [
        r.split()[:4] for r in clicked.stdout.splitlines()
    ]

    def steady(text: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in s.items() if k != "uptime_s"} for s in json.loads(text)]

    assert steady(as_json.stdout) == steady(agentctl("status", "--json").stdout)
    named = console(dhome, "status", "b")  # anything more: the click command, LSB's 3
    assert named.returncode == 3 and "click loaded: True" in named.stderr


def test_an_unreachable_daemon_is_exit_1_naming_the_socket(dhome: Path) -> None:
    for verb in (["status"], ["stop", "a"], ["logs", "a"], ["events"], ["reload"]):
        res = agentctl(*verb)
        assert res.exit_code == 1, verb
        assert str(dhome / "run" / "agentd.sock") in res.stderr and "agentd serve" in res.stderr
    # the real entry points too: python -m (click) and the console script (no click)
    proc = subprocess.run(
        [sys.executable, "-m", "agentd.cli.agentctl", "status"],
        env=dict(os.environ, AGENTD_HOME=str(dhome)),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 1 and "cannot reach agentd" in proc.stderr
    fast = console(dhome, "status")
    assert fast.returncode == 1 and proc.stderr in fast.stderr


@pytest.mark.slow
def test_start_restart_stop_round_trip(daemon: Served, dhome: Path) -> None:
    started = agentctl("start", "b")
    assert started.exit_code == 0 and "b: running (session 1" in started.stdout
    restarted = agentctl("restart", "b", "--reason", "deploy")
    assert restarted.exit_code == 0 and "b: running (session 2" in restarted.stdout
    assert daemon.status("b")["last_reason"] == "manual:deploy"
    [shown] = json.loads(agentctl("status", "--json", "b").stdout)
    assert (shown["session"], shown["restarts"]) == (2, 1)
    pid = daemon.status("b")["pid"]
    stopped = agentctl("stop", "b")
    assert stopped.exit_code == 0 and "b: stopped" in stopped.stdout
    assert gone(pid)  # gone when stop returns: it waits for the end
    assert agentctl("status", "b").exit_code == 3
    assert agentctl("start", "--all").exit_code == 0
    assert {s["state"] for s in daemon.result("status")} == {"running"}
    res = agentctl("stop", "--all", "--json")
    assert res.exit_code == 0 and {s["state"] for s in json.loads(res.stdout)} == {"stopped"}
    assert agentctl("start").exit_code == 2  # neither names nor --all
    assert agentctl("start", "a", "--all").exit_code == 2
    ghost = agentctl("restart", "ghost")
    assert ghost.exit_code == 4 and "unknown unit: ghost" in ghost.stderr
    for verb in (
        ["start"],
        ["stop"],
        ["enable"],
        ["disable"],
        ["logs"],
        ["history"],
        ["bootstrap"],
        ["screen"],
        ["events"],
        ["status"],
    ):
        assert agentctl(*verb, "ghost").exit_code == 4, verb  # the same code on every verb
    # (attach asks for a terminal first: without one it exits 1 before asking agentd)


@pytest.mark.slow
def test_start_says_when_a_unit_did_not_start_cleanly(dhome: Path, serve: list[Served]) -> None:
    write_unit(
        dhome,
        "x",
        {"command": ["/nonexistent/agent"], "autostart": False, "restart": {"delay": "10s"}},
    )
    d = Served(dhome)
    serve.append(d.ready())
    res = agentctl("start", "x")
    assert res.exit_code == 1 and "x: failed (spawn-error: cannot start" in res.stdout
    assert "[Errno 2] No such file or directory" in res.stdout  # the OS error
    assert "agentctl logs x" in res.stderr


@pytest.mark.slow
def test_logs_strip_escapes_unless_raw(daemon: Served, dhome: Path) -> None:
    poll_for(lambda: "alert" in agentctl("logs", "a").stdout, what="a's output")
    clean = agentctl("logs", "a", "-n", "1").stdout
    assert clean == "red alert\n"
    raw = agentctl("logs", "a", "-n", "1", "--raw").stdout
    assert "\x1b[31mred\x1b[0m alert" in raw
    assert agentctl("logs", "ghost").exit_code == 4


@pytest.mark.slow
def test_an_agent_stopped_by_a_signal_is_shown_so(daemon: Served) -> None:
    pid = daemon.status("a")["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        poll_for(lambda: psutil.Process(pid).status() == psutil.STATUS_STOPPED, what="stopped")
        row = agentctl("status", "a", "--table").stdout.splitlines()[1].split()
        assert row[:3] == ["a", "paused-by-signal", str(pid)]
        got = json.loads(agentctl("status", "--json", "a").stdout)[0]
        assert got["state"] == "running" and got["process"] == "stopped"
    finally:
        os.kill(pid, signal.SIGCONT)
    poll_for(
        lambda: agentctl("status", "a", "--table").stdout.splitlines()[1].split()[1] == "running",
        what="running again after SIGCONT",
    )


@pytest.mark.slow
def test_logs_and_events_follow(daemon: Served, dhome: Path) -> None:
    logs_out, events_out = dhome / "logs.out", dhome / "events.out"
    poll_for(lambda: "alert" in agentctl("logs", "a").stdout, what="a's output")
    follow_logs = ctl_process(dhome, "logs", "a", "-f", "-n", "1", out=logs_out)
    follow_events = ctl_process(dhome, "events", "a", "-f", "-n", "1", out=events_out)
    try:
        # each prints its last line first: then it is following
        poll_for(lambda: logs_out.read_text() == "red alert\n", what="logs -f to start")
        poll_for(lambda: events_out.read_text().count("\n") >= 1, what="events -f to start")
        assert agentctl("restart", "a").exit_code == 0
        poll_for(
            lambda: "session 2 starting" in logs_out.read_text(), what="logs -f to print new output"
        )
        poll_for(
            lambda: "session.start" in events_out.read_text(), what="events -f to print new events"
        )
        assert " a#2 " in events_out.read_text()
        daemon.kill(signal.SIGTERM)
        assert follow_events.wait(15) == 1
        assert "the event stream ended: daemon stopping" in events_out.read_text()
    finally:
        _end(follow_events)
        assert _end(follow_logs) == 130  # Ctrl-C ends a follow
    assert daemon.stop() == 0
    assert "\x1b" not in logs_out.read_text()


@pytest.mark.slow
def test_events_history_and_bootstrap(daemon: Served, dhome: Path) -> None:
    work = dhome / "work" / ".agent"
    work.mkdir(parents=True, exist_ok=True)  # the first session created and initialised it
    (work / "state.json").write_text(
        json.dumps(
            {"schema_version": 1, "mission": "Ship the cart cache", "next_action": "Write tests"}
        )
    )
    agentctl("restart", "a", "--reason", "deploy")
    listing = agentctl("history", "a")
    assert listing.exit_code == 0
    head, one, two = listing.stdout.splitlines()
    assert head.split() == ["SESSION", "STARTED", "DURATION", "OUTCOME", "REASON", "BOOTSTRAP"]
    # STARTED is local time, two words: 2026-12-01 14:03:07
    assert one.split()[4:6] == ["manual", "manual:deploy"] and one.endswith("bootstrap-1.md")
    assert two.split()[4] == "running"
    rows = json.loads(agentctl("history", "a", "--json").stdout)
    assert [r["session"] for r in rows] == [1, 2] and rows[0]["bootstrap"].endswith(".md")
    boot = agentctl("bootstrap", "a")
    assert boot.exit_code == 0
    assert "# agentd bootstrap: a, session 3" in boot.stdout
    assert "Ship the cart cache" in boot.stdout and "Write tests" in boot.stdout
    assert json.loads(agentctl("bootstrap", "a", "--json").stdout)["session"] == 3
    assert not (dhome / "logs" / "a" / "bootstrap-3.md").exists()  # a preview writes nothing
    lines = agentctl("events", "a", "-n", "3").stdout.splitlines()
    assert len(lines) == 3 and all(" a#2 " in line or " a " in line for line in lines)
    as_json = [json.loads(x) for x in agentctl("events", "-n", "2", "--json").stdout.splitlines()]
    assert len(as_json) == 2 and all("event" in e for e in as_json)


@pytest.mark.slow
def test_reload_reports_changes_and_invalid_files(daemon: Served, dhome: Path) -> None:
    res = agentctl("reload")
    assert res.exit_code == 0 and "no changes" in res.stdout
    (dhome / "units" / "bad.yaml").write_text("command: [x]\nworkdir: /nonexistent/dir\n")
    (dhome / "units" / "bad.yaml").chmod(0o600)
    write_unit(dhome, "c", {"command": fake("wait"), "autostart": False})
    res = agentctl("reload")
    assert res.exit_code == 1
    assert "loaded: c" in res.stdout
    assert f"invalid: {dhome / 'units' / 'bad.yaml'}:2: workdir" in res.stderr
    assert events(dhome, "daemon.reload")[-1]["why"] == "agentctl"


# --- install-service ---------------------------------------------------------------------------


def test_install_service_prints_real_paths() -> None:
    res = agentctl("install-service", "--kind", "systemd", "--print")
    assert res.exit_code == 0
    unit = res.stdout
    exec_line = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    assert exec_line.endswith(" serve") and str(Path(sys.executable).parent) in exec_line
    assert "Type=notify" in unit and "Restart=on-failure" in unit and "Delegate=yes" in unit
    assert f"Environment=PATH={os.environ['PATH']}" in unit or 'Environment="PATH=' in unit
    plist = plistlib.loads(
        agentctl("install-service", "--kind", "launchd", "--print").stdout.encode()
    )
    assert plist["ProgramArguments"][-1] == "serve" and plist["KeepAlive"] is True
    assert plist["EnvironmentVariables"]["PATH"] == os.environ["PATH"]


def test_install_service_writes_and_will_not_clobber(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    res = agentctl("install-service", "--kind", "systemd")
    target = tmp_path / "cfg" / "systemd" / "user" / "agentd.service"
    assert res.exit_code == 0 and str(target) in res.stdout and "daemon-reload" in res.stdout
    assert target.read_text().startswith("# systemd user service for agentd.")
    assert agentctl("install-service", "--kind", "systemd").exit_code == 0  # same: fine
    target.write_text("# edited by hand\n")
    res = agentctl("install-service", "--kind", "systemd")
    assert res.exit_code == 1 and "--force" in res.stderr
    assert target.read_text() == "# edited by hand\n"
    assert agentctl("install-service", "--kind", "systemd", "--force").exit_code == 0
    assert "ExecStart=" in target.read_text()


def test_install_service_says_what_to_do_without_a_user_bus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "no-bus"))
    res = CliRunner().invoke(agentctl_main, ["install-service", "--kind", "systemd"])
    assert res.exit_code == 0 and "no systemd user bus" in res.stderr
    assert "loginctl enable-linger" in res.stderr
    (tmp_path / "bus-here").mkdir()
    (tmp_path / "bus-here" / "bus").touch()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "bus-here"))
    res = CliRunner().invoke(agentctl_main, ["install-service", "--kind", "systemd"])
    assert res.exit_code == 0 and "user bus" not in res.stderr


def test_built_in_templates_match_init_files() -> None:
    """A wheel has no init/: the copies in agentd.daemon.notify must say the same."""
    assert (REPO / "init" / "agentd.service").read_text() == notify.SYSTEMD_TEMPLATE
    assert (
        plistlib.loads((REPO / "init" / "com.agentd.plist").read_bytes()) == notify.LAUNCHD_TEMPLATE
    )


def test_systemd_quoting() -> None:
    text = notify.systemd_unit(
        ["/opt/my tools/agentd", "serve"], {"PATH": "/a b:/c%d"}, template=notify.SYSTEMD_TEMPLATE
    )
    assert 'ExecStart="/opt/my tools/agentd" serve' in text
    assert 'Environment="PATH=/a b:/c%%d"' in text


# --- formatting, pure -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (None, "-"),
        (0, "0s"),
        (59.9, "59s"),
        (60, "1m00s"),
        (3599, "59m59s"),
        (3600, "1h00m"),
        (90061, "1d01h"),
        (-5, "0s"),
    ],
)
def test_span(seconds: float | None, shown: str) -> None:
    assert span(seconds) == shown


def test_status_rows_show_last_reason_age_and_pause() -> None:
    rows: list[dict[str, Any]] = [
        {
            "unit": "a",
            "state": "running",
            "pid": 42,
            "session": 3,
            "uptime_s": 75.2,
            "restarts": 2,
            "last_reason": "exit:42",
            "last_at": "2026-01-01T00:00:00Z",
        },
        {
            "unit": "limited",
            "state": "paused",
            "pid": None,
            "session": 7,
            "uptime_s": 0.0,
            "restarts": 6,
            "last_reason": "sentinel:limit",
            "last_at": "2026-01-01T00:00:00Z",
            "paused_until": "2026-01-01T03:00:00Z",
        },
    ]
    now = 1767225600 + 125  # 2026-01-01T00:02:05Z
    text = status_rows(rows, now)
    first, second = text.splitlines()[1:]
    assert first.split() == ["a", "running", "42", "3", "1m15s", "2", "exit:42", "(2m05s", "ago)"]
    assert second.split()[:6] == ["limited", "paused", "-", "7", "-", "6"]
    assert "paused until" in second


def test_format_event() -> None:
    line = format_event(
        {
            "timestamp": "2026-01-01T00:00:00.123Z",
            "level": "info",
            "event": "session.exit",
            "unit": "a",
            "session": 2,
            "code": 42,
            "reason": "exit:42",
        }
    )
    assert line.startswith("2026-01-01 00:00:00  session.exit")
    assert " a#2 " in line and "code=42 reason=exit:42" in line


@pytest.mark.slow
def test_home_option_and_logs_json(
    daemon: Served, dhome: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    poll_for(
        lambda: "alert" in (dhome / "logs" / "a" / "transcript.log").read_text(), what="a's output"
    )
    monkeypatch.delenv("AGENTD_HOME")
    res = CliRunner().invoke(
        agentctl_main, ["--home", str(dhome), "logs", "a", "--json"], catch_exceptions=False
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["unit"] == "a" and "red alert" in data["lines"]
    assert data["path"].endswith("transcript.log")
    both = CliRunner().invoke(agentctl_main, ["--home", str(dhome), "logs", "a", "-f", "--json"])
    assert both.exit_code == 2
