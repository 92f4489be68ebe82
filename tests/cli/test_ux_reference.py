"""What a newcomer finds besides the commands: completion of unit names, man pages
from the same source as docs/commands.md, ``agentd check DIR``, a reload that
says each problem once, and the timeline's legend for a person's restart."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentd.daemon.dashboard.timeline import COLOURS, layout
from agentd.times import iso
from tests.support import Served, fake, write_unit

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]


def complete(home: Path, tool: str, words: str) -> list[str]:
    """What bash completion offers for the last of ``words`` (click's protocol)."""
    parts = words.split(" ")
    done = subprocess.run(
        [str(BIN / tool)],
        env={
            **os.environ,
            "AGENTD_HOME": str(home),
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(parts) - 1),
            f"_{tool.upper()}_COMPLETE": "bash_complete",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [line.split(",", 1)[1] for line in done.stdout.splitlines()]


@pytest.mark.slow
def test_unit_names_complete_without_a_daemon(home: Path) -> None:
    for name in ("cart", "cache", "docs"):
        write_unit(home, name, {"command": fake("exit:0")})
    assert complete(home, "agentctl", "agentctl status ca") == ["cache", "cart"]
    assert complete(home, "agentctl", "agentctl logs ") == ["cache", "cart", "docs"]
    assert complete(home, "agentctl", "agentctl show d") == ["docs"]
    assert complete(home, "agentd", "agentd run c") == ["cache", "cart"]
    assert "status" in complete(home, "agentctl", "agentctl st")


def test_the_man_pages_come_from_the_click_commands() -> None:
    for name in ("agentd", "agentctl"):
        page = (REPO / "docs" / "man" / f"{name}.1").read_text()
        assert page.startswith(f".TH {name.upper()} 1 ")
        commands = (REPO / "docs" / "commands.md").read_text()
        listed = [
            line[len("### `") : -1] for line in commands.splitlines() if line.startswith("### `")
        ]
        mine = [c for c in listed if c.startswith(f"{name} ")]
        assert mine and all(f".SS {c.replace('-', chr(92) + '-')}\n" in page for c in mine)
    if shutil.which("man") is None:
        pytest.skip("no man here to render the page")
    shown = subprocess.run(
        ["man", "-l", str(REPO / "docs" / "man" / "agentctl.1")],
        env={**os.environ, "MANWIDTH": "100", "MANPAGER": "cat", "PAGER": "cat"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert "agentctl status [OPTIONS] [UNITS]..." in shown.stdout
    assert "--color [auto|always|never]" in shown.stdout and "141" in shown.stdout


@pytest.mark.slow
def test_check_takes_a_dir_and_says_json(home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "more"
    elsewhere.mkdir()
    good = write_unit(home, "good", {"command": fake("exit:0")})
    bad = elsewhere / "bad.yaml"
    bad.write_text(f"command: [no-such-agent-cli]\nworkdir: {tmp_path / 'gone'}\n")
    bad.chmod(0o600)
    done = subprocess.run(
        [str(BIN / "agentd"), "check", "--json", str(elsewhere), str(good)],
        env={**os.environ, "AGENTD_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    found = {Path(r["file"]).name: r for r in json.loads(done.stdout)}
    assert found["good.yaml"]["ok"] and found["good.yaml"]["command"] == fake("exit:0")
    # the missing workdir does not hide the missing command
    assert [(p["key"], p["level"]) for p in found["bad.yaml"]["problems"]] == [
        ("workdir", "error"),
        ("command[0]", "error"),
    ]


@pytest.mark.slow
def test_a_reload_names_each_line_once(dhome: Path, serve: list[Served]) -> None:
    d = Served(dhome)
    serve.append(d)
    d.ready()
    bad = dhome / "units" / "broken.yaml"
    bad.write_text("command: [x]\nworkdir: /nope/gone\nrestart: {dealy: 1s}\n")
    bad.chmod(0o600)
    done = subprocess.run(
        [str(BIN / "agentctl"), "reload"],
        env={**os.environ, "AGENTD_HOME": str(dhome)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    line = next(x for x in done.stderr.splitlines() if x.startswith("invalid: "))
    assert line.startswith(f"invalid: {bad}: line 2: workdir: ") and ":2: line 2:" not in line
    assert "line 3: restart.dealy: unknown key" in line


def test_the_timeline_draws_a_persons_restart_as_manual() -> None:
    now = time.time()
    rows = [
        {
            "session": 1,
            "started_at": iso(now - 60),
            "ended_at": iso(now - 30),
            "outcome": "manual",
            "reason": "manual:new plan",
            "duration_s": 30,
        },
        {"session": 2, "started_at": iso(now - 29), "outcome": None, "reason": None},
    ]
    line = layout(rows, now, "5m", running=2)
    assert [(b.outcome, b.colour) for b in line.bars] == [
        ("manual", COLOURS["manual"]),
        ("running", COLOURS["running"]),
    ]
    assert ("manual", COLOURS["manual"]) in line.legend
    assert COLOURS["manual"] != COLOURS["handoff"]
    assert "session 1: manual (manual:new plan)" in line.bars[0].title
