"""Session: a real child on a real pty, driven by the asyncio loop."""

from __future__ import annotations

import asyncio
import os
import re
import select
import sys
from pathlib import Path

import psutil

from agentd.session.child import Child
from agentd.session.screen import ScreenRing
from agentd.session.session import Session
from agentd.session.transcript import Transcript
from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Hit, Rule
from tests.support import async_poll_for, async_wait_for, fake, poll_for


def test_output_buffered_at_the_exit_is_matched_before_the_exit_is_reported(
    tmp_path: Path,
) -> None:
    """The last output of an agent may be its verdict (a sentinel): it is read
    and matched before ``exited`` resolves, while the triggers still listen."""
    hits: list[Hit] = []

    async def main() -> None:
        child = Child.spawn(
            [sys.executable, "-c", "print('FINAL LINE of the agent')"], cwd=tmp_path, env=os.environ
        )
        # Exited, its output waiting in the pty, nothing read yet: the state
        # the loop sees when the exit and the last output come together.
        poll_for(
            lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE,
            what="the child to exit",
        )
        assert select.select([child.fd], [], [], 10)[0], "no output came"
        session = Session(
            number=1,
            child=child,
            marker="",
            on_output=hits.extend,
            matcher=LineMatcher([Rule("final", re.compile("FINAL LINE"))]),
            transcript=Transcript(tmp_path / "t.log", max_bytes=0, backups=0),
        )
        session.start()  # sees the exit at once
        assert session.exited.done()
        assert [h.rule.name for h in hits] == ["final"]
        session.close()
        session.transcript.close()

    asyncio.run(main())
    assert "FINAL LINE of the agent" in (tmp_path / "t.log").read_text()


def test_a_resize_reaches_the_agent_and_the_screens(tmp_path: Path) -> None:
    """The pty gets the new size (the agent its SIGWINCH), the matcher's screen and
    the screen ring follow, and the sentinel the agent draws again fires once."""
    hits: list[Hit] = []
    raw = bytearray()

    async def main() -> None:
        child = Child.spawn(
            fake(
                "out:TASK COMPLETE",
                "size",
                "winch",
                "raw:\\x1b[H\\x1b[2J",
                "out:TASK COMPLETE",
                "size",
                "exit:0",
            ),
            cwd=tmp_path,
            env=os.environ,
            cols=100,
            rows=30,
        )
        ring = ScreenRing(100, 30, session=1)
        session = Session(
            number=1,
            child=child,
            marker="",
            on_output=hits.extend,
            on_raw=raw.extend,
            matcher=LineMatcher([Rule("done", re.compile("TASK COMPLETE"))], cols=100, rows=30),
            transcript=Transcript(tmp_path / "t.log", max_bytes=0, backups=0),
            screen=ring,
        )
        session.start()
        await async_poll_for(lambda: b"SIZE:100x30" in raw, what="the agent's first size")
        session.resize(100, 30)  # the size it has: nothing happens
        session.resize(80, 24)
        await async_wait_for(
            session.exited, timeout=10, what="the agent to exit", seen=lambda: bytes(raw[-200:])
        )
        session.close()
        session.transcript.close()
        assert b"WINCH:80x24" in raw and b"SIZE:80x24" in raw
        assert [h.rule.name for h in hits] == ["done"]
        assert len(session.matcher.display()) == 24
        drawn = ring.capture().draw()
        assert (drawn.cols, len(drawn.rows)) == (80, 24)
        assert drawn.rows[:2] == ["TASK COMPLETE", "SIZE:80x24"]

    asyncio.run(main())
