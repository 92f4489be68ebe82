"""Watching agents: the current screen (``agentctl screen``, the first thing
``attach`` draws), keys while attached, and ``logs`` of every unit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyte
import pytest
from click.testing import CliRunner, Result

from agentd.cli.agentctl.attach import hold_interrupts
from agentd.cli.agentctl.group import main as agentctl_main
from agentd.session.screen import ScreenRing
from tests.support import (
    FIXTURES,
    LOCAL_FIXTURES,
    Served,
    Tmux,
    ctl_pty,
    detach,
    end,
    fake,
    poll_for,
    said,
    write_unit,
)

TUI_FIXTURES = sorted([*FIXTURES.glob("*.raw"), *(LOCAL_FIXTURES / "captured").glob("*.raw")])
STOP = {"grace": "300ms"}


def agentctl(*args: str) -> Result:
    return CliRunner().invoke(agentctl_main, list(args), catch_exceptions=False)


def serve_units(
    home: Path, serve: list[Served], said_first: dict[str, str], **units: list[str]
) -> Served:
    """A daemon running ``units`` (name -> fake agent steps), once each unit said its
    ``said_first`` text."""
    for name, steps in units.items():
        write_unit(
            home,
            name,
            {
                "command": fake(*steps),
                "inject": {"mode": "none"},
                "stop": STOP,
                "state": {"dir": f".agent-{name}"},
            },
        )
    d = Served(home)
    serve.append(d.ready())
    poll_for(
        lambda: all(said(home, u, text) for u, text in said_first.items()),
        what=f"the units to say {said_first}",
    )
    return d


# --- the screen -----------------------------------------------------------------------------


def terminal_rows(data: bytes, cols: int = 120, rows: int = 40) -> list[str]:
    """What a real terminal shows after ``data``: tmux's (capture-pane -p), else pyte's."""
    screen = pyte.Screen(cols, rows)
    pyte.ByteStream(screen).feed(data)
    drawn = [row.rstrip() for row in screen.display]
    if shutil.which("tmux") is None:
        return drawn
    shown = _tmux_rows(data, cols, rows)
    assert shown == drawn, "pyte and tmux disagree on this capture"
    return shown


def _tmux_rows(data: bytes, cols: int, rows: int) -> list[str]:
    with Tmux(cols, rows) as (tmux, workdir):
        raw = workdir / "screen.raw"
        raw.write_bytes(data)
        done = workdir / "done"
        tmux("respawn-pane", "-k", f"stty raw -echo; cat {raw}; touch {done}; exec sleep 60")
        poll_for(done.exists, what="tmux to print the capture")
        poll_for(
            lambda: tmux("capture-pane", "-p") == tmux("capture-pane", "-p"),
            what="tmux's pane to settle",
        )
        shown = tmux("capture-pane", "-p").split("\n")[:rows]
    return [row.rstrip() for row in shown] + [""] * (rows - len(shown))


@pytest.mark.slow
def test_screen_shows_what_the_terminal_shows(dhome: Path, serve: list[Served]) -> None:
    """A TUI that redraws in place (cursor moves, diff-only repaints): the screen is
    what a terminal shows after the same bytes, not the transcript's lines. Every
    capture at once, one unit each, under one daemon."""
    units = {f"tui{n}": capture for n, capture in enumerate(TUI_FIXTURES)}
    for name, capture in units.items():
        write_unit(
            dhome,
            name,
            {
                "command": fake(f"replay:{capture}", "wait"),
                "inject": {"mode": "none"},
                "stop": STOP,
                "state": {"dir": f".agent-{name}"},
            },
        )
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(
        lambda: all(d.status(n)["output_bytes"] >= c.stat().st_size for n, c in units.items()),
        what="every capture written whole",
        seen=lambda: {n: (d.status(n)["output_bytes"], c.stat().st_size) for n, c in units.items()},
    )
    wrong: dict[str, object] = {}
    for name, capture in units.items():
        want = terminal_rows(capture.read_bytes())
        res = agentctl("screen", name, "--json")
        assert res.exit_code == 0, res.output
        got = json.loads(res.stdout)
        if got["rows"] != want:
            wrong[capture.name] = (got["rows"], want)
        assert got["cols"] == 120 and got["session"] == 1 and len(got["cursor"]) == 2
        text = agentctl("screen", name)
        while want and not want[-1]:
            want.pop()  # the blank rows under the last one drawn are not printed
        if text.stdout != "\n".join(want) + "\n":
            wrong[f"{capture.name} (text)"] = (text.stdout, want)
    assert units and not wrong, wrong


def test_the_screen_ring_is_bounded_and_starts_over_where_it_must() -> None:
    ring = ScreenRing(20, 3, session=1, keep=64)
    for n in range(200):
        ring.feed(f"line {n}\r\n".encode())
    capture = ring.capture()
    assert len(capture.data) <= 128 and capture.start > 0
    assert capture.draw().rows == ["line 198", "line 199", ""]
    ring.feed(b"\x1b[2Jx")  # only these bytes are new to the emulator kept since
    again = ring.capture().draw()
    assert again.rows == ["", "", "x"] and again.cursor == (2, 1)


def test_a_repaint_redraws_the_same_cells() -> None:
    data = (FIXTURES / "claude-code-2.1.197-autocompact.raw").read_bytes()
    ring = ScreenRing(120, 40)
    ring.feed(data)
    drawn = ring.capture().draw(redraw=True)
    again, direct = pyte.Screen(120, 40), pyte.Screen(120, 40)
    pyte.ByteStream(again).feed(b"junk\r\n\x1b[31mmore" + drawn.redraw)
    pyte.ByteStream(direct).feed(data)
    cells = [(y, x) for y in range(40) for x in range(120)]
    assert [again.buffer[y][x] for y, x in cells] == [direct.buffer[y][x] for y, x in cells]
    assert (again.cursor.y, again.cursor.x) == (direct.cursor.y, direct.cursor.x)


# --- attach ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_attach_draws_the_screen_first_then_types_and_guards_ctrl_c(
    dhome: Path, serve: list[Served]
) -> None:
    d = serve_units(
        dhome,
        serve,
        {"t": "ready> "},  # the prompt, before attaching
        t=["out:booting", "prompt:ready> ", "out:bye", "wait"],
    )
    child = ctl_pty(dhome, "attach", "t")
    try:
        child.expect("attached to t")
        child.expect("ready>", timeout=5)  # at once: nothing new was written since
        child.send("\x03")
        child.expect("Ctrl-C not sent")
        child.send("Ada\r")
        child.expect("GOT:Ada")
        assert said(dhome, "t", "GOT:Ada") and not said(dhome, "t", "\x03")
        detach(child, "t")
    finally:
        child.close(force=True)
    assert d.status("t")["state"] == "running"  # neither Ctrl-C nor detaching ended it


@pytest.mark.slow
def test_attach_says_who_closed_the_stream(dhome: Path, serve: list[Served]) -> None:
    d = serve_units(dhome, serve, {"t": "up"}, t=["out:up", "wait"])
    child = ctl_pty(dhome, "attach", "t")
    try:
        child.expect("attached to t")
        d.stop()
        child.expect("detached from t: agentd is stopping")
        assert end(child) == 0
    finally:
        child.close(force=True)


@pytest.mark.slow
def test_attach_gives_the_agent_the_size_of_the_terminal_and_keeps_it(
    dhome: Path, serve: list[Served]
) -> None:
    d = serve_units(
        dhome,
        serve,
        {"t": "SIZE:120x40"},  # the unit's pty, before attaching
        t=["size", "winch", "winch", "wait"],
    )
    child = ctl_pty(dhome, "attach", "t")
    try:
        child.setwinsize(30, 100)
        child.expect("attached to t")
        child.expect("WINCH:100x30")  # at once: the attaching terminal's size
        # As a terminal window does: TIOCSWINSZ, and the kernel sends SIGWINCH to
        # the terminal's foreground process group, agentctl.
        child.setwinsize(40, 132)
        child.expect("WINCH:132x40")
        detach(child, "t")
    finally:
        child.close(force=True)
    drawn = d.result("screen", unit="t")
    assert (drawn["cols"], len(drawn["rows"])) == (132, 40)  # kept after detaching
    assert d.call("resize", unit="t", cols=0, rows=24)["code"] == 2
    assert d.call("resize", unit="nope", cols=80, rows=24)["code"] == 4


@pytest.mark.slow
def test_attach_no_resize_leaves_the_size_alone(dhome: Path, serve: list[Served]) -> None:
    d = serve_units(dhome, serve, {"t": "ready> "}, t=["prompt:ready> ", "wait"])
    child = ctl_pty(dhome, "attach", "--no-resize", "t")
    try:
        child.expect("attached to t")
        child.setwinsize(40, 132)
        # Without --no-resize the size would be sent before these keys are read.
        child.send("Ada\r")
        child.expect("GOT:Ada")
        detach(child, "t")
    finally:
        child.close(force=True)
    assert d.result("screen", unit="t")["cols"] == 120  # the unit's pty: 120x40


def test_attach_needs_a_terminal(dhome: Path, serve: list[Served]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentd.cli.agentctl", "attach", "t"],
        env=dict(os.environ, AGENTD_HOME=str(dhome)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert "attach needs a terminal: stdin is not one" in done.stderr
    assert "agentctl screen t" in done.stderr


@pytest.mark.parametrize(
    ("keys", "armed", "sent", "armed_after", "held"),
    [
        (b"abc", False, b"abc", False, False),
        (b"\x03", False, b"", True, True),
        (b"\x03", True, b"\x03", False, False),
        (b"\x03\x03", False, b"\x03", False, True),
        (b"\x03x", False, b"x", False, True),
        (b"x", True, b"x", False, False),
    ],
)
def test_ctrl_c_is_passed_on_only_when_pressed_twice(
    keys: bytes, armed: bool, sent: bytes, armed_after: bool, held: bool
) -> None:
    assert hold_interrupts(keys, armed) == (sent, armed_after, held)


# --- logs of every unit ---------------------------------------------------------------------


@pytest.mark.slow
def test_logs_without_a_unit_interleave_every_unit(dhome: Path, serve: list[Served]) -> None:
    serve_units(
        dhome,
        serve,
        {"one": "from one", "two": "from two"},
        one=["out:from one", "wait"],
        two=["out:\\x1b[32mfrom two\\x1b[0m", "wait"],
    )
    res = agentctl("logs")
    assert res.exit_code == 0, res.output
    assert "one | from one" in res.stdout.splitlines()
    assert "two | from two" in res.stdout.splitlines()
    data = json.loads(agentctl("logs", "--json").stdout)
    assert {u["unit"] for u in data} == {"one", "two"}


# --- top ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_top_shows_every_unit_and_stops_one_by_key(dhome: Path, serve: list[Served]) -> None:
    if shutil.which("tmux") is None:
        pytest.skip(
            "tmux is not installed (apt-get install tmux): agentctl top is tested in a "
            "real terminal, tmux's"
        )
    d = serve_units(
        dhome,
        serve,
        {"one": "one ready>", "two": "two ready>"},
        one=["prompt:one ready> ", "wait"],
        two=["prompt:two ready> ", "wait"],
    )
    with Tmux(130, 12, env={"AGENTD_HOME": str(dhome), "LANG": "C.UTF-8"}) as (tmux, _):
        tmux("respawn-pane", "-k", f"{sys.executable} -m agentd.cli.agentctl top")

        def rows() -> dict[str, list[str]]:
            lines = tmux("capture-pane", "-p").splitlines()
            return {
                cells[0]: cells
                for cells in map(str.split, lines)
                if cells and cells[0] in ("one", "two")
            }

        def screen() -> str:
            return tmux("capture-pane", "-p")

        poll_for(
            lambda: {u: r[1] for u, r in rows().items()} == {"one": "running", "two": "running"},
            timeout=30,  # textual's start-up, on a loaded machine
            what="top to show both units running",
            seen=screen,
        )
        poll_for(
            lambda: rows()["two"][-2:] == ["two", "ready>"], what="two's screen line", seen=screen
        )
        tmux("send-keys", "x")  # the cursor is on the first row: one
        poll_for(lambda: rows()["one"][1] == "stopped", what="one shown stopped", seen=screen)
        assert d.status("one")["state"] == "stopped"
        assert d.status("two")["state"] == "running"
        tmux("send-keys", "q")
        poll_for(lambda: tmux("list-sessions") == "", what="top to quit (its pane closes)")
