"""Spawning: what exec would refuse is a clean SpawnError, and nothing of the
daemon ever runs in the forked child but exec (issue 11, finding 1)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agentd.errors import SpawnError
from agentd.session import child as child_module
from agentd.session.child import Child
from tests.support import poll_for

ECHO = [sys.executable, "-c", "import os; print(os.getcwd())"]


def _reap(child: Child) -> None:
    poll_for(child.poll_exit, what=f"the child {child.pid} to exit")
    child.close()


@pytest.mark.parametrize(
    "argv, env, said",
    [
        ([sys.executable, "-c", "pass", "a\x00b"], {}, "argument 3 holds a NUL byte"),
        (ECHO, {"X": "a\x00b"}, "environment variable X holds a NUL byte"),
        (ECHO, {"A=B": "x"}, "cannot be passed to exec"),
        ([sys.executable, "-c", "pass", "\ud800"], {}, "unpaired surrogate"),
    ],
)
def test_what_exec_refuses_is_a_spawn_error_before_the_fork(
    tmp_path: Path, argv: list[str], env: dict[str, str], said: str
) -> None:
    with pytest.raises(SpawnError, match=said) as caught:
        Child.spawn(argv, cwd=tmp_path, env={"PATH": os.defpath, **env})
    assert caught.value.permanent


def test_a_missing_workdir_is_a_spawn_error(tmp_path: Path) -> None:
    with pytest.raises(SpawnError, match=r"workdir .* does not exist"):
        Child.spawn(ECHO, cwd=tmp_path / "gone", env=dict(os.environ))


def test_a_workdir_removed_after_the_check_comes_back_through_the_pipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(child_module, "check_spawnable", lambda *a: None)
    with pytest.raises(SpawnError, match="No such file or directory"):
        Child.spawn(ECHO, cwd=tmp_path / "gone", env=dict(os.environ))


def test_anything_escaping_in_the_child_ends_it_and_never_returns_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A BaseException that ptyprocess does not catch (it catches Exception)
    would run this test suite again inside the pty; the guard exits instead."""

    def prepare(cwd: str, procs: str | None) -> object:
        def escape() -> None:
            raise SystemExit("escaped")

        return escape

    monkeypatch.setattr(child_module, "_prepare_child", prepare)
    child = Child.spawn(ECHO, cwd=tmp_path, env=dict(os.environ))
    _reap(child)
    assert child.exit_code == 127


def test_the_child_runs_in_its_workdir(tmp_path: Path) -> None:
    child = Child.spawn(ECHO, cwd=tmp_path, env=dict(os.environ))
    out = bytearray()

    def said_its_cwd() -> bool:
        out.extend(child.read() or b"")
        return str(tmp_path).encode() in out

    poll_for(said_its_cwd, what=f"the child to print {tmp_path}", seen=lambda: bytes(out))
    _reap(child)
