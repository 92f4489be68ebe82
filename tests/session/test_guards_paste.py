"""The bootstrap reaches a TUI as one submitted message (``tests/fake_tui.py``).

A TUI in raw mode takes a bracketed paste as one message and submits it on a
CR that comes after the paste, not with it. So agentd must (a) see the
program turn bracketed paste on even when that switch reaches it in two
reads, and (b) wait after the paste before it sends the submit key.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.support import agentd, events, write_unit

FAKE_TUI = str(Path(__file__).resolve().parents[1] / "fake_tui.py")


def test_the_bootstrap_reaches_a_tui_as_one_paste_and_is_submitted(
    home: Path, tmp_path: Path
) -> None:
    got = tmp_path / "tui.json"
    write_unit(
        home,
        "tui",
        {
            "command": [sys.executable, FAKE_TUI],
            "env": {"FAKE_TUI_FILE": str(got)},
            "inject": {"mode": "stdin", "after": "READY>"},
        },
    )
    res = agentd(home, "run", "tui")
    assert res.returncode == 0, res.stderr
    verdict = json.loads(got.read_text())
    boot = (home / "logs" / "tui" / "bootstrap-1.md").read_text()
    # (a) the switch split across two reads was seen: the text came as a paste
    assert verdict["paste"] is True, verdict
    assert verdict["text"] == boot and boot.count("\n") > 3
    # (b) the Enter came after the paste, not with it: the message was submitted
    assert verdict["submitted"] is True, verdict
    [inj] = events(home, "session.inject")
    assert inj["bracketed_paste"] is True
