"""Unit files the daemon cannot use: they are units too (state ``invalid`` in
status), each problem is reported once, and no file holds up the loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import Served, events, fake, poll_for, write_unit


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path


@pytest.mark.slow
def test_an_invalid_unit_is_listed_with_its_problem(dhome: Path, serve: list[Served]) -> None:
    bad = _write(
        dhome / "units" / "ww.yaml",
        f"command: [sleep, '60']\nworkdir: {dhome}\nrestart:\n  exit_code: [3]\n",
    )
    d = Served(dhome)
    serve.append(d.ready())
    [status] = d.result("status", units=["ww"])
    assert status["state"] == "invalid" and status["pid"] is None and status["since"]
    assert status["invalid"] == {
        "file": str(bad),
        "line": 4,
        "key": "restart.exit_code",
        "message": "unknown key (did you mean exit_codes?)",
    }
    assert [s["unit"] for s in d.result("status")] == ["ww"]  # listed with the others
    ctl = subprocess.run(
        [sys.executable, "-m", "agentd.cli.agentctl", "status", "ww"],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, AGENTD_HOME=str(dhome)),
    )
    assert ctl.returncode == 3  # not running
    assert f"{bad}:4: restart.exit_code: unknown key (did you mean exit_codes?)" in ctl.stdout
    assert ":?:" not in ctl.stdout + d.stderr
    refused = d.call("start", units=["ww"])
    assert refused["code"] == 1 and "does not load" in refused["error"]


@contextlib.contextmanager
def reads_of(path: Path) -> Iterator[Callable[[], int]]:
    """How many times ``path`` has been opened for reading and closed since the
    block began, by any process (inotify, through watchdog)."""
    from watchdog.events import FileClosedNoWriteEvent, FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    closed: list[str] = []

    class Reads(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if isinstance(event, FileClosedNoWriteEvent) and event.src_path == str(path):
                closed.append(event.event_type)

    observer = Observer()
    observer.schedule(Reads(), str(path.parent), recursive=False)
    observer.start()
    try:
        yield lambda: len(closed)
    finally:
        observer.stop()
        observer.join(10)


@pytest.mark.slow
def test_each_problem_is_reported_once_per_change(dhome: Path, serve: list[Served]) -> None:
    d = Served(dhome)
    serve.append(d.ready())
    path = dhome / "units" / "u.yaml"
    _write(path, f"command: [sleep, '60']\nworkdir: {dhome}\nautostart: false\nbogus: 1\n")
    poll_for(lambda: events(dhome, "unit.invalid"), what="the first report")
    with reads_of(path) as reads:
        for n in range(3):  # new stats, the same problem: no new report
            seen = reads()
            path.chmod(0o644 if path.stat().st_mode & 0o044 == 0 else 0o600)
            path.chmod(0o600)
            os.utime(path)
            # a rescan of its own: the daemon read the file again (its stat changed)
            poll_for(lambda seen=seen: reads() > seen, what=f"rescan {n + 1} to read {path.name}")
    d.result("reload")
    assert len(events(dhome, "unit.invalid")) == 1
    _write(
        path,
        f"command: [sleep, '60']\nworkdir: {dhome}\nautostart: false\nbogus: 2\nsentinals: []\n",
    )
    poll_for(lambda: len(events(dhome, "unit.invalid")) == 2, what="the changed problem")
    _write(path, f"command: [sleep, '60']\nworkdir: {dhome}\nautostart: false\n")
    poll_for(lambda: d.status("u")["state"] == "stopped", what="the fixed unit")
    assert "invalid" not in d.status("u")
    _write(path, f"command: [sleep, '60']\nworkdir: {dhome}\nautostart: false\nbogus: 1\n")
    poll_for(lambda: len(events(dhome, "unit.invalid")) == 3, what="broken again: reported")
    kept = d.status("u")  # its last good definition is kept, and the file's problem shown
    assert kept["state"] == "stopped" and kept["invalid"]["key"] == "bogus"
    assert events(dhome, "unit.invalid")[-1]["kept"]


def _worst_status_latency(d: Served, during: threading.Event) -> float:
    """Time ``status`` requests back to back until ``during`` is cleared; the slowest."""
    worst = 0.0
    while during.is_set():
        started = time.monotonic()
        assert d.call("status", timeout=10)["ok"]
        worst = max(worst, time.monotonic() - started)
    return worst


@pytest.mark.slow
def test_status_is_answered_while_big_or_many_files_arrive(
    dhome: Path, serve: list[Served]
) -> None:
    d = Served(dhome)
    serve.append(d.ready())
    during = threading.Event()
    during.set()
    worst: list[float] = []
    poller = threading.Thread(target=lambda: worst.append(_worst_status_latency(d, during)))
    poller.start()
    try:
        big = dhome / "units" / "big.yaml"
        with big.open("wb") as f:
            f.write(b"command: [x]\n" + b"#" * (8 * 1024 * 1024) + b"\n")
        big.chmod(0o600)
        poll_for(  # the daemon may first see it empty, as it is created: then its size
            lambda: "over the 1024 KiB" in str(d.call("status", units=["big"])),
            timeout=20,
            what="the 8 MB file to be reported",
        )
        assert "over the 1024 KiB" in d.status("big")["invalid"]["message"]
        for i in range(200):
            write_unit(dhome, f"many{i:03d}", {"command": fake("wait"), "autostart": False})
        poll_for(lambda: len(d.result("status")) == 201, timeout=60, what="200 new units")
    finally:
        during.clear()
        poller.join(30)
    assert not poller.is_alive(), "the status poller did not stop within 30 s"
    # every answer came within the call's deadline (the poller raises otherwise): how
    # fast is a figure for the bench, not a bound for a loaded test machine
    assert worst, "the status poller failed: see its exception above"


@pytest.mark.slow
def test_a_unit_named_like_agentds_own_files_is_invalid_not_fatal(
    dhome: Path, serve: list[Served]
) -> None:
    for name in ("agentd.jsonl", "AGENTD.jsonl.1", "good"):
        write_unit(dhome, name, {"command": fake("out:up", "wait"), "autostart": name == "good"})
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: d.status("good")["state"] == "running", what="the good unit running")
    for name in ("agentd.jsonl", "AGENTD.jsonl.1"):
        status = d.status(name)
        assert status["state"] == "invalid", status
        assert "reserved" in status["invalid"]["message"], status
    assert (dhome / "logs" / "agentd.jsonl").is_file()  # the events file is the daemon's
    assert d.result("reload")["loaded"] == []  # a later reload works too
    checked = subprocess.run(
        [sys.executable, "-m", "agentd.cli", "check", str(dhome / "units" / "agentd.jsonl.yaml")],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert checked.returncode != 0 and "reserved" in checked.stdout + checked.stderr
    assert d.stop() == 0
    assert "Traceback" not in d.stderr


def test_a_unit_that_cannot_be_supervised_stays_invalid_alone(
    dhome: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentd.config.unitfile import load_unit
    from agentd.events import EventLog
    from agentd.paths import Paths
    from agentd.supervisor import api

    real = api.Service

    def service(unit: Any, **kw: Any) -> Any:
        if unit.name == "bad":
            raise OSError(20, "Not a directory")
        return real(unit, **kw)

    monkeypatch.setattr(api, "Service", service)
    units = {
        name: load_unit(write_unit(dhome, name, {"command": fake("wait")}))
        for name in ("bad", "good")
    }

    async def main() -> api.Changes:
        sup = api.Supervisor(Paths.resolve(dhome), EventLog(None))
        try:
            return await sup.reconcile(units)
        finally:
            await sup.shutdown()

    changes = asyncio.run(main())
    assert changes.added == ["good"] and list(changes.failed) == ["bad"]
    assert "Not a directory" in changes.failed["bad"]
