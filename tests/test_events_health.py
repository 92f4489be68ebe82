"""Failed writes of agentd's own files are counted and reported once, never raised."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentd.events import DAEMON_DEGRADED as DEGRADED
from agentd.events import DAEMON_RECOVERED as RECOVERED
from agentd.events import EventLog, WriteHealth
from agentd.session.transcript import Transcript
from agentd.supervisor.records.history import History


class Full:
    """``os.write`` that fails with ENOSPC while ``full`` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = False
        real = os.write

        def write(fd: int, data: Any) -> int:
            if self.full:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(fd, data)

        monkeypatch.setattr(os, "write", write)


def test_a_spell_of_failures_is_reported_once_and_ends_with_a_write_that_works() -> None:
    said: list[tuple[str, dict[str, Any]]] = []
    health = WriteHealth(lambda event, fields: said.append((event, fields)))
    for _ in range(3):
        health.failed("events", "/x", OSError(errno.ENOSPC, "No space left on device"))
    assert [e for e, _ in said] == [DEGRADED] and health.degraded
    assert health.status()[0]["failed"] == 3
    health.ok("events")
    assert [e for e, _ in said] == [DEGRADED, RECOVERED] and not health.degraded
    assert said[1][1]["failed"] == 3


def test_the_event_log_loses_lines_on_a_full_disk_but_never_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = Full(monkeypatch)
    log = EventLog(tmp_path / "agentd.jsonl")
    heard: list[str] = []
    log.subscribe(lambda event: heard.append(event["event"]))
    log.emit("unit.state", unit="u")
    disk.full = True
    log.emit("unit.state", unit="u")  # lost, and reported (the report is lost too)
    log.emit("unit.state", unit="u")
    disk.full = False
    log.emit("session.start", unit="u")
    log.close()
    assert heard.count(DEGRADED) == 1 and heard.count(RECOVERED) == 1
    written = [
        json.loads(line)["event"] for line in (tmp_path / "agentd.jsonl").read_text().splitlines()
    ]
    assert written == ["unit.state", "session.start", RECOVERED]


def test_history_and_transcript_writes_fail_quietly_and_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = Full(monkeypatch)
    health = WriteHealth()
    history = History(tmp_path / "u" / "history.jsonl", health=health)
    transcript = Transcript(
        tmp_path / "u" / "transcript.log",
        max_bytes=0,
        backups=0,
        health=health,
        what="transcript:u",
    )
    disk.full = True
    history.append({"kind": "start", "session": 1})
    transcript.write(b"lost\n")
    assert {s["what"] for s in health.status()} == {"history:u", "transcript:u"}
    disk.full = False
    history.append({"kind": "end", "session": 1})
    transcript.write(b"kept\n")
    transcript.close()
    assert not health.degraded
    assert [r["kind"] for r in history.recent()] == ["end"]
    assert (tmp_path / "u" / "transcript.log").read_bytes().endswith(b"kept\n")
