"""A unit's history file as the next agentd, ``agentctl history`` and ``status`` read
it back: what is written, what survives a torn line or a full disk, what is kept past
``max_bytes``, and the session rows and last facts made of its records (in-process,
files only)."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from agentd.events import DAEMON_DEGRADED, DAEMON_RECOVERED, WriteHealth
from agentd.supervisor.records.history import (
    TAIL_BYTES,
    History,
    last_end,
    last_usage,
    last_verify,
    recent_events_of,
    restored_pause,
    sessions,
)


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


class Fsyncs:
    """``os.fsync`` counted per path (``fsync_dir``'s and the history's own), and the
    descriptors a session spawned meanwhile would inherit (none may be)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        self.inheritable: list[str] = []
        real = os.fsync

        def fsync(fd: int) -> None:
            path = os.readlink(f"/proc/self/fd/{fd}")
            self.paths.append(path)
            if os.get_inheritable(fd):
                self.inheritable.append(path)
            real(fd)

        monkeypatch.setattr(os, "fsync", fsync)


# --- writing ---------------------------------------------------------------------------------


def test_a_record_is_one_json_line_in_a_private_file_made_with_its_directory(
    tmp_path: Path,
) -> None:
    path = tmp_path / "logs" / "u" / "history.jsonl"
    history = History(path)
    history.append({"kind": "start", "session": 1, "note": "café ✓"})
    history.append({"kind": "end", "session": 1})
    assert lines_of(path) == [
        {"kind": "start", "session": 1, "note": "café ✓"},
        {"kind": "end", "session": 1},
    ]
    assert "café ✓" in path.read_text(encoding="utf-8")  # as written, not \u-escaped
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_durable_record_is_fsyncd_before_append_returns_and_a_new_files_name_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "u" / "history.jsonl"
    synced = Fsyncs(monkeypatch)
    history = History(path)
    history.append({"kind": "start", "session": 1})
    assert synced.paths == [str(path), str(path.parent)]  # the record, then the new name
    assert not history.unsynced
    synced.paths.clear()
    history.append({"kind": "start", "session": 2})
    assert synced.paths == [str(path)]  # the file existed: its directory is not synced again


def test_a_record_appended_without_durable_is_fsyncd_by_sync_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "u" / "history.jsonl"
    History(path).append({"kind": "start", "session": 1})
    synced = Fsyncs(monkeypatch)
    history = History(path)
    history.append({"kind": "end", "session": 1}, durable=False)
    assert synced.paths == [] and history.unsynced  # written, not synced yet
    assert lines_of(path)[-1] == {"kind": "end", "session": 1}
    history.sync()
    assert synced.paths == [str(path)] and not history.unsynced
    assert synced.inheritable == []  # an fsync off the loop may meet a spawn on it
    history.sync()  # nothing new since: nothing to do
    assert history.fsync() is None
    assert synced.paths == [str(path)]
    history.append({"kind": "outcome", "session": 1})  # durable: syncs what came before too
    assert synced.paths == [str(path)] * 2 and not history.unsynced


def test_a_sync_that_fails_is_counted_by_health_or_raised_without_it(tmp_path: Path) -> None:
    path = tmp_path / "u" / "history.jsonl"
    history = History(path)
    history.append({"kind": "end", "session": 1}, durable=False)
    path.unlink()  # the file is gone: the fsync cannot open it
    error = history.fsync()
    assert isinstance(error, FileNotFoundError) and not history.unsynced
    history.unsynced = True
    with pytest.raises(FileNotFoundError):
        history.sync()
    said: list[tuple[str, dict[str, Any]]] = []
    counted = History(path, health=WriteHealth(lambda e, f: said.append((e, f))), unsynced=True)
    counted.sync()
    assert [(e, f["what"], f["path"]) for e, f in said] == [
        (DAEMON_DEGRADED, "history:u", str(path))
    ]


def test_a_record_after_a_torn_last_line_starts_on_a_line_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text('{"kind": "start", "session": 1}\n{"kind": "end", "sess')  # a full disk
    history = History(path)
    history.append({"kind": "start", "session": 2})
    assert path.read_text().endswith('"sess\n{"kind": "start", "session": 2}\n')
    assert history.recent() == [
        {"kind": "start", "session": 1},
        {"kind": "start", "session": 2},
    ]
    history.append({"kind": "end", "session": 2})  # a whole last line: no empty line added
    assert path.read_text().endswith('"session": 2}\n{"kind": "end", "session": 2}\n')


def test_a_write_that_fails_is_counted_not_raised_and_a_later_one_ends_the_spell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "u" / "history.jsonl"
    said: list[tuple[str, dict[str, Any]]] = []
    history = History(path, health=WriteHealth(lambda e, f: said.append((e, f))))
    real = os.write

    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    history.append({"kind": "start", "session": 1})  # lost, counted
    monkeypatch.setattr(os, "write", real)
    assert [(e, f["what"], f["path"], f["error"]) for e, f in said] == [
        (DAEMON_DEGRADED, "history:u", str(path), os.strerror(errno.ENOSPC))
    ]
    history.append({"kind": "start", "session": 2})
    assert [e for e, _ in said] == [DAEMON_DEGRADED, DAEMON_RECOVERED]
    assert said[1][1]["what"] == "history:u"
    assert history.recent() == [{"kind": "start", "session": 2}]


def test_without_health_a_failed_write_raises(tmp_path: Path) -> None:
    (tmp_path / "u").write_text("a file where the unit's log directory goes\n")
    with pytest.raises(OSError):
        History(tmp_path / "u" / "history.jsonl").append({"kind": "start", "session": 1})


# --- past max_bytes --------------------------------------------------------------------------


def test_past_max_bytes_the_older_half_moves_aside_in_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    record = {"kind": "start", "session": 0, "pad": "x" * 60}
    size = len(json.dumps(record)) + 1
    history = History(path, max_bytes=10 * size)
    for n in range(10):
        history.append({**record, "session": n})
    assert not path.with_name("history.jsonl.1").exists()  # at max_bytes: not past it
    history.append({**record, "session": 10})
    older = lines_of(path.with_name("history.jsonl.1"))
    newer = lines_of(path)
    assert [r["session"] for r in older + newer] == list(range(11))  # nothing lost or doubled
    assert len(newer) == 5  # the half after the middle
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.with_name("history.jsonl.1").stat().st_mode) == 0o600


def test_without_max_bytes_the_history_is_never_rotated(tmp_path: Path) -> None:
    history = History(tmp_path / "history.jsonl")
    for n in range(50):
        history.append({"kind": "start", "session": n, "pad": "x" * 100})
    assert not (tmp_path / "history.jsonl.1").exists()
    assert len(history.recent()) == 50


def test_a_history_of_one_huge_line_stays_whole(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    content = b'{"kind": "start", "session": 1, "pad": "' + b"x" * 500 + b'"}\n'
    path.write_bytes(content)
    History(path, max_bytes=100)._rotate()
    assert path.read_bytes() == content
    assert not path.with_name("history.jsonl.1").exists()


def test_a_history_whose_second_half_is_one_torn_line_stays_whole(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    content = b'{"kind": "start", "session": 1}\n{"kind": "end", "pad": "' + b"x" * 200
    path.write_bytes(content)
    History(path, max_bytes=100)._rotate()
    assert path.read_bytes() == content
    assert not path.with_name("history.jsonl.1").exists()


def test_the_split_is_at_the_first_line_end_after_the_middle(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"aaaa\nbb\ncc\ndddddddd\n")  # 21 bytes: the middle (10) is in "cc"
    History(path)._rotate()
    assert path.with_name("history.jsonl.1").read_bytes() == b"aaaa\nbb\ncc\n"
    assert path.read_bytes() == b"dddddddd\n"


def test_a_line_ending_exactly_at_the_middle_is_the_older_halfs_last(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"aaaa\nbbbb\ncccc\n")  # 15 bytes: the middle (7) is in "bbbb"
    History(path)._rotate()
    assert path.with_name("history.jsonl.1").read_bytes() == b"aaaa\nbbbb\n"
    path.write_bytes(b"aaa\nbbbbbbb\n")  # 12 bytes: byte 6 is in "bbbbbbb", its end is the last
    History(path)._rotate()
    assert path.read_bytes() == b"aaa\nbbbbbbb\n"
    path.write_bytes(b"aaaaa\nbbbbb\n")  # 12 bytes: the newline at 5 is before the middle
    History(path)._rotate()
    assert path.read_bytes() == b"aaaaa\nbbbbb\n"


# --- reading ---------------------------------------------------------------------------------


def test_a_missing_or_unreadable_history_reads_as_empty(tmp_path: Path) -> None:
    assert History(tmp_path / "none.jsonl").recent() == []
    assert History(tmp_path / "none.jsonl").last_session() == 0
    (tmp_path / "dir.jsonl").mkdir()
    assert History(tmp_path / "dir.jsonl").recent() == []


def test_recent_skips_blank_and_torn_lines_and_keeps_the_newest_limit(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    good = [{"kind": "start", "session": n} for n in range(1, 6)]
    text = "".join(json.dumps(r) + "\n" for r in good[:3]) + "\n  \n"
    text += "".join(json.dumps(r) + "\n" for r in good[3:]) + '{"kind": "en'
    path.write_text(text)
    history = History(path)
    assert history.recent() == good
    assert history.recent(limit=2) == good[-2:]
    assert History(path).recent(limit=1000) == good
    assert history.last_session() == 5


def test_a_line_that_is_json_but_not_a_record_is_skipped(tmp_path: Path) -> None:
    """A hand-edited or damaged history must not stop the unit from loading."""
    path = tmp_path / "history.jsonl"
    path.write_text('{"kind": "start", "session": 1}\n12\n["end"]\n"x"\nnull\n')
    history = History(path)
    assert history.recent() == [{"kind": "start", "session": 1}]
    assert history.last_session() == 1
    path.write_text('{"kind": "end", "session": 1, "reason": "exit:0"}\n7\n')
    records = History(path).recent()
    assert last_end(records) == ("exit:0", None)
    assert restored_pause(records) is None
    assert sessions(records)[0]["reason"] == "exit:0"


def test_recent_holds_the_newest_thousand_records(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps({"session": n}) + "\n" for n in range(1, 1502)))
    got = History(path).recent()
    assert [r["session"] for r in got] == list(range(502, 1502))


def test_records_without_a_number_leave_the_next_session_at_1(tmp_path: Path) -> None:
    history = History(tmp_path / "history.jsonl")
    history.append({"kind": "note"})
    assert history.last_session() == 0


def test_the_last_session_is_the_highest_number_recorded(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    history = History(path)
    for record in (
        {"kind": "start", "session": 7},
        {"kind": "note"},  # no number: counts as 0
        {"kind": "start", "session": "3"},
    ):
        history.append(record)
    assert history.last_session() == 7


def test_a_long_history_is_read_from_its_last_256_kib_without_the_cut_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history.jsonl"
    lines = [
        json.dumps({"kind": "start", "session": n, "pad": "x" * (9 - len(str(n)))}) + "\n"
        for n in range(20_000)
    ]
    assert len(set(map(len, lines))) == 1  # every line as long
    data = "".join(lines)
    assert len(data) > TAIL_BYTES
    path.write_text(data)
    got = History(path).recent(limit=10_000)
    assert got[-1]["session"] == 19_999
    kept = TAIL_BYTES // len(lines[0])  # those wholly in the tail
    assert [r["session"] for r in got] == list(range(20_000 - kept, 20_000))


def test_a_history_that_fits_the_tail_is_read_from_its_first_line(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    records = [{"kind": "start", "session": n} for n in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert History(path).recent() == records


def test_the_newest_events_of_a_unit(tmp_path: Path) -> None:
    path = tmp_path / "agentd.jsonl"
    events = [{"event": "unit.state", "unit": "ab"[n % 2], "n": n} for n in range(1500)]
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert recent_events_of(path, None, 0) == []
    assert recent_events_of(path, "a", 0) == []
    assert recent_events_of(path, None, 3) == events[-3:]
    assert recent_events_of(path, "a", 2) == [events[1496], events[1498]]
    assert recent_events_of(path, None, 1200) == events[-1200:]  # past recent()'s 1000
    assert recent_events_of(path, "b", 1200) == [e for e in events if e["unit"] == "b"]
    assert recent_events_of(tmp_path / "none.jsonl", None, 5) == []


# --- the facts made of the records -----------------------------------------------------------

START = {"kind": "start", "session": 1, "at": "T0", "reason": "start", "pid": 10, "bootstrap": "b"}
END = {
    "kind": "end",
    "session": 1,
    "at": "2026-01-02T03:04:05Z",
    "reason": "exit:0",
    "duration_s": 5.0,
    "code": -15,
    "signal": "TERM",
}
OUTCOME = {"kind": "outcome", "session": 1, "outcome": "completed", "detail": "d"}
VERIFY = {
    "kind": "verify",
    "session": 1,
    "ok": True,
    "command": "make test",
    "exit_code": 0,
    "said": "passed",
    "duration_s": 1.5,
    "at": "T1",
}


def test_a_sessions_records_merge_into_one_row() -> None:
    usage = {"cost_usd": 1.25}
    [row] = sessions(
        [START, {**END, "error": "boom", "usage": usage}, VERIFY, {**OUTCOME, "reset_at": "R"}]
    )
    assert row == {
        "session": 1,
        "started_at": "T0",
        "started_by": "start",
        "pid": 10,
        "bootstrap": "b",
        "ended_at": "2026-01-02T03:04:05Z",
        "reason": "exit:0",
        "duration_s": 5.0,
        "code": -15,
        "signal": "TERM",
        "error": "boom",
        "usage": usage,
        "verify": {
            "ok": True,
            "command": "make test",
            "exit_code": 0,
            "said": "passed",
            "duration_s": 1.5,
        },
        "outcome": "completed",
        "detail": "d",
        "reset_at": "R",
    }


def test_a_session_row_has_only_what_its_records_say() -> None:
    running = sessions([START])
    assert running == [
        {
            "session": 1,
            "started_at": "T0",
            "duration_s": None,
            "outcome": None,
            "reason": None,
            "started_by": "start",
            "pid": 10,
            "bootstrap": "b",
        }
    ]
    [ended] = sessions([START, {**END, "error": "", "usage": "not a dict"}, OUTCOME])
    assert "error" not in ended and "usage" not in ended and "reset_at" not in ended
    assert "verify" not in ended
    [checked_by_hand] = sessions([START, {**VERIFY, "manual": True}])
    assert "verify" not in checked_by_hand  # `agentctl verify`: not the session's check


def test_session_rows_are_in_number_order_and_bad_numbers_are_skipped() -> None:
    rows = sessions(
        [
            {"kind": "start", "session": 3, "at": "c"},
            {"kind": "start", "session": 1, "at": "a"},
            {"kind": "start", "session": "x"},
            {"kind": "start", "session": [2]},
            {"kind": "start", "at": "none"},  # no number: session 0
            {"kind": "end", "session": 1, "reason": "exit:0"},
        ]
    )
    assert [(r["session"], r["started_at"], r["reason"]) for r in rows] == [
        (0, "none", None),
        (1, "a", "exit:0"),
        (3, "c", None),
    ]


def test_the_last_ends_usage() -> None:
    usage = {"cost_usd": 2.0}
    assert last_usage([]) is None
    assert last_usage([START]) is None
    assert last_usage([{**END, "usage": usage}, {"kind": "start", "session": 2}]) == usage
    assert last_usage([{**END, "usage": usage}, {**END, "session": 2}]) is None  # the last end's
    assert last_usage([{**END, "usage": [1]}]) is None


def test_the_last_completion_check() -> None:
    assert last_verify([]) is None
    assert last_verify([START, END]) is None
    older = {**VERIFY, "ok": False}
    assert last_verify([older, VERIFY, END]) == {
        "ok": True,
        "command": "make test",
        "exit_code": 0,
        "said": "passed",
        "duration_s": 1.5,
        "session": 1,
        "manual": False,
        "at": "T1",
    }
    assert last_verify([{**VERIFY, "manual": 1}])["manual"] is True  # type: ignore[index]


def test_how_the_last_session_ended() -> None:
    assert last_end([START, END, {"kind": "start", "session": 2}]) == ("exit:0", 1767323045.0)
    assert last_end([{**END, "at": 5}]) == ("exit:0", None)


def test_a_pause_written_with_z_or_an_offset_is_the_same_instant() -> None:
    paused = {"kind": "outcome", "next": "paused", "reset_at": "2026-01-02T04:00:00Z"}
    assert restored_pause([paused]) == 1767326400.0
    assert restored_pause([{**paused, "reset_at": 1767326400}]) is None  # not a date
    assert restored_pause([{**paused, "kind": "end"}]) is None
