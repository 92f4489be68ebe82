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
from agentd.session.session import Session
from agentd.session.transcript import Transcript
from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Hit, Rule
from tests.conftest import poll_for


def test_output_buffered_at_the_exit_is_matched_before_the_exit_is_reported(
    tmp_path: Path,
) -> None:
    """The last output of an agent may be its verdict (a sentinel): it is read
    and matched before ``exited`` resolves, while the triggers still listen."""
    hits: list[Hit] = []

    async def main() -> None:
        child = Child.spawn([sys.executable, "-c", "print('FINAL LINE of the agent')"],
                            cwd=tmp_path, env=os.environ)
        # Exited, its output waiting in the pty, nothing read yet: the state
        # the loop sees when the exit and the last output come together.
        poll_for(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE,
                 what="the child to exit")
        assert select.select([child.fd], [], [], 10)[0], "no output came"
        session = Session(
            number=1, child=child, marker="", on_output=hits.extend,
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
