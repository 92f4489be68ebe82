"""The ``agentctl`` console script does the writes agents run after every step
without click (``agentd.cli.agentctl.statefast``), and does them as the click command
does: the same output, errors, exit codes and files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentd.cli.agentctl.statefast import _parse

# The console script's entry, as pip writes it (argv[0] aside).
SCRIPT = "import sys; from agentd.cli.agentctl.main import main; sys.argv[0] = 'agentctl'; main()"
CLICK = "import sys; from agentd.cli.agentctl.group import main; sys.argv[0] = 'agentctl'; main()"
# The log's minutes and a snapshot's ISO time with seconds.
STAMP = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:[+-]\d\d:\d\d|Z)?)?")


def agentctl(code: str, args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
    )


def files(state: Path) -> dict[str, str]:
    """The state dir's files, with their time stamps blanked (the two runs differ)."""
    return {
        str(p.relative_to(state)): STAMP.sub("T", p.read_text(encoding="utf-8"))
        for p in sorted(state.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["state", "next", "write the parser"],
        ["state", "--dir", "{dir}", "task", "  the importer  "],
        ["state", "done", "parser written", "--verified", "pytest: 12 passed"],
        ["state", "done", "--verified=pytest ok", "the reader"],
        ["state", "handoff", "half done: the writer next", "--dir={dir}"],
        ["state", "block", "the fixture server is down"],
        ["state", "mission", "port the cart to the new cache"],
        ["state", "--dir", "{missing}", "next", "x"],  # an error: exit 1, one line
        ["state", "decide", "use sqlite", "--why", " because it ships with Python "],
        [
            "state",
            "decide",
            "split the parser",
            "--why=it grew",
            "--files",
            "a.py",
            "--files=b,c.py",
            "--alt",
            "one big module: hard to test",
            "--tag",
            "arch",
        ],
        [
            "state",
            "decide",
            "x",
            "--why",
            "a | why: b",
        ],  # does not fit the line: click's usage error
        ["state", "--dir", "{missing}", "decide", "x", "--why", "y"],
    ],
)
def test_the_fast_path_does_what_the_click_command_does(tmp_path: Path, args: list[str]) -> None:
    results = []
    for code, name in ((SCRIPT, "fast"), (CLICK, "click")):
        work = tmp_path / name
        state = work / ".agent"
        state.mkdir(parents=True)
        init = agentctl(CLICK, ["state", "--dir", str(state), "init"], work)
        assert init.returncode == 0, init.stderr
        argv = [a.format(dir=state, missing=work / "nope") for a in args]
        done = agentctl(code, argv, work, AGENTD_STATE_DIR=str(state))
        out = done.stdout.replace(str(work), "W")
        results.append((done.returncode, out, done.stderr.replace(str(work), "W"), files(state)))
    assert results[0] == results[1]
    assert results[0][0] in (0, 1, 2) and "Traceback" not in results[0][2]


@pytest.mark.parametrize("verb", [["next", "a step"], ["decide", "a way", "--why", "a reason"]])
def test_the_fast_path_loads_no_click_nor_dataclasses(tmp_path: Path, verb: list[str]) -> None:
    state = tmp_path / ".agent"
    assert agentctl(CLICK, ["state", "--dir", str(state), "init"], tmp_path).returncode == 0
    probe = (
        f"import sys; from agentd.cli.agentctl.main import main; sys.argv = ['agentctl', "
        f"'state', *{verb!r}]\ntry:\n    main()\nexcept SystemExit as e:\n"
        "    print(json.dumps([e.code, sorted(m for m in sys.modules if "
        "m.split('.')[0] in ('click', 'pydantic', 'yaml', 'structlog', 'dataclasses', "
        "'inspect'))]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", "import json\n" + probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "AGENTD_STATE_DIR": str(state)},
    )
    code, loaded = json.loads(done.stdout.splitlines()[-1])
    assert code == 0 and loaded == []


@pytest.mark.parametrize(
    "args",
    [
        ["state", "next"],  # no text
        ["state", "next", "  "],  # an empty one
        ["state", "next", "a", "b"],  # one too many
        ["state", "next", "--help"],
        ["state", "show"],  # not a text write
        ["state", "decide", "x"],  # --why is required
        ["state", "decide", "x", "--why", " "],
        ["state", "decide", "x", "--why", "y", "--verified", "z"],  # --verified is done's
        ["state", "decide", "x", "--why", "--tag"],  # a value that looks like an option
        ["state", "next", "--", "-x"],
        ["state", "next", "x", "--verified", "y"],  # --verified is done's
        ["--home", "/h", "state", "next", "x"],
        ["status"],
    ],
)
def test_anything_else_goes_to_the_click_command(args: list[str]) -> None:
    assert _parse(args) is None
