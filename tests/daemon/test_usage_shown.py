"""Where a person sees what each session spent, under the real `agentd serve --http`:
`agentctl status UNIT` and `history`, the dashboard's unit page and timeline, and
`agentctl top` (in tmux); a session with no records shows its estimate, marked so.

The CLI is a shell that writes a real Claude Code 2.1.332 transcript (from
tests/fixtures/usage, written against a fake model whose numbers are known)
where Claude Code keeps it, then exits; agentd finds it as it finds the real
one's (tests/realcli runs the real CLIs).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from jinja2 import Environment, PackageLoader

from agentd.daemon.dashboard.timeline import COLOURS, layout
from tests.realcli.usage_model import chosen, total
from tests.support import Served, Tmux, agentctl, dashboard_daemon, fake, poll_for, write_unit

TRANSCRIPT = Path(__file__).resolve().parent.parent / "fixtures" / "usage"
TRANSCRIPT /= "claude-code-2.1.332-transcript.jsonl"
SUMS = total([chosen(1), chosen(2)])  # what the fake model reported to the real CLI
EVERY = SUMS["input"] + SUMS["output"] + SUMS["cache_read"] + SUMS["cache_write"]
SID = "2e2b9c5d-428a-4fcd-ba2f-1870a0160bce"  # the session the transcript is of
COST = "$0.016"  # Claude Code's own cost of the two requests: $0.015898


def _unit(home: Path, tmp: Path, name: str, copy: bool) -> None:
    workdir = tmp / name
    workdir.mkdir()
    clihome = tmp / f"{name}-home"
    folder = re.sub(r"[^A-Za-z0-9]", "-", os.path.realpath(workdir))
    where = clihome / ".claude" / "projects" / folder / f"{SID}.jsonl"
    write = f'mkdir -p {shlex.quote(str(where.parent))}; cp {shlex.quote(str(TRANSCRIPT))} "$1"'
    agent = shlex.join(fake("out:some output here", "exit:0"))
    unit: dict[str, Any] = {
        "command": ["sh", "-c", f"{write if copy else 'true'}; exec {agent}", "sh", str(where)],
        "workdir": str(workdir),
        "env": {"HOME": str(clihome)},
        "inject": {"mode": "none"},
        "usage": {"source": "claude-transcript", "context_window": 200000},
        "restart": {"min_uptime": 0, "delay": "50ms"},
    }
    write_unit(home, name, unit)


@pytest.mark.timeout(240)
@pytest.mark.slow
def test_status_history_dashboard_and_top_show_each_sessions_usage(
    dhome: Path, serve: list[Served], tmp_path: Path
) -> None:
    _unit(dhome, tmp_path, "spent", copy=True)
    _unit(dhome, tmp_path, "guessed", copy=False)
    d, site = dashboard_daemon(dhome, serve)
    for name in ("spent", "guessed"):
        poll_for(lambda n=name: d.status(n)["state"] == "done", timeout=40, what=f"{name} done")

    status = json.loads(agentctl(dhome, "status", "spent", "--json").stdout)
    (one,) = status if isinstance(status, list) else [status]
    usage = one["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (SUMS["input"], SUMS["output"])
    percent = f"{100 * usage['context_tokens'] / 200000:.0f}%"
    detail = agentctl(dhome, "status", "spent").stdout
    line = next(row for row in detail.splitlines() if row.lstrip().startswith("Usage"))
    assert f"in {SUMS['input']:,}, out {SUMS['output']:,}" in line, detail
    assert COST in line and "claude-opus-5-5" in line and f"context {percent}" in line, line
    assert "from claude-transcript" in line, line

    (head, row) = agentctl(dhome, "history", "spent").stdout.splitlines()
    tokens = head.index("TOKENS")
    assert row[tokens:].split()[:2] == [f"{EVERY:,}", COST], (head, row)
    today = agentctl(dhome, "status", "guessed").stdout
    assert re.search(r"~\d+ tokens \(1 of the sessions estimated from the screen\)", today), today
    (_, guess) = agentctl(dhome, "history", "guessed").stdout.splitlines()
    assert re.search(r" ~\d+ est\. +- ", guess), guess  # the estimate, marked; no cost

    code, _, page = site.get("/units/spent")
    assert code == 200
    assert '<dd class="spent">' in page and f"in {SUMS['input']:,}" in page, page
    assert f"{EVERY:,} tokens" in page and f"{COST} spent" in page, page
    _, _, svg = site.get("/units/spent/timeline.svg?span=all")
    bar = re.search(r'<rect class="session o-done" data-session="1".*?</rect>', svg, re.S)
    assert bar is not None, svg
    assert f"out {SUMS['output']:,}" in bar.group(0) and COST in bar.group(0)  # its tooltip
    _, _, guessed = site.get("/units/guessed")
    assert re.search(r"~\d+ tokens \(1 of the sessions estimated from the screen\)", guessed), (
        guessed
    )

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux): agentctl top not checked")
    with Tmux(200, 10, env={"AGENTD_HOME": str(dhome), "LANG": "C.UTF-8"}) as (tmux, _):
        tmux("respawn-pane", "-k", f"{sys.executable} -m agentd.cli.agentctl top")

        def cells() -> dict[str, list[str]]:
            rows = map(str.split, tmux("capture-pane", "-p").splitlines())
            return {r[0]: r for r in rows if r and r[0] in ("spent", "guessed", "UNIT")}

        def shown() -> bool:
            c = cells()
            head, row = c.get("UNIT", []), c.get("spent", [])
            if "TOKENS" not in head or len(row) < len(head):
                return False
            at = head.index("TOKENS")
            return row[at : at + 3] == [f"{EVERY:,}", COST, percent]

        poll_for(
            shown,
            timeout=90,
            what="top's TOKENS, COST, CTX columns",
            seen=lambda: tmux("capture-pane", "-p"),  # the screen, when it fails
        )
        tmux("send-keys", "q")
        poll_for(lambda: tmux("list-sessions") == "", what="top to quit")


def _row(n: int, start: float, end: float, usage: dict[str, Any] | None) -> dict[str, Any]:
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    return {
        "session": n,
        "started_at": time.strftime(stamp, time.gmtime(NOW - start)),
        "ended_at": time.strftime(stamp, time.gmtime(NOW - end)),
        "duration_s": start - end,
        "outcome": "done",
        "reason": "exit:0",
        "usage": usage,
    }


NOW = 1_800_000_000.0
REAL = {"input_tokens": 3034, "output_tokens": 126, "cache_read_tokens": 910}
REAL |= {"cache_write_tokens": 212, "source": "claude-transcript"}


def test_a_wide_bar_says_what_its_session_spent_a_narrow_one_only_in_its_tooltip() -> None:
    rows = [
        _row(1, 3600, 600, REAL | {"cost_usd": 0.42}),  # most of the hour: wide
        _row(2, 590, 589, REAL | {"cost_usd": 0.42}),  # one second: a sliver
        _row(3, 500, 310, REAL | {"cost_usd": None}),  # no cost: its tokens
        _row(4, 300, 60, {"output_tokens": 9160, "source": "estimate"}),  # the estimate
        _row(5, 50, 1, None),  # recorded before agentd read usage
    ]
    bars = layout(rows, NOW, "1h").bars
    assert [b.label for b in bars] == ["$0.420", "$0.420", "4,282", "~9,160", ""]
    assert [b.shows_label for b in bars] == [True, False, True, True, False]
    assert "$0.420" in bars[1].title and "in 3,034" in bars[1].title
    svg = Environment(loader=PackageLoader("agentd.daemon.dashboard", "templates")).get_template(
        "timeline.svg"
    )
    drawn = svg.render(timeline=layout(rows, NOW, "1h"), colours=COLOURS, u={"unit": "u"})
    assert re.findall(r'<text class="spent"[^>]*>([^<]*)</text>', drawn) == [
        "$0.420",
        "4,282",
        "~9,160",
    ]
