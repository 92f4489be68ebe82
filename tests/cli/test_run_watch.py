"""`agentd run` is a first-class foreground supervisor: agentctl's verbs reach it
through its socket (and read its files once it is over)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agentd.cli.agentctl import main as agentctl_main
from tests.cli.test_watch import ctl_pty, end, said
from tests.conftest import fake, poll_for
from tests.daemon import test_daemon
from tests.daemon.test_daemon import Served
from tests.helpers import write_unit

dhome, serve = test_daemon.dhome, test_daemon.serve  # the fixtures
STOP = {"grace": "300ms"}


def agentctl(*args: str) -> Result:
    return CliRunner().invoke(agentctl_main, list(args), catch_exceptions=False)


def run_in_background(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "agentd.cli", "run", *args],
                            env=dict(os.environ, AGENTD_HOME=str(home)), text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def test_every_read_verb_and_attach_reach_agentd_run_and_its_files_after(
        dhome: Path, serve: list[Served], tmp_path: Path) -> None:
    # A daemon with a unit of its own, and a unit file it does not know, under `agentd run`.
    write_unit(dhome, "served", {"command": fake("out:served up", "wait"), "stop": STOP})
    d = Served(dhome)
    serve.append(d.ready())
    unit_file = tmp_path / "solo.yaml"
    write_unit(dhome, "solo", {"command": fake("out:solo up", "prompt:ready> ", "wait"),
                               "inject": {"mode": "none"}, "stop": STOP})
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
            child.send("\x1d")
            child.expect("detached from solo: you pressed Ctrl-]")
            assert end(child) == 0
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


@pytest.mark.parametrize("verb", [["screen", "nope"], ["attach", "nope"]])
def test_verbs_on_a_unit_nobody_supervises_fail_cleanly(dhome: Path, verb: list[str]) -> None:
    res = agentctl(*verb)
    assert res.exit_code == 1
    assert "cannot reach agentd" in res.stderr or "stdin is not" in res.stderr
