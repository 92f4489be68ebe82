"""The ``agentd`` console script checks unit files without click (``checkfast``):
a plain ``agentd check`` loads neither click nor a regex engine it does not need,
and says what the click command says, byte for byte, with its exit code; anything
else goes to click."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentd.cli.agentd.checkfast import Check, plain_check
from tests.cli.test_agentd_imports import imported, loaded
from tests.cli.test_statefast import agentctl as run_code
from tests.support import write_unit

# The console script's entry, as pip writes it, and the click group's.
SCRIPT = "import sys; from agentd.cli.agentd.script import main; sys.argv[0] = 'agentd'; main()"
CLICK = "import sys; from agentd.cli.agentd.main import main; sys.argv[0] = 'agentd'; main()"


def agentd(code: str, args: list[str], cwd: Path, **env: str) -> tuple[int, str, str]:
    proc = run_code(code, args, cwd, **env)  # (python -c CODE ARGS: any console script)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def units(home: Path) -> Path:
    """Units of every kind of answer: fine, warned about, bad, bad beyond a missing workdir,
    not YAML, and two that share a state dir."""
    write_unit(home, "fine", {"command": ["sh", "-c", "true"], "preset": "claude-code"})
    write_unit(home, "loud", {"command": ["sh", "-c", "echo {bootstrap}"]})
    write_unit(home, "typo", {"command": ["sh"], "restart": {"exit_code": [42]}})
    write_unit(home, "gone", {"command": ["no-such-agent-x"], "workdir": str(home / "nowhere")})
    write_unit(home, "slow", {"command": ["sh"], "sentinels": [{"name": "s", "match": "(a+)+$"}]})
    for name in ("twin1", "twin2"):
        write_unit(home, name, {"command": ["sh"], "state": {"dir": ".shared"}})
    (home / "units" / "broken.yaml").write_text("command: [sh\n", encoding="utf-8")
    (home / "units" / "broken.yaml").chmod(0o600)
    return home / "units"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["check"], {}),
        (["check", "{units}/fine.yaml"], {}),
        (["check", "--json", "{units}"], {}),
        (["check", "{units}/typo.yaml", "--color", "always", "{units}/gone.yaml"], {}),
        (["check", "--color=always", "{units}/loud.yaml", "{units}/twin1.yaml"], {"NO_COLOR": "1"}),
        (["check", "--", "{units}/slow.yaml", "{units}/broken.yaml"], {}),
        (["check", "{units}/missing.yaml"], {}),
        (["check", "{home}/work"], {}),  # a directory without unit files: a usage error
    ],
)
def test_the_plain_check_answers_as_the_click_command(
    home: Path, units: Path, args: list[str], env: dict[str, str]
) -> None:
    (home / "work").mkdir(exist_ok=True)
    argv = [a.format(units=units, home=home) for a in args]
    assert plain_check(argv, {**os.environ, **env}) is not None
    fast = agentd(SCRIPT, argv, home, **env)
    assert fast == agentd(CLICK, argv, home, **env)
    assert fast[0] in (0, 1) and (fast[1] or fast[2])


def test_a_plain_check_loads_neither_click_nor_what_it_does_not_need(home: Path) -> None:
    write_unit(home, "small", {"command": ["sh"], "sentinels": [{"name": "s", "match": "done"}]})
    got = imported(["check"], home, AGENTD_HOME=str(home))
    assert "agentd.config.unit" in got
    assert loaded(got, ("click", "re2", "regex", "importlib.metadata")) == []


@pytest.mark.parametrize(
    ("argv", "done"),
    [
        (["check"], Check([], False, "auto")),
        (["check", "a.yaml", "--json", "b"], Check([Path("a.yaml"), Path("b")], True, "auto")),
        (["check", "--color", "never", "--color=always"], Check([], False, "always")),
        (["check", "--", "-odd.yaml"], Check([Path("-odd.yaml")], False, "auto")),
        (["--home", "h", "check"], None),
        (["check", "--help"], None),
        (["check", "-h"], None),
        (["check", "--color", "sometimes"], None),
        (["check", "--color"], None),
        (["check", "--json=yes"], None),
        (["check", "-"], None),
        (["check", "--jsn"], None),  # click suggests --json
        (["run", "x"], None),
    ],
)
def test_what_the_script_checks_itself_and_what_it_leaves_to_click(
    argv: list[str], done: Check | None
) -> None:
    assert plain_check(argv, {}) == done


def test_shell_completion_and_a_home_click_refuses_go_to_click(tmp_path: Path) -> None:
    assert plain_check(["check"], {"_AGENTD_COMPLETE": "bash_complete"}) is None
    (tmp_path / "file").write_text("")
    assert plain_check(["check"], {"AGENTD_HOME": str(tmp_path / "file")}) is None
    assert plain_check(["check"], {"AGENTD_HOME": str(tmp_path)}) is not None
