"""Hostile state, full disks and greedy clients against the real daemon (issue 11).

Each test is one probe that once broke agentd; while it runs, a watcher asks
``status`` every 50 ms and the test asserts that every answer came within a
second. Probes that need the machine's help (a tmpfs to fill, a read-only
mount, a cgroup) skip with the reason when this machine does not allow it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import QUICK, Served, StatusWatch, events, fake, poll_for, write_unit


def no_traceback(daemon: Served) -> None:
    assert "Traceback" not in daemon.stderr, daemon.stderr[-3000:]


@contextlib.contextmanager
def mounted_tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` at ``path`` (skips the test when this machine does not allow it)."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}): "
            "the disk-full probe needs one"
        )
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def fill(directory: Path) -> Path:
    """Write a file in ``directory`` until the disk is full; the file."""
    filler = directory / "filler"
    with filler.open("wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 65536)
            f.flush()
    return filler


@pytest.fixture
def small_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An AGENTD_HOME (and workdir) on a 4 MiB tmpfs of its own."""
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="af", dir="/tmp"))
    try:
        with mounted_tmpfs(root, "4m"):
            (root / "units").mkdir()
            (root / "work").mkdir()
            monkeypatch.setenv("AGENTD_HOME", str(root))
            monkeypatch.delenv("AGENTD_SOCKET", raising=False)
            yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_a_full_disk_degrades_and_nothing_wedges_or_is_missed(
    small_home: Path, tmp_path: Path
) -> None:
    full = tmp_path / "disk-full"  # (not on the full disk)
    write_unit(
        small_home,
        "u",
        {
            "command": fake(
                f"if-session:1:until:{full}",
                "if-session:1:spam:200",
                "if-session:1:out:Compacting conversation",
                "out:up",
                "wait",
            ),
            "sentinels": [
                {"name": "compacting", "match": "Compacting conversation", "action": "restart"}
            ],
            "restart": QUICK,
            "stop": {"grace": "1s"},
        },
    )
    daemon = Served(small_home).ready()
    filler: Path | None = None
    try:
        with StatusWatch(daemon.socket) as watch:
            poll_for(lambda: daemon.status("u")["state"] == "running", what="session 1")
            filler = fill(small_home)
            full.touch()  # the agent goes on: its output and sentinel meet a full disk
            # the sentinel comes while nothing can be written: it is matched all the same
            poll_for(
                lambda: (
                    daemon.status("u")["session"] == 2 and daemon.status("u")["state"] == "running"
                ),
                timeout=20,
                what="the sentinel seen on a full disk, session 2 running",
            )
            poll_for(
                lambda: "events" in {d["what"] for d in daemon.call("status").get("degraded", [])},
                what="status to show the daemon degraded",
            )
            # (a write may work again for a while: a deleted file frees a block)
            for what in ("events", "transcript:u"):
                assert f"degraded: {what} writes fail" in daemon.stderr, daemon.stderr
            # state transitions complete: restart and stop answer, the unit is not wedged
            assert daemon.result("restart", units=["u"])[0]["session"] == 3
            assert daemon.result("stop", units=["u"])[0]["state"] == "stopped"
            filler.unlink()  # space returns: writes resume
            filler = None
            assert daemon.result("start", units=["u"])[0]["state"] == "running"
            poll_for(
                lambda: any(
                    e.get("what") == "events" for e in events(small_home, "daemon.recovered")
                ),
                what="the event log to take lines again",
            )
            assert "degraded" not in daemon.call("status") or all(
                d["what"] != "events" for d in daemon.call("status")["degraded"]
            )
        watch.check()
        assert daemon.stop() == 0
        assert events(small_home, "daemon.stop")
        no_traceback(daemon)
    finally:
        if filler is not None:
            filler.unlink()
        daemon.stop()


@pytest.mark.slow
def test_sigterm_on_a_full_disk_still_stops_cleanly(small_home: Path) -> None:
    write_unit(small_home, "u", {"command": fake("out:up", "wait"), "stop": {"grace": "1s"}})
    daemon = Served(small_home).ready()
    try:
        with StatusWatch(daemon.socket) as watch:
            poll_for(lambda: daemon.status("u")["state"] == "running", what="session 1")
            fill(small_home)
            assert daemon.result("restart", units=["u"])[0]["state"] == "running"
        watch.check()
        assert daemon.stop() == 0
        no_traceback(daemon)
    finally:
        daemon.stop()


@pytest.mark.slow
def test_a_logs_dir_that_cannot_be_written_degrades_anywhere(
    dhome: Path, serve: list[Served]
) -> None:
    """The portable probe (no mount needed, root or not): the logs dir becomes a
    regular file, so every write of events, transcripts and histories fails."""
    broken = dhome / "logs-broken"
    write_unit(
        dhome,
        "u",
        {
            "command": fake(
                f"if-session:1:until:{broken}",
                "if-session:1:out:Compacting conversation",
                "out:up",
                "wait",
            ),
            "sentinels": [
                {"name": "compacting", "match": "Compacting conversation", "action": "restart"}
            ],
            "restart": QUICK,
            "stop": {"grace": "1s"},
        },
    )
    daemon = Served(dhome)
    serve.append(daemon.ready())
    logs = dhome / "logs"
    with StatusWatch(daemon.socket) as watch:
        poll_for(lambda: daemon.status("u")["state"] == "running", what="session 1")
        logs.rename(dhome / "logs.gone")  # at once: the daemon writes into it meanwhile
        logs.write_text("not a dir\n")
        broken.touch()  # the agent goes on: its sentinel comes with no logs dir
        # the sentinel comes while nothing can be written: it is matched all the same
        poll_for(
            lambda: daemon.status("u")["session"] == 2 and daemon.status("u")["state"] == "running",
            timeout=20,
            what="the sentinel seen with no logs dir, session 2 running",
        )
        failing = {d["what"] for d in daemon.call("status").get("degraded", [])}
        assert {"events", "transcript:u", "history:u"} <= failing, failing
        shown = subprocess.run(
            [sys.executable, "-m", "agentd.cli.agentctl", "status"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert shown.returncode == 0 and "agentd is degraded: events writes fail" in shown.stderr, (
            shown
        )
        assert daemon.result("stop", units=["u"])[0]["state"] == "stopped"
        logs.unlink()  # the logs dir can be made again: writes resume
        assert daemon.result("start", units=["u"])[0]["state"] == "running"
        poll_for(
            lambda: any(e.get("what") == "events" for e in events(dhome, "daemon.recovered")),
            what="the event log to take lines again",
        )
    watch.check()
    assert daemon.stop() == 0
    assert events(dhome, "daemon.stop")
    assert "degraded: events writes fail" in daemon.stderr  # the console said it once
    assert daemon.stderr.count("degraded: events writes fail") == 1
    no_traceback(daemon)


@pytest.mark.slow
def test_a_read_only_state_dir_in_file_mode_backs_off_and_recovers(
    dhome: Path, serve: list[Served]
) -> None:
    work = dhome / "work"
    state = work / ".agent"
    state.mkdir(parents=True)
    (state / "state.json").write_text(json.dumps({"mission": "m", "next_action": "n"}))
    write_unit(
        dhome,
        "f",
        {
            "command": fake("bootstrap", "wait"),
            "inject": {"mode": "file"},
            "autostart": False,
            "restart": QUICK,
        },
    )
    done = subprocess.run(
        ["mount", "--bind", "-o", "ro", str(state), str(state)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0:  # older mounts take ro only on a remount
        subprocess.run(["mount", "-o", "remount,ro,bind", str(state)], check=False)
    if done.returncode != 0 or _writable(state):
        pytest.skip(f"cannot make a read-only bind mount here: {done.stderr.strip()}")
    try:
        daemon = Served(dhome)
        serve.append(daemon.ready())
        with StatusWatch(daemon.socket) as watch:
            daemon.call("start", units=["f"])
            poll_for(
                lambda: (
                    daemon.status("f")["last_reason"] == "spawn-error"
                    and daemon.status("f")["state"] in ("backoff", "starting")
                ),
                what="a spawn error, then a back-off",
            )
            said = [e for e in events(dhome, "session.exit") if e["reason"] == "spawn-error"]
            assert "Read-only file system" in said[0]["error"], said
            assert any(d["what"] == "state:f" for d in daemon.call("status")["degraded"])
            subprocess.run(["umount", str(state)], check=True)
            poll_for(
                lambda: daemon.status("f")["state"] == "running",
                timeout=20,
                what="the session to start once the state dir is writable",
            )
            assert daemon.result("stop", units=["f"])[0]["state"] == "stopped"
        watch.check()
        no_traceback(daemon)
    finally:
        subprocess.run(["umount", str(state)], capture_output=True, check=False)


@pytest.mark.slow
def test_a_file_mode_bootstrap_that_cannot_be_written_backs_off_and_recovers(
    dhome: Path, serve: list[Served]
) -> None:
    """The portable form of the read-only state dir (root writes through modes):
    the bootstrap's directory is a regular file, so the write fails anywhere."""
    blocker = dhome / "work" / "in"
    blocker.write_text("a file where the bootstrap's directory should be\n")
    write_unit(
        dhome,
        "f",
        {
            "command": fake("bootstrap", "wait"),
            "inject": {"mode": "file", "path": "in/boot.md"},
            "restart": QUICK,
            "stop": {"grace": "1s"},
        },
    )
    daemon = Served(dhome)
    serve.append(daemon.ready())
    with StatusWatch(daemon.socket) as watch:
        poll_for(lambda: daemon.status("f")["last_reason"] == "spawn-error", what="a spawn error")
        said = [e for e in events(dhome, "session.exit") if e["reason"] == "spawn-error"]
        assert "cannot write the bootstrap the agent reads" in said[0]["error"], said
        assert any(d["what"] == "state:f" for d in daemon.call("status")["degraded"])
        assert daemon.status("f")["state"] in ("backoff", "starting")  # tried again
        blocker.unlink()
        poll_for(
            lambda: daemon.status("f")["state"] == "running",
            timeout=20,
            what="the session to start once the bootstrap can be written",
        )
        assert daemon.result("stop", units=["f"])[0]["state"] == "stopped"
    watch.check()
    assert daemon.stop() == 0
    no_traceback(daemon)


def _writable(directory: Path) -> bool:
    try:
        (directory / ".probe").write_text("x")
    except OSError:
        return False
    (directory / ".probe").unlink()
    return True


def _status_rows(daemon: Served) -> dict[str, dict[str, Any]]:
    return {row["unit"]: row for row in daemon.result("status")}


@pytest.mark.slow
def test_a_fifo_and_dev_zero_in_the_state_dir_block_nothing(
    dhome: Path, serve: list[Served]
) -> None:
    state = dhome / "work" / ".agent"
    state.mkdir(parents=True)
    (state / "state.json").write_text(json.dumps({"mission": "m", "next_action": "n"}))
    os.mkfifo(state / "scratch.md")
    (state / "constraints.md").symlink_to("/dev/zero")
    write_unit(dhome, "h", {"command": fake("bootstrap", "wait"), "stop": {"grace": "1s"}})
    write_unit(
        dhome, "other", {"command": fake("out:up", "wait"), "state": {"dir": ".agent-other"}}
    )
    daemon = Served(dhome)
    serve.append(daemon.ready())
    with StatusWatch(daemon.socket) as watch:
        poll_for(
            lambda: all(r["state"] == "running" for r in _status_rows(daemon).values()),
            what="both units running",
        )
        boot = (dhome / "logs" / "h" / "bootstrap-1.md").read_text()
        assert "scratch.md" in boot and "FIFO" in boot
        assert "outside the state dir" in boot
    watch.check()
    assert daemon.stop() == 0  # SIGTERM is heard
    no_traceback(daemon)


@pytest.mark.slow
def test_nul_and_ctrl_c_in_state_reach_no_agent(dhome: Path, serve: list[Served]) -> None:
    for name in ("a", "s"):
        state = dhome / "work" / f".agent-{name}"
        state.mkdir(parents=True)
        (state / "state.json").write_text(json.dumps({"mission": "m", "next_action": "n"}))
        (state / "scratch.md").write_bytes(b"note \x00 and \x03 and \x1b[2J\n")
    write_unit(
        dhome,
        "a",
        {"command": fake("args", "wait", "--", "{bootstrap}"), "state": {"dir": ".agent-a"}},
    )  # argv injection
    write_unit(
        dhome,
        "s",
        {
            "command": fake("prompt:> ", "wait"),
            "inject": {"mode": "stdin"},
            "state": {"dir": ".agent-s"},
        },
    )
    daemon = Served(dhome)
    serve.append(daemon.ready())

    def said(unit: str, text: str) -> bool:
        path = dhome / "logs" / unit / "transcript.log"
        return path.exists() and text in path.read_text(errors="replace")

    # argv: the agent got its bootstrap (no exec failure, no daemon in its pty)
    # (the fake agent prints its arguments as JSON: each backslash doubled)
    poll_for(lambda: said("a", "note \\\\x00 and \\\\x03 and"), what="the argv bootstrap")
    # stdin: the escaped text is typed (the pty echoes it); a raw ^C would end the session
    poll_for(lambda: said("s", "and \\x03 and \\x1b[2J"), what="the typed bootstrap's echo")
    for unit in ("a", "s"):
        status = daemon.status(unit)
        assert (status["state"], status["session"]) == ("running", 1), status
    assert not [e for e in events(dhome, "session.exit")], "a session ended"
    assert daemon.stop() == 0
    no_traceback(daemon)


def test_a_deleted_workdir_is_a_spawn_error(dhome: Path, serve: list[Served]) -> None:
    work = dhome / "elsewhere"
    work.mkdir()
    write_unit(
        dhome,
        "w",
        {
            "command": fake("out:up", "wait"),
            "workdir": str(work),
            "state": {"dir": str(dhome / "state-w")},
            "restart": QUICK,
            "stop": {"grace": "1s"},
        },
    )
    daemon = Served(dhome)
    serve.append(daemon.ready())
    with StatusWatch(daemon.socket) as watch:
        poll_for(lambda: daemon.status("w")["state"] == "running", what="session 1")
        shutil.rmtree(work)
        daemon.call("restart", units=["w"])
        poll_for(lambda: daemon.status("w")["last_reason"] == "spawn-error", what="a spawn error")
    watch.check()
    [said] = [e for e in events(dhome, "session.exit") if e["reason"] == "spawn-error"][:1]
    assert f"the workdir {work} does not exist" in said["error"], said
    assert not [e for e in events(dhome, "session.exit") if e["reason"] == "exit:1"]
    assert daemon.stop() == 0
    no_traceback(daemon)
