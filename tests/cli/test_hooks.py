"""The PreCompact hook waits for the CLI that runs it to exit (``agentd.cli.agentctl.hooks``):
with a pidfd, and where there is none by watching its parent pid change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentd.cli.agentctl import hooks
from tests.support import poll_for

# The hook: tells its parent it waits, then notes whether and when its parent exited.
HOOK = r"""
import json, os, sys, time
from agentd.cli.agentctl import hooks
if sys.argv[2] == "no-pidfd":
    del os.pidfd_open
parent = os.getppid()
os.write(1, b"waiting\n")
started = time.monotonic()
done = hooks.wait_for_exit_of_parent(parent, 10)
tmp = sys.argv[1] + ".tmp"
with open(tmp, "w") as f:
    json.dump({"done": done, "after": time.monotonic() - started}, f)
os.replace(tmp, sys.argv[1])
"""
# The CLI: runs the hook, lives on a while, exits without waiting for it.
CLI = r"""
import os, subprocess, sys, time
hook = subprocess.Popen([sys.executable, "-c", sys.argv[1], *sys.argv[2:]], stdout=subprocess.PIPE)
hook.stdout.readline()
time.sleep(0.3)
os._exit(0)
"""


@pytest.mark.parametrize("how", ["pidfd", "no-pidfd"])
def test_the_hook_returns_as_soon_as_its_parent_has_exited(tmp_path: Path, how: str) -> None:
    waited = tmp_path / "waited.json"
    subprocess.run(
        [sys.executable, "-c", CLI, HOOK, str(waited), how],
        check=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    got = poll_for(
        lambda: waited.exists() and json.loads(waited.read_text()),
        timeout=10,
        what="the hook to note its parent's exit",
    )
    assert got["done"] is True  # the parent exited, not the bound (10 s) ran out...
    assert 0.25 <= got["after"] < 5, got  # ...it waited for the CLI, and saw it go long before


@pytest.mark.parametrize("how", ["pidfd", "no-pidfd"])
def test_the_hook_gives_up_on_a_parent_that_stays(
    monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    if how == "no-pidfd":
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    started = time.monotonic()
    assert hooks.wait_for_exit_of_parent(os.getppid(), 0.2) is False
    assert 0.15 <= time.monotonic() - started < 5  # its own bound, not a hang
