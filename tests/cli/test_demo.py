"""``agentd demo`` end to end: the demo agent keeps its state with
``agentctl state`` and every restarted session picks up where it was."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_demo_finishes_with_every_session_picked_up() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentd.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = done.stdout.strip().splitlines()
    assert rows[0].split()[:4] == ["session", "ran", "ended", "by"]
    assert [r.split()[0] for r in rows[1:]] == ["1", "2", "3"]
    assert "sentinel:compaction" in rows[1] and "Map the 23 Redis call sites" in rows[1]
    assert "exit:42" in rows[2] and rows[2].endswith("(picked up)")
    assert "exit:0" in rows[3] and rows[3].endswith("(picked up)")
