"""``agentd demo`` end to end, through the installed ``agentd``: the demo agent keeps
its state with ``agentctl state``, every restarted session picks up where it was,
and a clean run prints no error line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


@pytest.mark.slow
def test_demo_finishes_with_every_session_picked_up_and_no_error_line(tmp_path: Path) -> None:
    # One run for both (the demo is the suite's longest single command).
    done = subprocess.run(
        [str(BIN / "agentd"), "demo"],
        env={**os.environ, "AGENTD_HOME": str(tmp_path / "h")},
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
    lines = done.stderr.splitlines()
    assert not [line for line in lines if re.search(r"\berror\b", line, re.IGNORECASE)], lines
    assert "injected by argv" in done.stderr
