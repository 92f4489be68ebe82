"""``agentd check`` exits 1 when any one file is bad, however many are good.

In-process (the CLI's own code, as ``agentd check`` runs it): a script or a
pre-commit hook reads only the exit status, so one bad file among good ones,
or alone, must fail it, in text and in JSON; only all good passes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agentd.cli.agentd.main import main
from tests.support import write_unit


def check(*args: str) -> Result:
    return CliRunner().invoke(main, ["check", *args], catch_exceptions=False)


def good_unit(home: Path, i: int) -> None:
    unit = {"command": [sys.executable, "-c", "pass"], "state": {"dir": f".agent-{i}"}}
    write_unit(home, f"good{i}", unit)


def bad(home: Path, name: str) -> Path:
    path = home / "units" / f"{name}.yaml"
    path.write_text(f"command: [{sys.executable}]\nworkdir: {home}\nbogus: 1\n")
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("good", [0, 1, 3])
@pytest.mark.parametrize("as_json", [False, True])
def test_one_bad_file_fails_the_check_among_any_number_of_good_ones(
    home: Path, good: int, as_json: bool
) -> None:
    for i in range(good):
        good_unit(home, i)
    broken = bad(home, "zz")
    res = check(*(["--json"] if as_json else []))
    assert res.exit_code == 1, res.output
    if as_json:
        reports = json.loads(res.stdout)
        assert [(r["file"], r["ok"]) for r in reports if not r["ok"]] == [(str(broken), False)]
        assert sum(r["ok"] for r in reports) == good
    else:
        assert f"{broken}:3: bogus" in res.stderr
    named = check(str(broken), *(["--json"] if as_json else []))  # named alone, too
    assert named.exit_code == 1, named.output


def test_only_all_good_files_pass_the_check(home: Path) -> None:
    for i in range(3):
        good_unit(home, i)
    res = check()
    assert res.exit_code == 0, res.output
    assert res.stdout.count(": ok") == 3
