"""Seeing one unit through the installed CLI, as a user of systemctl or pm2 would:
``agentctl status UNIT`` (the detail view), ``cat``, ``show``, ``screen`` of a
unit that failed before the daemon restarted or never ran, and the outcome of
a person's restart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support import Served, fake, poll_for, write_unit


def ctl(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed ``agentctl`` console script (its click-free entry and the group)."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "agentctl"), *args],
        env={**os.environ, "AGENTD_HOME": str(home), **env},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_status_of_a_named_unit_is_a_detail_view(dhome: Path, serve: list[Served]) -> None:
    unit_file = write_unit(
        dhome,
        "a",
        {
            "description": "the cart refactor",
            "command": fake("out:first line", "out:second line", "child", "wait"),
            "inject": {"mode": "none"},
            "stop": {"grace": "300ms"},
        },
    )
    write_unit(
        dhome,
        "bad",
        {
            "command": fake("out:no API key set", "exit:3"),
            "state": {"dir": ".agent-bad"},
            "inject": {"mode": "none"},
            "restart": {"on_failure": False},
        },
    )
    d = Served(dhome)
    serve.append(d)
    d.ready()
    poll_for(lambda: d.status("bad")["state"] == "failed", what="bad to fail")
    poll_for(lambda: "second line" in ctl(dhome, "logs", "a").stdout, what="a's second line")
    pid = d.status("a")["pid"]
    shown = ctl(dhome, "status", "a")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert out.splitlines()[0] == "● a - the cart refactor"
    assert f"Loaded: {unit_file} (enabled)" in out
    assert "Active: running since " in out
    assert f"Command: {sys.executable} {fake('x')[1]} 'out:first line'" in out
    assert f"Workdir: {dhome / 'work'}" in out and f"State dir: {dhome / 'work' / '.agent'}" in out
    assert f"Main PID: {pid} (2 processes in its tree)" in out  # the agent and its child
    assert "Session: 1 (started by start)" in out
    assert "session 1 starting (start) ---\n  first line\n  second line\n" in out
    failed = ctl(dhome, "status", "bad")
    assert failed.returncode == 3  # LSB: not running
    assert (
        "Active: failed since " in failed.stdout and ": exit:3; on_failure is off" in failed.stdout
    )
    assert "  no API key set" in failed.stdout
    data = json.loads(ctl(dhome, "status", "a", "--json", "-n", "1").stdout)
    assert [s["unit"] for s in data] == ["a"]
    a = data[0]
    assert a["unit_file"] == str(unit_file) and a["command"] == fake(
        "out:first line", "out:second line", "child", "wait"
    )
    assert a["workdir"] == str(dhome / "work") and a["state_dir"] == str(dhome / "work/.agent")
    assert a["last_lines"] == ["second line"] and a["processes"] == 2
    table = ctl(dhome, "status", "a", "--table")
    assert table.stdout.split()[:7] == [
        "UNIT",
        "STATE",
        "PID",
        "SESSION",
        "UPTIME",
        "RESTARTS",
        "LAST",
    ]


@pytest.mark.slow
def test_cat_and_show_give_the_file_and_the_effective_unit(
    dhome: Path, serve: list[Served]
) -> None:
    path = dhome / "units" / "cc.yaml"
    path.write_text(
        f"# my claude unit\npreset: claude-code\nworkdir: {dhome / 'work'}\n"
        "autostart: false\nstop: {grace: 3s}\n"
    )
    path.chmod(0o600)
    d = Served(dhome)
    serve.append(d)
    d.ready()
    cat = ctl(dhome, "cat", "cc")
    assert cat.returncode == 0, cat.stderr
    assert cat.stdout.startswith(f"# {path}\n# my claude unit\npreset: claude-code\n")
    assert "\n# preset claude-code: " in cat.stdout and "Compacting conversation" in cat.stdout
    shown = ctl(dhome, "show", "cc")
    assert shown.returncode == 0, shown.stderr
    effective = yaml.safe_load(shown.stdout)
    assert effective["command"][0] == "claude"  # from the preset
    assert effective["stop"] == {"signal": "TERM", "grace": 3.0}  # the unit's grace wins
    assert effective["restart"]["exit_codes"] == [42] and effective["handoff"]["when"]
    assert effective["workdir"] == str(dhome / "work") and effective["autostart"] is False
    assert json.loads(ctl(dhome, "show", "cc", "--json").stdout) == effective
    # the check command prints that argv whole, quoted as a shell would
    bin_dir = dhome / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "claude").chmod(0o755)
    checked = subprocess.run(
        [str(Path(sys.executable).parent / "agentd"), "check", str(path)],
        env={**os.environ, "AGENTD_HOME": str(dhome), "PATH": f"{bin_dir}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    prompt = "Read {bootstrap_file} and follow it: your state and instructions."
    said = f"{path}: ok (cc: claude '{prompt}')"
    assert said in checked.stdout


@pytest.mark.slow
def test_a_failed_units_last_screen_outlives_the_daemon(dhome: Path, serve: list[Served]) -> None:
    write_unit(
        dhome,
        "crash",
        {
            "command": fake(
                "out:loading the model", "out:\\x1b[31mError: no API key\\x1b[0m", "exit:3"
            ),
            "inject": {"mode": "none"},
            "restart": {"on_failure": False},
        },
    )
    write_unit(
        dhome,
        "never",
        {"command": fake("wait"), "autostart": False, "state": {"dir": ".agent-n"}},
    )
    first = Served(dhome)
    serve.append(first)
    first.ready()
    poll_for(lambda: first.status("crash")["state"] == "failed", what="crash to fail")
    assert first.stop() == 0
    again = Served(dhome)
    serve.append(again)
    again.ready()
    shown = ctl(dhome, "screen", "crash")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == "loading the model\nError: no API key\n"  # no rows of blanks
    assert "crash is not running; its session 1 ended (exit:3) at " in shown.stderr
    data = json.loads(ctl(dhome, "screen", "crash", "--json").stdout)
    assert data["running"] is False and data["ran"] is True and data["reason"] == "exit:3"
    never = ctl(dhome, "screen", "never")
    assert never.returncode == 0 and never.stdout == ""
    assert never.stderr == "agentctl: never never ran: no screen yet (agentctl start never)\n"


@pytest.mark.slow
def test_a_persons_restart_is_outcome_manual(dhome: Path, serve: list[Served]) -> None:
    write_unit(
        dhome,
        "a",
        {"command": fake("wait"), "inject": {"mode": "none"}, "stop": {"grace": "300ms"}},
    )
    d = Served(dhome)
    serve.append(d)
    d.ready()
    poll_for(lambda: d.status("a")["state"] == "running", what="a to run")
    assert ctl(dhome, "restart", "a").returncode == 0
    sessions = json.loads(ctl(dhome, "history", "a", "--json").stdout)
    assert [(s["session"], s["outcome"], s["reason"]) for s in sessions[:1]] == [
        (1, "manual", "manual")
    ]
    table = ctl(dhome, "history", "a").stdout
    assert " manual " in table.splitlines()[1] and "handoff" not in table
