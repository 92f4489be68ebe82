"""``agentd check`` is as strict as the runtime: what ``lint`` finds, from tables,
and the real ``agentd check`` flagging each bad case with file, line and key."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentd.config.lint import ArgLimits, lint
from agentd.config.unitfile import parse_unit
from tests.support import agentd, write_unit

LIMITS = ArgLimits(total=2_097_152, one=131_072)


def _unit(workdir: Path, text: str):  # type: ignore[no-untyped-def]
    return parse_unit(f"workdir: {workdir}\n{text}", file="u.yaml", name="u")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "tool.sh").write_text("#!/bin/sh\n")
    (tmp_path / "tool.sh").chmod(0o755)
    (tmp_path / "notes.txt").write_text("text\n")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "halfway").write_text("#!/bin/sh\n")  # in PATH, not executable
    return tmp_path


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("[no-such-agent-cli]", "'no-such-agent-cli' is not found in PATH"),
        ("[halfway]", "halfway is not executable; run: chmod +x"),
        ("[./notes.txt]", "notes.txt is not executable"),
        ("[./missing.sh]", "missing.sh does not exist"),
        ("[./bin]", "is a directory, not a program"),
    ],
)
def test_a_command_that_cannot_run_is_an_error(work: Path, command: str, says: str) -> None:
    unit = _unit(work, f"command: {command}\nenv: {{PATH: {work / 'bin'}:/usr/bin:/bin}}\n")
    [found] = lint(unit, {}, LIMITS)
    assert found.level == "error" and found.key == ("command", 0) and says in found.message


@pytest.mark.parametrize(
    "command", ["[./tool.sh]", f"[{sys.executable}]", "[sh, -c, x]", "['{workdir}/tool.sh']"]
)
def test_a_command_that_can_run_is_fine(work: Path, command: str) -> None:
    assert lint(_unit(work, f"command: {command}\n"), {"PATH": "/usr/bin:/bin"}, LIMITS) == []


def test_the_bootstrap_in_argv_shows_in_ps_and_may_outgrow_an_argument(work: Path) -> None:
    found = lint(_unit(work, 'command: [./tool.sh, "{bootstrap}"]\n'), {}, LIMITS)
    assert [(f.level, f.key) for f in found] == [("warning", ("command", 1))]
    assert "`ps`" in found[0].message and "{bootstrap_file}" in found[0].message
    big = lint(
        _unit(work, 'command: [./tool.sh, "{bootstrap}"]\nstate: {budget_tokens: 40000}\n'),
        {},
        LIMITS,
    )
    assert any("argument list too long" in f.message for f in big)
    assert (
        lint(
            _unit(
                work, 'command: [./tool.sh, "{bootstrap_file}"]\nstate: {budget_tokens: 40000}\n'
            ),
            {},
            LIMITS,
        )
        == []
    )
    crowded = lint(
        _unit(work, 'command: [./tool.sh, "{bootstrap}"]\n'),
        {"X": "y" * 40_000},
        ArgLimits(total=32_768, one=None),
    )
    assert any("exec takes in all" in f.message for f in crowded)


def test_check_flags_each_bad_case_with_file_line_and_key(home: Path) -> None:
    work = home / "work"
    work.mkdir()
    missing = write_unit(home, "missing", {"command": ["no-such-agent-cli"]})
    shown = write_unit(
        home,
        "shown",
        {"command": [sys.executable, "-c", "pass", "{bootstrap}"], "state": {"dir": ".agent-s"}},
    )
    empty = write_unit(
        home, "empty", {"command": [sys.executable], "sentinels": [{"name": "all", "match": "x*"}]}
    )
    big = home / "units" / "big.yaml"
    big.write_bytes(b"#" * (2 * 1024 * 1024))
    big.chmod(0o600)
    res = agentd(home, "check")
    assert res.returncode == 1
    err = res.stderr
    assert f"{missing}:2: command[0]: 'no-such-agent-cli' is not found in PATH" in err
    assert f"{shown}:5: command[3]: warning: the bootstrap" in err
    assert f"{empty}:5: sentinels[0].match: 'x*' matches an empty line" in err
    assert f"{big}: 2097152 bytes: over the 1024 KiB" in err
    assert "3 of 4 unit file(s) invalid" in err
    assert f"{shown}: ok" in res.stdout  # a warning is not an error
    assert "Traceback" not in err
