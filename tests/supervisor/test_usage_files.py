"""The files the agent's CLI writes are read bounded, and never through a FIFO, a
device or a link that leads out of the CLI's directory."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from agentd.supervisor.usage import files
from agentd.supervisor.usage.files import Follower, NotReadable
from agentd.supervisor.usage.formats import ClaudeTranscript, CodexRollout
from agentd.supervisor.usage.sources import Claude, SessionFiles
from tests.realcli.usage_model import chosen

CAPTURES = Path(__file__).resolve().parent.parent / "fixtures" / "usage"
TRANSCRIPT = CAPTURES / "claude-code-2.1.332-transcript.jsonl"
INPUT_1_2 = chosen(1).input + chosen(2).input


def _claude_home(tmp_path: Path, workdir: Path, sid: str) -> Path:
    """Where Claude Code keeps the transcript of session ``sid`` run in ``workdir``."""
    folder = (
        tmp_path
        / "home"
        / ".claude"
        / "projects"
        / str(workdir).replace("/", "-").replace("_", "-").replace(".", "-")
    )
    folder.mkdir(parents=True)
    return folder / f"{sid}.jsonl"


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    done: list[BaseException] = []

    def read() -> None:
        try:
            Follower(fifo, tmp_path, ClaudeTranscript()).read()
        except BaseException as exc:
            done.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "reading a FIFO blocked"
    assert isinstance(done[0], NotReadable) and "FIFO" in str(done[0])


def test_a_link_out_of_the_cli_dir_is_refused_one_inside_is_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "shadow.jsonl").symlink_to("/etc/shadow")
    with pytest.raises(NotReadable, match="leads outside"):
        Follower(root / "shadow.jsonl", root, ClaudeTranscript()).read()
    shutil.copy(TRANSCRIPT, root / "real.jsonl")
    (root / "inside.jsonl").symlink_to(root / "real.jsonl")
    follower = Follower(root / "inside.jsonl", root, ClaudeTranscript())
    follower.read()
    assert follower.fold.spent().counts.input == INPUT_1_2  # type: ignore[union-attr]


def test_a_device_is_refused(tmp_path: Path) -> None:
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    with pytest.raises(NotReadable):
        Follower(tmp_path / "zero.jsonl", Path("/dev"), ClaudeTranscript()).read()


def test_a_1_gb_file_is_read_only_up_to_the_cap(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    with open(big, "wb") as f:
        f.write(TRANSCRIPT.read_bytes())  # real records first...
        f.truncate(1 << 30)  # ...then a gigabyte of zeros, in one line with no end
    follower = Follower(big, tmp_path, ClaudeTranscript())
    for _ in range(10):
        follower.read()
    follower.read(files.MAX_BYTES, final=True)
    assert follower.read_bytes == files.MAX_BYTES  # never more, however often it is read
    assert follower.capped and "larger than 256 MiB" in (follower.shortfall or "")
    assert follower.long_lines == 1  # the line of zeros, skipped, not kept in memory
    assert follower.fold.spent().counts.input == INPUT_1_2  # type: ignore[union-attr]


def test_lines_that_are_not_json_are_counted_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = TRANSCRIPT.read_bytes().splitlines(keepends=True)
    hostile = [b'{"usage": tru\n', b'\xff\xfe garbage "usage"\n', b'["usage"]\n', b"\n"]
    mixed = [line for pair in zip(lines, hostile * len(lines), strict=False) for line in pair]
    path.write_bytes(b"".join(mixed))
    not_json = sum(1 for line in mixed if line in hostile[:2])
    follower = Follower(path, tmp_path, ClaudeTranscript())
    follower.read(final=True)
    assert follower.bad_lines == not_json  # a list is JSON (not a record); a blank line nothing
    assert follower.fold.spent().counts.input == INPUT_1_2  # type: ignore[union-attr]


def test_a_line_written_in_two_parts_counts_once_whole(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    data = TRANSCRIPT.read_bytes()
    cut = data.index(b'"cache_read_input_tokens"')
    path.write_bytes(data[:cut])
    follower = Follower(path, tmp_path, ClaudeTranscript())
    follower.read()
    with open(path, "ab") as f:
        f.write(data[cut:])
    follower.read()
    assert follower.bad_lines == 0
    assert follower.fold.spent().counts.input == INPUT_1_2  # type: ignore[union-attr]


def test_a_file_replaced_by_a_shorter_one_is_read_again_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    shutil.copy(TRANSCRIPT, path)
    follower = Follower(path, tmp_path, ClaudeTranscript())
    follower.read()
    first = [line for line in TRANSCRIPT.read_bytes().splitlines() if b'"msg_fake_1"' in line]
    path.write_bytes(first[0] + b"\n")  # truncated and written again
    follower.read()
    assert follower.fold.spent().counts.input == chosen(1).input  # type: ignore[union-attr]


def test_a_cumulative_file_far_behind_is_read_from_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "TAIL_BYTES", 4096)
    monkeypatch.setattr(files, "PASS_BYTES", 4096)
    path = tmp_path / "rollout.jsonl"
    rollout = (CAPTURES / "codex-0.171.0-rollout.jsonl").read_bytes()
    path.write_bytes(b'{"pad": "' + b"x" * 100_000 + b'"}\n' + rollout)
    follower = Follower(path, tmp_path, CodexRollout())
    follower.read(final=True)
    assert follower.skipped and follower.read_bytes <= 2 * 4096 + 4096
    spent = follower.fold.spent()
    assert spent is not None and spent.counts.input == chosen(1).input + chosen(3).input


def test_claude_source_finds_the_session_transcript_and_stays_in_its_dir(tmp_path: Path) -> None:
    workdir = tmp_path / "p"
    workdir.mkdir()
    sid = "2e2b9c5d-428a-4fcd-ba2f-1870a0160bce"
    transcript = _claude_home(tmp_path, workdir, sid)
    transcript.symlink_to("/etc/shadow")
    source = Claude(SessionFiles({"HOME": str(tmp_path / "home")}, workdir, time.time(), sid))
    assert source.read(final=True) is None
    assert any("leads outside" in p for p in source.problems)
    transcript.unlink()
    shutil.copy(TRANSCRIPT, transcript)
    source = Claude(SessionFiles({"HOME": str(tmp_path / "home")}, workdir, time.time(), sid))
    spent = source.read(final=True)
    assert spent is not None and spent.counts.input == INPUT_1_2


def test_claude_json_too_large_or_not_json_only_loses_its_totals(tmp_path: Path) -> None:
    workdir = tmp_path / "p"
    workdir.mkdir()
    sid = "a76451c7-1b1b-432f-a1ef-94573b57b080"
    transcript = _claude_home(tmp_path, workdir, sid)
    shutil.copy(CAPTURES / "claude-code-2.1.197-transcript.jsonl", transcript)
    config = json.loads((CAPTURES / "claude-code-2.1.197-claude.json").read_text())
    (entry,) = config["projects"].values()
    config["projects"] = {os.path.realpath(workdir): entry}
    home = tmp_path / "home"
    files_ = SessionFiles({"HOME": str(home)}, workdir, time.time(), sid)
    (home / ".claude.json").write_text(json.dumps(config))
    whole = Claude(files_).read(final=True)
    assert (
        whole is not None
        and whole.counts.input == chosen(1).input + chosen(2).input + chosen(3).input
    )
    (home / ".claude.json").write_text("{not json")
    part = Claude(files_).read(final=True)
    assert part is not None and part.counts.input == chosen(2).input + chosen(3).input
    assert part.partial and "no totals" in part.partial
    (home / ".claude.json").unlink()
    os.mkfifo(home / ".claude.json")
    started = time.monotonic()
    fifo = Claude(files_).read(final=True)
    assert time.monotonic() - started < 10  # a FIFO in its place never blocks
    assert fifo is not None and fifo.counts.input == chosen(2).input + chosen(3).input
