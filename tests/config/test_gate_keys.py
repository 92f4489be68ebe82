"""The unit keys `complete` (the completion gate) and `worktree`: what they accept, what
they refuse (as `file:line: key: message`), and what follows from them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agentd.config.lint import ArgLimits, lint
from agentd.config.unit import Unit
from agentd.config.unitfile import load_unit, parse_unit
from agentd.config.worktree import check_branch
from agentd.errors import UnitError

LIMITS = ArgLimits(total=1 << 21, one=1 << 17)


def parse(text: str, name: str = "a") -> Unit:
    return parse_unit(textwrap.dedent(text), file="units/a.yaml", name=name)


def error_of(text: str) -> str:
    with pytest.raises(UnitError) as caught:
        parse(text)
    return str(caught.value)


def test_verify_as_a_string_runs_in_the_shell_and_as_a_list_as_is(tmp_path: Path) -> None:
    shell = parse(f"""
        command: [agent]
        workdir: {tmp_path}
        complete: {{verify: "pytest -q && ruff check ."}}
    """)
    assert shell.complete is not None
    assert shell.complete.verify == ["/bin/sh", "-c", "pytest -q && ruff check ."]
    assert shell.complete.command == "pytest -q && ruff check ."
    assert (shell.complete.timeout, shell.complete.attempts) == (600, 3)
    listed = parse(f"""
        command: [agent]
        workdir: {tmp_path}
        complete: {{verify: [python3, -m, pytest, "-k", "not slow", 3], timeout: 90s, attempts: 1}}
    """)
    assert listed.complete is not None
    assert listed.complete.verify == ["python3", "-m", "pytest", "-k", "not slow", "3"]
    assert listed.complete.command == "python3 -m pytest -k 'not slow' 3"
    assert (listed.complete.timeout, listed.complete.attempts) == (90, 1)
    assert parse(f"command: [agent]\nworkdir: {tmp_path}\n").complete is None


@pytest.mark.parametrize(
    ("gate", "said"),
    [
        ("{verify: ''}", "complete.verify: must not be empty"),
        ("{verify: []}", "complete.verify: must not be empty"),
        ("{verify: [true], timeout: 0}", "complete.timeout: should be greater than 0"),
        (
            "{verify: [true], attempts: 0}",
            "complete.attempts: should be greater than or equal to 1",
        ),
        ("{verify: [true], tries: 2}", "complete.tries: unknown key"),
        ("{timeout: 5m}", "complete.verify: required"),
    ],
)
def test_a_bad_gate_is_refused_naming_its_key(tmp_path: Path, gate: str, said: str) -> None:
    text = error_of(f"command: [agent]\nworkdir: {tmp_path}\ncomplete: {gate}\n")
    assert text.startswith("units/a.yaml:3: "), text
    assert said in text, text


def test_a_worktree_gives_the_workdir_and_the_state_dir(tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    repo.mkdir()
    unit = parse(f"command: [agent]\nworktree: {{repo: {repo}, branch: agent/cart}}\n")
    tree = tmp_path / "shop.worktrees" / "agent" / "cart"
    assert unit.worktree is not None and unit.worktree.path == tree
    assert unit.workdir == tree  # need not exist yet: made at the first session
    assert unit.state_dir == tree / ".agent"
    inside = parse(f"command: [agent]\nworktree: {{repo: {repo}, branch: b1}}\nworkdir: pkg/api\n")
    assert inside.workdir == tmp_path / "shop.worktrees" / "b1" / "pkg" / "api"


def test_a_relative_repo_is_relative_to_the_unit_file(tmp_path: Path) -> None:
    (tmp_path / "src" / "shop").mkdir(parents=True)
    path = tmp_path / "units" / "w.yaml"
    path.parent.mkdir()
    path.write_text("command: [agent]\nworktree: {repo: ../src/shop, branch: agent/w}\n")
    path.chmod(0o600)
    unit = load_unit(path)
    assert unit.worktree is not None
    assert unit.worktree.repo == tmp_path / "src" / "shop"
    assert unit.workdir == tmp_path / "src" / "shop.worktrees" / "agent" / "w"


def test_worktree_errors_name_their_key(tmp_path: Path) -> None:
    missing = error_of(f"command: [agent]\nworktree: {{repo: {tmp_path}/nope, branch: a}}\n")
    assert "units/a.yaml:2: worktree.repo: " in missing and "does not exist" in missing
    outside = error_of(
        f"command: [agent]\nworktree: {{repo: {tmp_path}, branch: a}}\nworkdir: /etc\n"
    )
    assert "units/a.yaml:3: workdir: " in outside and "outside" in outside
    bad = error_of(f"command: [agent]\nworktree: {{repo: {tmp_path}, branch: 'a b'}}\n")
    assert "worktree.branch: " in bad and "not a valid git branch name" in bad


@pytest.mark.parametrize(
    "name",
    ["main", "agent/cart", "feature/a-b_c.1", "x@y", "deep/er/branch"],
)
def test_branch_names_git_takes(name: str) -> None:
    assert check_branch(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        "a b",
        "-x",
        "/x",
        "x/",
        "x.",
        "x.lock",
        "a..b",
        "a//b",
        "a@{1}",
        "@",
        "a/.hidden",
        "a~1",
        "a^",
        "a:b",
        "a?",
        "a*",
        "a[b",
        "a\\b",
        "tab\there",
    ],
)
def test_branch_names_git_refuses(name: str) -> None:
    with pytest.raises(ValueError, match=r"must not be empty|not a valid git branch name"):
        check_branch(name)


def test_lint_finds_a_missing_check_program_and_a_repo_that_is_not_one(tmp_path: Path) -> None:
    unit = parse(f"""
        command: [sh]
        workdir: {tmp_path}
        complete: {{verify: [no-such-checker-xyz, -q]}}
    """)
    [found] = lint(unit, {"PATH": "/usr/bin:/bin"}, LIMITS)
    assert (found.level, found.key) == ("error", ("complete", "verify", 0))
    assert "'no-such-checker-xyz' is not found in PATH" in found.message
    shell = parse(f"command: [sh]\nworkdir: {tmp_path}\ncomplete: {{verify: 'exit 0'}}\n")
    assert lint(shell, {"PATH": "/usr/bin:/bin"}, LIMITS) == []  # /bin/sh is there
    plain = tmp_path / "plain"
    plain.mkdir()
    tree = parse(f"command: [sh]\nworktree: {{repo: {plain}, branch: a}}\n")
    [found] = lint(tree, {"PATH": "/usr/bin:/bin"}, LIMITS)
    assert (found.level, found.key) == ("error", ("worktree", "repo"))
    assert "is not in a git repository" in found.message
