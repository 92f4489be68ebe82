"""``agentctl state``'s ``--dir`` goes before or after the verb."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentd.cli.agentctl.group import main


@pytest.mark.parametrize("where", ["before", "after"])
def test_dir_before_or_after_the_verb(
    tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTD_STATE_DIR", raising=False)
    target = str(tmp_path / "mine")

    def state(*verb: str) -> str:
        args = (
            ["state", "--dir", target, *verb]
            if where == "before"
            else ["state", *verb, "--dir", target]
        )
        res = CliRunner().invoke(main, args, catch_exceptions=False)
        assert res.exit_code == 0, res.output
        return res.output

    state("init")
    state("next", "write the docs")
    assert "write the docs" in state("show")
    assert not (tmp_path / ".agent").exists()  # the default was not used


def test_dir_after_the_verb_wins(tmp_path: Path) -> None:
    CliRunner().invoke(main, ["state", "init", "--dir", str(tmp_path / "a")])
    res = CliRunner().invoke(
        main, ["state", "--dir", str(tmp_path / "nope"), "next", "x", "--dir", str(tmp_path / "a")]
    )
    assert res.exit_code == 0 and "recorded" in res.output
