"""The daemon and logrotate: after the files are moved away, SIGHUP has the
daemon write to new ones (the events and each transcript)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.support import Served, events, fake, poll_for, write_unit


@pytest.mark.slow
def test_sighup_reopens_the_event_log_and_the_transcripts(dhome: Path, serve: list[Served]) -> None:
    write_unit(dhome, "u", {"command": fake("out:hello", "wait"), "stop": {"grace": "300ms"}})
    d = Served(dhome)
    serve.append(d.ready())
    logs = dhome / "logs"
    transcript = logs / "u" / "transcript.log"
    poll_for(lambda: transcript.exists() and "hello" in transcript.read_text(), what="hello")
    os.replace(logs / "agentd.jsonl", logs / "agentd.jsonl.old")
    os.replace(transcript, logs / "u" / "transcript.log.old")
    d.kill(signal.SIGHUP)
    poll_for(lambda: events(dhome, "daemon.reload"), what="the reload, in a new event log")
    d.result("restart", units=["u"])
    poll_for(
        lambda: transcript.exists() and "hello" in transcript.read_text(),
        what="the next session's output in a new transcript",
    )
    assert "session 2 starting" in transcript.read_text()
    assert "session 2" not in (logs / "u" / "transcript.log.old").read_text()
