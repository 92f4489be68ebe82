"""``lock_state_dir``: the one function that takes a state dir's own lock
(``STATE_DIR/.agentd.lock``), which agentds of other homes, users and hosts see alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentd.fileio import OWNER_LOCK_NAME, release
from agentd.supervisor.records.locks import StateDirInUse, lock_state_dir

# Another agentd, for the kernel: its own open of the lock file, flock'ed.
HOLD = (
    "import fcntl, os, sys\n"
    "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
    "fcntl.flock(fd, fcntl.LOCK_EX)\n"
    "os.write(fd, b'4242 other host-b')\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


def test_a_missing_state_dir_is_not_made(tmp_path: Path) -> None:
    assert lock_state_dir(tmp_path / "gone" / ".agent", "u host") is None
    assert not (tmp_path / "gone").exists()


def test_a_file_is_not_a_state_dir(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    assert lock_state_dir(tmp_path / "f", "u host") is None
    assert (tmp_path / "f").read_text() == "x"


def test_one_holder_at_a_time_and_the_lock_goes_with_its_descriptor(tmp_path: Path) -> None:
    fd = lock_state_dir(tmp_path, "u host-a")
    assert fd is not None
    with pytest.raises(StateDirInUse) as refused:
        lock_state_dir(tmp_path, "u host-a")  # another open of it: another agentd's
    assert refused.value.path == str(tmp_path.resolve())
    release(fd)
    again = lock_state_dir(tmp_path, "u host-a")
    assert again is not None
    release(again)


def test_another_process_holding_it_refuses_us_naming_it(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / OWNER_LOCK_NAME)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(StateDirInUse) as refused:
            lock_state_dir(tmp_path, "u host-a")
        assert (refused.value.pid, refused.value.note) == ("4242", "other host-b")
    finally:
        holder.communicate("")  # it ends, and its lock with it
    fd = lock_state_dir(tmp_path, "u host-a")
    assert fd is not None
    release(fd)
