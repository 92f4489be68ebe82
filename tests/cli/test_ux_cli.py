"""The details a user of systemctl, journalctl and pm2 expects, through the installed
``agentd`` and ``agentctl`` (a clean first run: test_demo.py): one severity per problem, one
error style, quiet pipes, colour only where asked for or seen, ``top`` that
refuses a pipe, state dirs that two units share, the run summary."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import Served, fake, poll_for, write_unit

BIN = Path(sys.executable).parent
ESC = "\x1b["


def run(home: Path, tool: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed console script ``tool`` (agentd or agentctl), stdin closed."""
    return subprocess.run(
        [str(BIN / tool), *args],
        env={**os.environ, "AGENTD_HOME": str(home), **env},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def on_a_terminal(home: Path, *args: str, **env: str) -> str:
    """What ``agentctl ARGS`` writes when its stdout is a terminal (a pty)."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [str(BIN / "agentctl"), *args],
            env={**os.environ, "AGENTD_HOME": str(home), "TERM": "xterm", **env},
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.DEVNULL,
        )
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            out += chunk
        assert proc.wait(timeout=60) in (0, 3)
    finally:
        os.close(leader)
    return out.decode()


@pytest.mark.slow
def test_a_problem_has_one_severity_in_check_and_run(home: Path) -> None:
    write_unit(home, "v", {"command": fake("exit:0", "--", "{bootstrap}")})
    checked = run(home, "agentd", "check")
    assert checked.returncode == 0
    assert "command[4]: warning: the bootstrap (the agent's state) is passed" in checked.stderr
    ran = run(home, "agentd", "run", "v")
    assert ran.returncode == 0
    said = [line for line in ran.stderr.splitlines() if "passed on the command line" in line]
    assert len(said) == 1 and " v: warning: the bootstrap" in said[0], ran.stderr


@pytest.mark.slow
def test_bootstrap_warnings_are_shown_whole(home: Path) -> None:
    write_unit(home, "w", {"command": fake("exit:0"), "inject": {"mode": "none"}})
    ran = run(home, "agentd", "run", "w")
    assert ran.returncode == 0, ran.stderr
    # two warnings of the fresh state: more than the 200 characters they were cut to
    assert "warning: .agent/state.json: `mission` is not set:" in ran.stderr
    assert "so the next session knows where to go" in ran.stderr


@pytest.mark.slow
def test_the_run_summary_counts_this_runs_sessions(home: Path) -> None:
    write_unit(
        home,
        "f",
        {"command": fake("exit:3"), "inject": {"mode": "none"}, "restart": {"on_failure": False}},
    )
    first = run(home, "agentd", "run", "f")
    assert "agentd: f failed after 1 session(s) in " in first.stderr
    second = run(home, "agentd", "run", "f")
    assert "agentd: f failed after 1 session(s) (session 2) in " in second.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tool", "args", "code", "said"),
    [
        (
            "agentctl",
            ["logs", "--zzz"],
            2,
            "agentctl: No such option '--zzz' (see: agentctl logs --help)",
        ),
        ("agentctl", ["bogus"], 2, "agentctl: No such command 'bogus' (see: agentctl --help)"),
        (
            "agentctl",
            ["state", "next"],
            2,
            "agentctl: Missing argument 'TEXT' (see: agentctl state next --help)",
        ),
        ("agentctl", ["status", "--json"], 1, "agentctl: cannot reach agentd at "),
        ("agentctl", ["status", "a"], 1, "agentctl: cannot reach agentd at "),
        ("agentd", ["run", "nope"], 78, "agentd: no unit named nope in "),
        (
            "agentd",
            ["run", "--nope"],
            2,
            "agentd: No such option '--nope' (see: agentd run --help)",
        ),
    ],
)
def test_every_error_is_one_line_in_one_style(
    tmp_path: Path, tool: str, args: list[str], code: int, said: str
) -> None:
    (tmp_path / "units").mkdir()
    done = run(tmp_path, tool, *args)
    assert done.returncode == code
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith(said), done.stderr


def test_top_refuses_a_pipe_at_once(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with out.open("w") as f:
        done = subprocess.run(
            [str(BIN / "agentctl"), "top"],
            env={**os.environ, "AGENTD_HOME": str(tmp_path)},
            stdin=subprocess.DEVNULL,
            stdout=f,
            stderr=subprocess.PIPE,
            text=True,
            timeout=30,
        )
    assert done.returncode == 1 and out.read_text() == ""
    assert done.stderr.startswith("agentctl: top needs a terminal: stdin is not one")


def _closed_early(home: Path, *args: str) -> tuple[int, str]:
    """Run ``agentctl ARGS`` into a pipe whose reader leaves after one byte (``| head -c1``)."""
    proc = subprocess.Popen(
        [str(BIN / "agentctl"), *args],
        env={**os.environ, "AGENTD_HOME": str(home)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(1)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    return proc.wait(timeout=60), err


@pytest.mark.slow
def test_a_closed_pipe_ends_quietly_with_sigpipes_code(dhome: Path, serve: list[Served]) -> None:
    write_unit(dhome, "s", {"command": fake("spam:4000", "wait"), "inject": {"mode": "none"}})
    d = Served(dhome)
    serve.append(d)
    d.ready()
    poll_for(
        lambda: (
            (dhome / "logs" / "s" / "transcript.log").stat().st_size > 150_000
            if (dhome / "logs" / "s" / "transcript.log").exists()
            else False
        ),
        timeout=30,
        what="s's output",
    )
    # line by line (one write of it all may be taken whole by a pipe that closes under it)
    assert _closed_early(dhome, "logs", "-n", "4000") == (141, "")


def test_events_into_a_closed_pipe_end_quietly(home: Path) -> None:
    """Read from the file (no agentd answers), enough events to fill a pipe."""
    (home / "logs").mkdir()
    event = {"timestamp": "2026-12-01T10:00:00Z", "level": "info", "event": "unit.state"}
    with (home / "logs" / "agentd.jsonl").open("w") as f:
        for i in range(3000):
            f.write(json.dumps({**event, "unit": "u", "session": i, "to": "running"}) + "\n")
    code, err = _closed_early(home, "events", "-n", "3000")
    assert code == 141 and err.startswith("agentctl: no agentd answers; read from "), err
    assert len(err.splitlines()) == 1


@pytest.mark.slow
def test_colour_by_state_only_where_asked_or_seen(dhome: Path, serve: list[Served]) -> None:
    write_unit(dhome, "up", {"command": fake("wait"), "inject": {"mode": "none"}})
    write_unit(
        dhome,
        "down",
        {
            "command": fake("exit:3"),
            "inject": {"mode": "none"},
            "state": {"dir": ".agent-d"},
            "restart": {"on_failure": False},
        },
    )
    d = Served(dhome)
    serve.append(d)
    d.ready()
    poll_for(lambda: d.status("down")["state"] == "failed", what="down to fail")
    poll_for(lambda: d.status("up")["state"] == "running", what="up to run")
    piped = run(dhome, "agentctl", "status")
    assert ESC not in piped.stdout and "failed" in piped.stdout  # a pipe: plain
    always = run(dhome, "agentctl", "status", "--color", "always").stdout
    assert f"{ESC}32mrunning" in always and f"{ESC}1;31mfailed" in always
    assert ESC not in run(dhome, "agentctl", "status", "--color", "never").stdout
    seen = on_a_terminal(dhome, "status")
    assert f"{ESC}32mrunning" in seen and f"{ESC}1;31mfailed" in seen
    assert ESC not in on_a_terminal(dhome, "status", NO_COLOR="1")
    assert f"{ESC}1;31m" in on_a_terminal(dhome, "status", "down")  # the detail view too
    history = run(dhome, "agentctl", "history", "down", "--color", "always").stdout
    assert f"{ESC}31mcrashed" in history
    assert ESC not in run(dhome, "agentctl", "history", "down").stdout
    events = run(dhome, "agentctl", "events", "--color", "always").stdout
    assert f"{ESC}1;31munit.state" in events  # -> failed
    checked = run(dhome, "agentd", "check", "--color", "always")
    assert f"{ESC}32mok{ESC}0m" in checked.stdout
    assert ESC not in run(dhome, "agentd", "check").stdout


@pytest.mark.slow
def test_times_are_shown_in_one_style(dhome: Path, serve: list[Served]) -> None:
    write_unit(dhome, "t", {"command": fake("exit:0"), "inject": {"mode": "none"}})
    d = Served(dhome)
    serve.append(d)
    d.ready()
    poll_for(lambda: d.status("t")["state"] == "done", what="t to be done")
    stamp = re.compile(r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\b")
    history = run(dhome, "agentctl", "history", "t").stdout.splitlines()[1]
    events = run(dhome, "agentctl", "events", "t").stdout.splitlines()
    detail = run(dhome, "agentctl", "status", "t").stdout
    started = stamp.search(history)
    assert started and "T" not in history.split()[1] and not history.split()[2].endswith("Z")
    assert all(stamp.match(line) for line in events), events
    assert "Active: done since " in detail and stamp.search(detail)
    local = time.strftime("%Y-%m-%d %H", time.localtime())
    assert started.group().startswith(local[:10])


@pytest.mark.slow
def test_two_units_sharing_a_state_dir(dhome: Path, serve: list[Served]) -> None:
    """``fin`` (started first: units start in name order) holds the state dir; ``other``
    shows ``conflict`` naming it, and starts by itself once fin no longer runs."""
    write_unit(
        dhome,
        "fin",
        {"command": fake("wait"), "inject": {"mode": "none"}, "stop": {"grace": "300ms"}},
    )
    write_unit(dhome, "other", {"command": fake("exit:0"), "inject": {"mode": "none"}})
    checked = run(dhome, "agentd", "check")
    assert checked.returncode == 1
    shared = dhome / "work" / ".agent"
    for name, peer in (("fin", "other"), ("other", "fin")):
        said = f"{name}.yaml:1: state.dir: {shared} is also the state dir of {peer} "
        assert said in checked.stderr, checked.stderr
    d = Served(dhome)
    serve.append(d)
    d.ready()
    poll_for(lambda: d.status("other")["state"] == "conflict", what="other in conflict")
    poll_for(lambda: d.status("fin")["state"] == "running", what="fin to run")
    assert "its state dir" in d.status("other")["detail"]
    assert "is in use by unit fin" in d.status("other")["detail"]
    table = run(dhome, "agentctl", "status").stdout
    assert re.search(r"other\s+conflict\s.*in use by unit fin", table), table
    assert run(dhome, "agentctl", "status", "other").returncode == 3
    assert run(dhome, "agentctl", "stop", "fin").returncode == 0
    poll_for(lambda: d.status("other")["state"] == "done", what="other to run once fin stopped")
