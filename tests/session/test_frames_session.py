"""A session shows a frame its program left open (a synchronized update never
ended), as a terminal does after its timeout: a sentinel drawn inside it fires."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from pathlib import Path

import pytest

from agentd.session import session as session_module
from agentd.session.child import Child
from agentd.session.session import Session
from agentd.session.transcript import Transcript
from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Hit, Rule

AGENT = r"""
import sys, time
sys.stdout.write("\x1b[?2026h\x1b[2;1HConversation compacted\x1b[5;1H")
sys.stdout.flush()
time.sleep(30)
"""


@pytest.mark.slow
def test_a_frame_left_open_is_shown_after_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_module, "FRAME_TIMEOUT", 0.2)
    hits: list[Hit] = []

    async def main() -> None:
        child = Child.spawn([sys.executable, "-c", AGENT], cwd=tmp_path, env=os.environ)
        session = Session(
            number=1,
            child=child,
            marker="",
            on_output=hits.extend,
            matcher=LineMatcher([Rule("compacted", re.compile("Conversation compacted"))]),
            transcript=Transcript(tmp_path / "t.log", max_bytes=0, backups=0),
        )
        session.start()
        deadline = time.monotonic() + 10
        while not hits and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert session.matcher.in_frame is False, "the frame was not ended"
        await session.end(15, 2.0)  # SIGTERM
        session.close()
        session.transcript.close()

    asyncio.run(main())
    assert [h.rule.name for h in hits] == ["compacted"]
