"""``lock_state_dir``: the one function that takes a state dir's own flock (issue 27),
which agentds of other homes and other users see alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentd.fileio import release
from agentd.supervisor.records.locks import StateDirInUse, lock_state_dir

HOLD = (
    "import fcntl, os, sys\n"
    "fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)\n"
    "fcntl.flock(fd, fcntl.LOCK_EX)\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


def test_a_missing_state_dir_is_not_made(tmp_path: Path) -> None:
    assert lock_state_dir(tmp_path / "gone" / ".agent") is None
    assert not (tmp_path / "gone").exists()


def test_one_holder_at_a_time_and_the_lock_goes_with_its_descriptor(tmp_path: Path) -> None:
    fd = lock_state_dir(tmp_path)
    assert fd is not None
    with pytest.raises(StateDirInUse) as refused:
        lock_state_dir(tmp_path)  # another open of it: another agentd's, for the kernel
    assert refused.value.path == str(tmp_path.resolve())
    release(fd)
    again = lock_state_dir(tmp_path)
    assert again is not None
    release(again)


def test_another_process_holding_it_refuses_us(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(StateDirInUse):
            lock_state_dir(tmp_path)
    finally:
        holder.communicate("")  # it ends, and its lock with it
    fd = lock_state_dir(tmp_path)
    assert fd is not None
    release(fd)


def test_a_file_is_not_a_state_dir(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(NotADirectoryError):
        lock_state_dir(tmp_path / "f")
