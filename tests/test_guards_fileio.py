"""What agentd's file primitives promise the files' readers, in-process.

An appended log line is one line even after a torn one, in a file others may
read; an atomic write is never readable beyond its mode, not even while it is
written, and a failed one says why and leaves nothing behind; a lock file
says who holds it; a rotated log keeps its backups in order; a tail is the
end of the file as a whole read would give it, whatever the block size.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentd import fileio
from agentd.fileio import Held, append_line, hold, release, replaced, rotate, write_atomic


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- append_line ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (None, "one\n"),
        ("", "one\n"),
        ("x", "x\none\n"),  # a torn last line of one byte stays on its own
        ("first\n", "first\none\n"),
        ("first\nsecond\n", "first\nsecond\none\n"),
        ("first\nhalf a li", "first\nhalf a li\none\n"),
        ("\n", "\none\n"),
    ],
)
def test_an_appended_line_is_one_line_after_whatever_was_there(
    tmp_path: Path, before: str | None, after: str
) -> None:
    path = tmp_path / "decisions.log"
    if before is not None:
        path.write_text(before)
    append_line(path, "one")
    assert path.read_bytes() == after.encode()


def test_an_appended_line_keeps_non_ascii_text_as_utf8(tmp_path: Path) -> None:
    path = tmp_path / "log"
    append_line(path, "café ✓")
    assert path.read_bytes() == "café ✓\n".encode()


def test_a_log_append_line_creates_is_readable_not_executable(
    tmp_path: Path, umask_022: None
) -> None:
    append_line(tmp_path / "decisions.log", "d")
    assert mode(tmp_path / "decisions.log") == 0o644


# --- write_atomic --------------------------------------------------------------------------


def test_a_private_file_is_never_readable_by_others_not_even_while_it_is_written(
    tmp_path: Path, umask_022: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:  # the data is written: what could another user read now?
        st_mode = os.fstat(fd).st_mode
        if stat.S_ISREG(st_mode):
            seen.append(stat.S_IMODE(st_mode))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    for m in (0o600, 0o644):
        write_atomic(tmp_path / f"secret-{m:o}", "token=abc\n", mode=m)
    monkeypatch.undo()
    assert seen == [0o600, 0o644]
    assert (mode(tmp_path / "secret-600"), mode(tmp_path / "secret-644")) == (0o600, 0o644)
    # and while it was being written (before its mode was set), no one else could read it
    created: list[int] = []
    real_fchmod = os.fchmod

    def fchmod(fd: int, m: int) -> None:
        created.append(stat.S_IMODE(os.fstat(fd).st_mode))
        real_fchmod(fd, m)

    monkeypatch.setattr(os, "fchmod", fchmod)
    write_atomic(tmp_path / "state.json", "{}", mode=0o644)
    assert created == [0o600]


def _fail_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", fsync)


def test_a_failed_write_raises_its_own_error_keeps_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "TASK_STATE.md"
    path.write_text("old\n")
    _fail_fsync(monkeypatch)
    with pytest.raises(OSError) as raised:
        write_atomic(path, "new\n")
    assert raised.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["TASK_STATE.md"]


def test_when_the_cleanup_fails_too_the_caller_still_hears_why_the_write_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def replace(src: Any, dst: Any) -> None:  # the temp file went away, and the rename failed
        os.unlink(src)
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError) as raised:
        write_atomic(tmp_path / "state.json", "{}")
    assert raised.value.errno == errno.EXDEV


def test_a_directory_that_cannot_be_fsynced_still_gets_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fsync = os.fsync

    def fsync(fd: int) -> None:  # as on filesystems that refuse fsync on a directory
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    write_atomic(tmp_path / "state.json", "{}")
    assert (tmp_path / "state.json").read_text() == "{}"


# --- lock files ----------------------------------------------------------------------------


def test_a_held_lock_says_who_holds_it_and_is_free_again_once_released(tmp_path: Path) -> None:
    path = tmp_path / "locks" / "u.lock"
    fd = hold(path, "agentd run u")
    try:
        assert path.read_text() == f"{os.getpid()} agentd run u\n"
        assert mode(path) == 0o600 and mode(path.parent) == 0o700
        with pytest.raises(Held) as held:
            hold(path, "agentd serve")
        assert (held.value.path, held.value.pid, held.value.note) == (
            path,
            str(os.getpid()),
            "agentd run u",
        )
        assert str(held.value) == f"{path} is held by pid {os.getpid()}"
        assert path.read_text() == f"{os.getpid()} agentd run u\n"  # the loser wrote nothing
    finally:
        release(fd)
    release(None)  # nothing held: nothing to do
    again = hold(path)  # a shorter note leaves nothing of the longer one
    try:
        assert path.read_text() == f"{os.getpid()} \n"
        with pytest.raises(Held) as held:
            hold(path)
        assert (held.value.pid, held.value.note) == (str(os.getpid()), "")
    finally:
        release(again)


def test_a_lock_file_with_nothing_in_it_is_held_by_someone_unknown(tmp_path: Path) -> None:
    import fcntl

    path = tmp_path / "u.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(Held) as held:
            hold(path)
        assert (held.value.pid, held.value.note) == ("?", "")
    finally:
        os.close(fd)


def test_a_lock_in_a_dir_not_made_yet_is_taken_and_its_dirs_are_private(tmp_path: Path) -> None:
    path = tmp_path / "run" / "agentd" / "u.lock"
    fd = hold(path, "x")
    try:
        assert mode(tmp_path / "run" / "agentd") == 0o700 and path.exists()
    finally:
        release(fd)


def test_a_lock_file_that_is_not_text_still_says_it_is_held(tmp_path: Path) -> None:
    import fcntl

    path = tmp_path / "u.lock"
    path.write_bytes(b"\xff\xfe12 agentd \xc3(run)\n")
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(Held) as held:
            hold(path)
        assert held.value.pid == "\ufffd\ufffd12" and held.value.note == "agentd \ufffd(run)"
    finally:
        os.close(fd)


# --- rotate and replaced -------------------------------------------------------------------


def test_rotation_keeps_the_newest_backups_in_order(tmp_path: Path) -> None:
    path = tmp_path / "agentd.jsonl"
    for n in range(1, 6):
        path.write_text(f"gen {n}\n")
        rotate(path, 3)
    assert not path.exists()
    kept = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert kept == {
        "agentd.jsonl.1": "gen 5\n",
        "agentd.jsonl.2": "gen 4\n",
        "agentd.jsonl.3": "gen 3\n",
    }


def test_one_backup_is_the_file_moved_aside_and_none_is_the_file_emptied(tmp_path: Path) -> None:
    one = tmp_path / "one.log"
    one.write_text("a\n")
    rotate(one, 1)
    assert not one.exists() and (tmp_path / "one.log.1").read_text() == "a\n"
    none = tmp_path / "none.log"
    none.write_text("a\n")
    rotate(none, 0)
    assert none.read_bytes() == b"" and not (tmp_path / "none.log.1").exists()
    rotate(tmp_path / "deleted.log", 2)  # deleted meanwhile: nothing to keep, no error
    rotate(tmp_path / "deleted.log", 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["none.log", "one.log.1"]


def test_a_writer_learns_its_file_was_deleted_or_moved_away(tmp_path: Path) -> None:
    path = tmp_path / "agentd.jsonl"
    path.write_text("")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert not replaced(path, fd)
        os.rename(path, tmp_path / "agentd.jsonl.1")
        assert replaced(path, fd)  # moved away
        path.write_text("")
        assert replaced(path, fd)  # a new file at the path
        os.unlink(path)
        assert replaced(path, fd)  # deleted
    finally:
        os.close(fd)


# --- tails, against reading the whole file -------------------------------------------------


def whole_tail(data: bytes, n: int) -> tuple[list[str], int]:
    """The last ``n`` lines of ``data`` and where the first starts, from the whole."""
    if n <= 0 or not data:
        return [], len(data)
    body = data[:-1] if data.endswith(b"\n") else data
    starts = [0] + [i + 1 for i, b in enumerate(body) if b == 0x0A]
    first = starts[-n:][0] if len(starts) >= n else 0
    return [p.decode("utf-8", "replace").rstrip("\r") for p in body[first:].split(b"\n")], first


def whole_window(data: bytes, least: int, more_bytes: int) -> tuple[list[str], int]:
    """``whole_tail`` and, before it, the whole lines that start in the last ``more_bytes``."""
    lines, start = whole_tail(data, least)
    begin = max(len(data) - max(more_bytes, 0), 0)
    starts = [0] + [i + 1 for i, b in enumerate(data[:start]) if b == 0x0A]
    firsts = [s for s in starts if s >= begin and s < start]
    if not firsts:
        return lines, start
    more = data[firsts[0] : start].split(b"\n")[:-1]
    return [p.decode("utf-8", "replace").rstrip("\r") for p in more] + lines, firsts[0]


class Counted(io.BytesIO):
    """A file that counts the bytes read from it."""

    read_total = 0

    def read(self, size: int | None = -1) -> bytes:
        out = super().read(size)
        self.read_total += len(out)
        return out


lines_st = st.lists(
    st.one_of(
        st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")),
        st.sampled_from(
            [b"", b"\r", b"\rX", b"a\r", b"X\r", "é✓".encode(), b"\xff\xfe", b"x" * 40]
        ),
    ),
    max_size=30,
)


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(lines=lines_st, final_nl=st.booleans(), n=st.integers(-1, 35), block=st.integers(1, 9))
def test_a_tail_is_the_end_of_the_file_as_a_whole_read_gives_it(
    lines: list[bytes], final_nl: bool, n: int, block: int
) -> None:
    data = b"\n".join(lines) + (b"\n" if final_nl and lines else b"")
    old, fileio._BLOCK = fileio._BLOCK, block  # small blocks: every line crosses one
    f = Counted(data)
    try:
        got = fileio.tail_lines(f, n)
    finally:
        fileio._BLOCK = old
    expected = whole_tail(data, n)
    assert got == expected
    # and it costs the tail, not the file: the tail's bytes, at most a block more, and
    # the one byte that says whether the file ends with a newline
    assert f.read_total <= len(data) - expected[1] + block + 1


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@example(lines=[b"a", b"", b""], final_nl=True, least=0, more=0, block=4)
@given(
    lines=lines_st,
    final_nl=st.booleans(),
    least=st.integers(0, 5),
    more=st.integers(-2, 200),
    block=st.integers(1, 9),
)
def test_a_window_adds_the_whole_lines_the_bytes_before_the_tail_hold(
    lines: list[bytes], final_nl: bool, least: int, more: int, block: int
) -> None:
    data = b"\n".join(lines) + (b"\n" if final_nl and lines else b"")
    old, fileio._BLOCK = fileio._BLOCK, block
    try:
        got = fileio.tail_window(io.BytesIO(data), least, more)
    finally:
        fileio._BLOCK = old
    assert got == whole_window(data, least, more)


@pytest.mark.parametrize("block", [30, fileio._BLOCK])
def test_a_tail_reads_at_most_max_bytes_and_then_starts_inside_the_long_line(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fileio, "_BLOCK", block)
    data = b"head\n" + b"y" * 5000 + b"\nlast\n"
    f = Counted(data)
    lines, start = fileio.tail_lines(f, 3, max_bytes=100)
    assert lines == ["y" * 94, "last"] and start == len(data) - 100
    assert f.read_total <= 100 + 1  # the window, and the byte that says "final newline"
