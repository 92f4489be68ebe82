"""Log files bounded by size and reopened when moved: the event log, a unit's
history, the kept bootstraps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentd.events import EventLog
from agentd.supervisor.records.history import History
from tests.support import agentd, fake, write_unit


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_event_log_rotates_by_size_and_reopens_a_deleted_file(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "agentd.jsonl"
    log = EventLog(path, max_bytes=400, backups=2)
    for n in range(20):
        log.emit("unit.state", n=n)
    assert sorted(p.name for p in path.parent.iterdir()) == [
        "agentd.jsonl",
        "agentd.jsonl.1",
        "agentd.jsonl.2",
    ]
    assert all(p.stat().st_size <= 400 for p in path.parent.iterdir())
    assert _lines(path)[-1]["n"] == 19
    path.unlink()
    log.emit("daemon.reload", why="test")
    assert [e["event"] for e in _lines(path)] == ["daemon.reload"]
    os.replace(path, tmp_path / "moved.jsonl")  # logrotate moves it, then SIGHUP
    log.reopen()
    log.emit("daemon.stop")
    log.close()
    assert [e["event"] for e in _lines(path)] == ["daemon.stop"]


def test_history_keeps_its_newer_half_past_max_bytes(tmp_path: Path) -> None:
    history = History(tmp_path / "history.jsonl", max_bytes=2000)
    for n in range(1, 61):
        history.append({"kind": "start", "session": n, "pad": "x" * 40})
    assert history.path.stat().st_size <= 2000
    kept = [r["session"] for r in history.recent()]
    older = [
        json.loads(line)["session"]
        for line in (tmp_path / "history.jsonl.1").read_text().splitlines()
    ]
    assert kept[-1] == 60 and history.last_session() == 60  # numbers go on
    assert older[-1] + 1 == kept[0]  # split on a line, nothing lost or doubled between them


@pytest.mark.slow
def test_only_the_last_keep_bootstraps_are_kept(home: Path) -> None:
    write_unit(
        home,
        "b",
        {
            "command": fake("if-session:4:exit:0", "exit:42"),
            "restart": {"min_uptime": 0, "delay": "10ms"},
            "logs": {"keep_bootstraps": 2},
        },
    )
    res = agentd(home, "run", "b")
    assert res.returncode == 0, res.stderr
    kept = sorted(p.name for p in (home / "logs" / "b").glob("bootstrap-*.md"))
    assert kept == ["bootstrap-3.md", "bootstrap-4.md"]
