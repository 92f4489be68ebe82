"""`agentd run` is a first-class foreground supervisor: agentctl's verbs reach it
through its socket (and read its files once it is over), ``--attach`` puts the
agent in your terminal, and a failed run says where its transcript is."""

from __future__ import annotations

import os
import subprocess
import sys
import termios
from pathlib import Path

import pexpect
import pytest
from click.testing import CliRunner, Result

from agentd.cli.agentctl.group import main as agentctl_main
from tests.support import Served, agentd, ctl_pty, detach, end, fake, poll_for, said, write_unit

STOP = {"grace": "300ms"}


def agentctl(*args: str) -> Result:
    return CliRunner().invoke(agentctl_main, list(args), catch_exceptions=False)


def run_in_background(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentd.cli", "run", *args],
        env=dict(os.environ, AGENTD_HOME=str(home)),
        text=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.slow
def test_every_read_verb_and_attach_reach_agentd_run_and_its_files_after(
    dhome: Path, serve: list[Served], tmp_path: Path
) -> None:
    # A daemon with a unit of its own, and a unit file it does not know, under `agentd run`.
    write_unit(dhome, "served", {"command": fake("out:served up", "wait"), "stop": STOP})
    d = Served(dhome)
    serve.append(d.ready())
    unit_file = tmp_path / "solo.yaml"
    write_unit(
        dhome,
        "solo",
        {
            "command": fake("out:solo up", "prompt:ready> ", "winch", "wait"),
            "state": {"dir": ".agent-solo"},  # units may not share one
            "inject": {"mode": "none"},
            "stop": STOP,
        },
    )
    (dhome / "units" / "solo.yaml").rename(unit_file)
    run = run_in_background(dhome, str(unit_file))
    try:
        poll_for(lambda: said(dhome, "solo", "ready> "), what="solo's prompt")
        listed = agentctl("status")
        assert listed.exit_code == 0, listed.output
        rows = {line.split()[0]: line.split()[1] for line in listed.stdout.splitlines()[1:]}
        assert rows == {"served": "running", "solo": "running"}
        assert agentctl("status", "solo").exit_code == 0
        assert "solo up" in agentctl("logs", "solo").stdout
        assert "ready>" in agentctl("screen", "solo").stdout
        assert agentctl("history", "solo").stdout.splitlines()[1].split()[:1] == ["1"]
        assert "session.start" in agentctl("events", "solo").stdout
        assert agentctl("bootstrap", "solo").exit_code == 0

        child = ctl_pty(dhome, "attach", "solo")
        try:
            child.expect("attached to solo")
            child.expect("ready>")
            child.send("Ada\r")
            child.expect("GOT:Ada")
            child.expect("WINCH:80x24")  # attach gave the run's agent its terminal's size
            detach(child, "solo")
        finally:
            child.close(force=True)

        stopped = agentctl("stop", "solo")
        assert stopped.exit_code == 0, stopped.output
        assert "solo: stopped" in stopped.stdout
        assert run.wait(30) == 1
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate(timeout=30)
    # The run is over and the daemon never knew solo: the files answer.
    d.stop()
    logs = agentctl("logs", "solo")
    assert logs.exit_code == 0 and "GOT:Ada" in logs.stdout
    assert "no agentd answers; read from" in logs.stderr
    history = agentctl("history", "solo", "--json")
    assert history.exit_code == 0 and '"reason": "manual"' in history.stdout
    assert agentctl("logs", "ghost").exit_code == 1


@pytest.mark.slow
def test_agentd_run_attach_passes_keys_and_gives_the_terminal_back(dhome: Path) -> None:
    write_unit(
        dhome,
        "talk",
        {
            "command": fake("prompt:name? ", "out:bye", "exit:0"),
            "inject": {"mode": "none"},
            "stop": STOP,
        },
    )
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agentd.cli", "run", "--attach", "talk"],
        env=dict(os.environ, AGENTD_HOME=str(dhome)),
        dimensions=(30, 100),
        timeout=20,
    )
    try:
        child.expect("talk in this terminal")
        child.expect("name\\? ")
        before = termios.tcgetattr(child.child_fd)
        assert not before[3] & termios.ICANON  # raw while attached
        child.send("Ada\r")
        child.expect("GOT:Ada")
        child.expect("bye")
        child.expect("talk done after 1 session")
        after = termios.tcgetattr(child.child_fd)  # restored before the summary
        assert end(child) == 0
    finally:
        child.close(force=True)
    assert after[3] & termios.ICANON and after[3] & termios.ECHO  # the terminal given back
    assert said(dhome, "talk", "GOT:Ada")


@pytest.mark.slow
def test_agentd_run_attach_gives_the_agent_the_size_of_the_terminal(dhome: Path) -> None:
    write_unit(
        dhome,
        "tui",
        {
            "command": fake("size", "if-session:1:winch", "if-session:1:exit:42", "exit:0"),
            "pty": {"cols": 80, "rows": 24},  # the terminal's size wins
            "inject": {"mode": "none"},
            "restart": {"min_uptime": 0},
            "stop": STOP,
        },
    )
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agentd.cli", "run", "-i", "tui"],
        env=dict(os.environ, AGENTD_HOME=str(dhome)),
        dimensions=(30, 100),
        timeout=20,
    )
    try:
        child.expect("SIZE:100x30")
        # As a terminal window does: TIOCSWINSZ, and the kernel sends SIGWINCH to
        # the terminal's foreground process group, agentd.
        child.setwinsize(40, 132)
        child.expect("WINCH:132x40")  # the agent's pty followed, and told the agent
        child.expect("session 1 ended")
        child.expect("SIZE:132x40")  # the next session starts at the new size
        child.expect("tui done after 2 session")
        assert end(child) == 0
    finally:
        child.close(force=True)
    assert said(dhome, "tui", "WINCH:132x40")


@pytest.mark.slow
def test_agentd_run_attach_needs_a_terminal(dhome: Path) -> None:
    write_unit(dhome, "talk", {"command": fake("exit:0")})
    res = agentd(dhome, "run", "-i", "talk")
    assert res.returncode == 1
    assert "--attach needs a terminal" in res.stderr


@pytest.mark.slow
def test_a_failed_run_names_its_transcript_and_shows_its_last_lines(dhome: Path) -> None:
    write_unit(
        dhome,
        "bad",
        {
            "command": fake("out:\\x1b[31mfirst\\x1b[0m line", "out:last words", "exit:3"),
            "restart": {"on_failure": False},
            # no bootstrap typed in: its echo would come before the agent's lines or,
            # on loaded cores, after them, and fill the last lines itself
            "inject": {"mode": "none"},
        },
    )
    res = agentd(dhome, "run", "bad")
    assert res.returncode == 1
    transcript = dhome / "logs" / "bad" / "transcript.log"
    assert f"agentd: transcript: {transcript}, last lines:" in res.stderr
    shown = res.stderr.split("last lines:\n", 1)[1].splitlines()
    assert "  | first line" in shown and "  | last words" in shown


@pytest.mark.parametrize("verb", [["screen", "nope"], ["attach", "nope"]])
def test_verbs_on_a_unit_nobody_supervises_fail_cleanly(dhome: Path, verb: list[str]) -> None:
    res = agentctl(*verb)
    assert res.exit_code == 1
    assert "cannot reach agentd" in res.stderr or "stdin is not" in res.stderr
