"""Where a person sees the completion check under the real `agentd serve --http`:
`agentctl status` and `history`, the dashboard's pages and timeline, and `agentctl
top` (in tmux): a check running, a refused completion and one that passed."""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from agentd.daemon.dashboard.timeline import COLOURS
from tests.support import Served, Tmux, agentctl, dashboard_daemon, poll_for, write_unit

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

CHECK = "test -s done.txt"
AGENTCTL = f"{sys.executable} -m agentd.cli.agentctl"


def claimer(tmp: Path, work_from: int) -> list[str]:
    """Does the work from session ``work_from`` on; always claims completion, exits 0."""
    script = tmp / f"claim-{work_from}.sh"
    script.write_text(
        textwrap.dedent(f"""\
            if [ "$AGENTD_SESSION" -ge {work_from} ]; then echo work > done.txt; fi
            {AGENTCTL} state complete "claimed by session $AGENTD_SESSION"
        """)
    )
    return ["sh", str(script)]


def test_status_history_dashboard_and_top_show_the_check(
    dhome: Path,
    serve: list[Served],
    tmp_path: Path,
) -> None:
    shown, slow = dhome / "shown", dhome / "slow"
    shown.mkdir()
    slow.mkdir()
    quick = {"min_uptime": "0s", "delay": "50ms"}
    write_unit(
        dhome,
        "shown",
        {
            "command": claimer(tmp_path, 2),
            "workdir": str(shown),
            "inject": {"mode": "none"},
            "restart": quick,
            "complete": {"verify": CHECK},
        },
    )
    write_unit(
        dhome,
        "slow",
        {
            "command": claimer(tmp_path, 1),
            "workdir": str(slow),
            "inject": {"mode": "none"},
            "restart": quick,
            "complete": {"verify": "sleep 600"},
        },
    )
    d, site = dashboard_daemon(dhome, serve)
    poll_for(lambda: d.status("shown")["state"] == "done", timeout=40, what="shown done")
    poll_for(lambda: "verifying" in d.status("slow"), timeout=40, what="slow checking")

    table = agentctl(dhome, "status").stdout
    slow_row = next(line for line in table.splitlines() if line.startswith("slow "))
    assert "stopping" in slow_row and "checking `sleep 600`" in slow_row, table
    history = agentctl(dhome, "history", "shown").stdout.splitlines()
    assert [" verify-failed " in row for row in history[1:]] == [True, False], history
    assert [" done (checked) " in row for row in history[1:]] == [False, True], history

    code, _, index = site.get("/")
    assert code == 200
    assert "<th>Check</th>" in index
    assert 'class="check">passed (`test -s done.txt` after session 2, ' in index
    assert 'class="check">checking `sleep 600` (' in index
    code, _, page = site.get("/units/shown")
    assert code == 200 and "<dt>Completion check</dt>" in page
    assert "(check failed)</span>" in page and "(check passed)</span>" in page
    _, _, svg = site.get("/units/shown/timeline.svg")
    assert 'class="session o-verify-failed" data-session="1"' in svg
    assert COLOURS["verify-failed"] in svg

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux): agentctl top not checked")
    with Tmux(150, 10, env={"AGENTD_HOME": str(dhome), "LANG": "C.UTF-8"}) as (tmux, _):
        tmux("respawn-pane", "-k", f"{sys.executable} -m agentd.cli.agentctl top")

        def cells() -> dict[str, list[str]]:
            rows = map(str.split, tmux("capture-pane", "-p").splitlines())
            return {r[0]: r for r in rows if r and r[0] in ("shown", "slow")}

        poll_for(
            lambda: (
                (c := cells()).get("shown", [])[7:8] == ["passed"]
                and c.get("slow", [])[7:8] == ["checking"]
            ),
            timeout=60,  # top's own start-up (click, its screen) on loaded cores
            what="top's CHECK column",
            seen=lambda: tmux("capture-pane", "-p"),
        )
        tmux("send-keys", "q")
        poll_for(lambda: tmux("list-sessions") == "", what="top to quit")
