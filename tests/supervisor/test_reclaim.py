"""What a ``kill -9``ed agentd left running is ended by the next one, in-process:
``reclaim_if_owner`` for a unit that loads again, ``reclaim_orphans`` for the rest,
only where no other agentd holds the unit's lock, and said (events, history)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentd.config.unit import Unit
from agentd.config.unitfile import load_unit
from agentd.process import cgroup as cgroups
from agentd.process.ending import end_session_tree
from agentd.process.tree import MARKER_VAR, session_env_marker
from agentd.supervisor.records import reclaim
from agentd.supervisor.records.history import History
from agentd.supervisor.records.locks import UnitLock
from agentd.supervisor.records.sessions import Recorded, SessionRecords
from tests.support import write_unit

AT = "2026-12-07T10:00:00+00:00"
WHY = "left running by an agentd that did not stop cleanly"

# A process of a lost session: it says which signal it got, and ignores TERM when told.
AGENT = """
import signal, sys, time
def said(sig, frame):
    print(signal.Signals(sig).name, flush=True)
    sys.exit(0)
for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    signal.signal(sig, signal.SIG_IGN if sys.argv[1] == signal.Signals(sig).name else said)
print("up", flush=True)
time.sleep(300)
"""


class Lost:
    """Processes a previous agentd left: they carry their session's marker."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[str]] = []

    def spawn(self, marker: str | None, *, ignore: str = "-") -> subprocess.Popen[str]:
        """``marker`` None: one that cleared its environment (found by its cgroup only)."""
        env = {k: v for k, v in os.environ.items() if k != MARKER_VAR}
        proc = subprocess.Popen(
            [sys.executable, "-c", AGENT, ignore],
            env=env if marker is None else {**env, MARKER_VAR: marker},
            stdout=subprocess.PIPE,
            text=True,
        )
        self.procs.append(proc)
        assert proc.stdout is not None and proc.stdout.readline() == "up\n"
        return proc

    def ended(self, proc: subprocess.Popen[str]) -> tuple[int, str]:
        """How it ended (a reclaim returns once its processes are gone): its exit status
        and the signal it said it got."""
        assert proc.stdout is not None
        code = proc.poll()
        assert code is not None, "still running after the reclaim returned"
        return code, proc.stdout.read().strip()

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(30)
            if proc.stdout is not None:
                proc.stdout.close()


@pytest.fixture
def lost() -> Iterator[Lost]:
    found = Lost()
    yield found
    found.close()


def a_unit(home: Path, name: str = "u", **stop: Any) -> Unit:
    stop = stop or {"signal": "INT", "grace": "5s"}
    return load_unit(write_unit(home, name, {"command": ["true"], "stop": stop}))


def events_of(emitted: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in emitted if e["event"] == kind]


class Emitted(list[dict[str, Any]]):
    def __call__(self, event: str, **fields: Any) -> None:
        self.append({"event": event, **fields})


def started(history: History, session: int, marker: str | None) -> None:
    history.append({"kind": "start", "session": session, "at": "T0", "reason": "start"})
    if marker is not None:
        lines = history.path.read_text().splitlines()
        record = json.loads(lines[-1]) | {"marker": marker}
        history.path.write_text("\n".join([*lines[:-1], json.dumps(record)]) + "\n")


def record(records: SessionRecords, unit: str, session: int, marker: str, **how: Any) -> None:
    records.begin(
        Recorded(unit, session, marker, None, how.get("signal", 15), how.get("grace", 5.0))
    )


def reclaimed_as_owner(
    home: Path, history: History, records: SessionRecords, unit: Unit, emitted: Emitted
) -> bool:
    """``reclaim_if_owner`` as the daemon that loads unit ``u`` runs it: holding its lock."""
    lock = UnitLock(home / "run" / "units" / "u.lock")
    try:
        return asyncio.run(
            reclaim.reclaim_if_owner(lock, history, records, unit, emit=emitted, at=AT)
        )
    finally:
        lock.release()


# --- a unit that loads again -----------------------------------------------------------------


def test_the_lost_session_of_a_unit_that_loads_again_is_ended_and_said(
    home: Path, lost: Lost
) -> None:
    unit = a_unit(home)
    history = History(home / "logs" / "u" / "history.jsonl")
    records = SessionRecords(home / "run" / "sessions")
    marker = session_env_marker("u", 3)
    started(history, 3, marker)
    record(records, "u", 3, marker, signal=int(signal.SIGHUP))  # the unit's own stop wins
    proc = lost.spawn(marker)
    emitted = Emitted()
    assert reclaimed_as_owner(home, history, records, unit, emitted)
    assert lost.ended(proc) == (0, "SIGINT")  # the unit's stop signal
    [said] = events_of(emitted, "session.orphan_killed")
    assert said == {
        "event": "session.orphan_killed",
        "unit": "u",
        "session": 3,
        "signal": "INT",
        "pids": [proc.pid],
        "why": WHY,
    }
    assert history.recent()[-1] == {"kind": "end", "session": 3, "at": AT, "reason": "agentd-lost"}
    assert records.read("u") is None and not (home / "run" / "sessions" / "u.json").exists()


def test_a_lost_session_that_ignores_its_stop_signal_is_killed_after_the_grace(
    home: Path, lost: Lost
) -> None:
    unit = a_unit(home, signal="TERM", grace="200ms")
    history = History(home / "logs" / "u" / "history.jsonl")
    records = SessionRecords(home / "run" / "sessions")
    marker = session_env_marker("u", 1)
    record(records, "u", 1, marker)
    proc = lost.spawn(marker, ignore="SIGTERM")
    emitted = Emitted()
    number = asyncio.run(reclaim.reclaim_lost_session(history, records, unit, emit=emitted, at=AT))
    assert number == 1
    assert lost.ended(proc)[0] == -signal.SIGKILL
    said = events_of(emitted, "session.orphan_killed")
    assert [(e["signal"], e["pids"]) for e in said] == [("TERM", [proc.pid]), ("KILL", [proc.pid])]
    assert history.recent() == []  # no start in it to close


def test_a_session_an_older_agentd_left_is_found_in_its_history(home: Path, lost: Lost) -> None:
    """From before the session records: a last ``start`` without an ``end``."""
    unit = a_unit(home)
    history = History(home / "logs" / "u" / "history.jsonl")
    records = SessionRecords(home / "run" / "sessions")
    history.append({"kind": "start", "session": 1})
    history.append({"kind": "end", "session": 1})
    marker = session_env_marker("u", 2)
    started(history, 2, marker)
    proc = lost.spawn(marker)
    emitted = Emitted()
    assert (
        asyncio.run(reclaim.reclaim_lost_session(history, records, unit, emit=emitted, at=AT)) == 2
    )
    assert lost.ended(proc) == (0, "SIGINT")
    assert [r["kind"] for r in history.recent()] == ["start", "end", "start", "end"]
    assert history.recent()[-1]["session"] == 2


@pytest.mark.parametrize(
    "last",
    [
        None,  # an empty history
        {"kind": "end", "session": 2},  # ended
        {"kind": "start", "session": 2},  # no marker: nothing to find it by
        {"kind": "start", "session": 2, "marker": ""},
        {"kind": "start", "session": 3, "marker": "MARKER"},  # another session's marker
        {"kind": "start", "session": 2, "marker": "OTHER"},  # another unit's marker
        {"kind": "start", "marker": "FIRST"},  # no number: no session, whatever its marker
    ],
)
def test_nothing_is_ended_without_a_session_left_of_this_unit(
    home: Path, lost: Lost, last: dict[str, Any] | None
) -> None:
    unit = a_unit(home)
    history = History(home / "logs" / "u" / "history.jsonl")
    marker = session_env_marker("u", 2)
    other = session_env_marker("v", 2)
    if last is not None:
        first = session_env_marker("u", 1)
        replaced = {"MARKER": marker, "OTHER": other, "FIRST": first}
        history.append(
            {
                **last,
                **(
                    {"marker": replaced.get(last["marker"], last["marker"])}
                    if "marker" in last
                    else {}
                ),
            }
        )
    before = history.path.read_text() if last is not None else None
    proc, theirs = lost.spawn(marker), lost.spawn(other)
    emitted = Emitted()
    records = SessionRecords(home / "run" / "sessions")
    assert (
        asyncio.run(reclaim.reclaim_lost_session(history, records, unit, emit=emitted, at=AT))
        is None
    )
    assert not emitted and proc.poll() is None and theirs.poll() is None
    assert (history.path.read_text() if last is not None else None) == before


def test_an_end_is_recorded_only_to_close_that_sessions_open_start(home: Path) -> None:
    history = History(home / "history.jsonl")
    reclaim._record_end(history, 1, AT)  # empty: nothing to close
    history.append({"kind": "start", "session": 2})
    reclaim._record_end(history, 1, AT)  # another session's start
    history.append({"kind": "end", "session": 2})
    reclaim._record_end(history, 2, AT)  # closed already
    assert [r["kind"] for r in history.recent()] == ["start", "end"]
    history.append({"kind": "start"})  # no number: not session 1's
    reclaim._record_end(history, 1, AT)
    assert [r["kind"] for r in history.recent()] == ["start", "end", "start"]
    history.append({"kind": "start", "session": "3"})
    reclaim._record_end(history, 3, AT)
    assert history.recent()[-1] == {"kind": "end", "session": 3, "at": AT, "reason": "agentd-lost"}


def test_an_end_that_cannot_be_written_does_not_stop_the_reclaim(
    home: Path, lost: Lost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk: the session is ended and its record removed all the same."""
    unit = a_unit(home)
    history = History(home / "logs" / "u" / "history.jsonl")  # no health: a failure raises
    records = SessionRecords(home / "run" / "sessions")
    marker = session_env_marker("u", 1)
    started(history, 1, marker)
    record(records, "u", 1, marker)
    proc = lost.spawn(marker)

    real = os.write

    def full(fd: int, data: Any) -> int:  # the history's disk only
        if os.readlink(f"/proc/self/fd/{fd}") == str(history.path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    emitted = Emitted()
    try:
        assert reclaimed_as_owner(home, history, records, unit, emitted)
    finally:
        monkeypatch.undo()
    assert lost.ended(proc) == (0, "SIGINT")
    assert not events_of(emitted, "unit.error")
    assert records.read("u") is None
    assert history.recent()[-1]["kind"] == "start"


def test_a_unit_another_agentd_supervises_is_left_alone(home: Path, lost: Lost) -> None:
    unit = a_unit(home)
    history = History(home / "logs" / "u" / "history.jsonl")
    records = SessionRecords(home / "run" / "sessions")
    marker = session_env_marker("u", 1)
    started(history, 1, marker)
    record(records, "u", 1, marker)
    proc = lost.spawn(marker)
    theirs = UnitLock(home / "run" / "units" / "u.lock")
    assert theirs.claim(unit) is None  # another agentd (`agentd run u`) holds it
    ours = UnitLock(home / "run" / "units" / "u.lock")
    emitted = Emitted()
    try:
        assert not asyncio.run(
            reclaim.reclaim_if_owner(ours, history, records, unit, emit=emitted, at=AT)
        )
    finally:
        theirs.release()
        ours.release()
    assert proc.poll() is None and not emitted
    assert records.read("u") is not None and history.recent()[-1]["kind"] == "start"


def test_a_reclaim_that_fails_is_reported_not_raised(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unit = a_unit(home)
    history = History(home / "logs" / "u" / "history.jsonl")
    records = SessionRecords(home / "run" / "sessions")
    record(records, "u", 1, session_env_marker("u", 1))

    async def broken(**_: Any) -> None:
        raise PermissionError("no /proc")

    monkeypatch.setattr(reclaim, "end_session_tree", broken)
    emitted = Emitted()
    assert not reclaimed_as_owner(home, history, records, unit, emitted)
    assert emitted == [
        {
            "event": "unit.error",
            "level": "error",
            "unit": "u",
            "error": "reclaiming the last session: PermissionError: no /proc",
        }
    ]


# --- units that do not load again ------------------------------------------------------------


def test_the_sessions_of_units_that_did_not_load_again_are_ended_with_their_recorded_stop(
    home: Path, lost: Lost
) -> None:
    """Records are read in name order: a loaded unit's and a held one's come first."""
    records = SessionRecords(home / "run" / "sessions")
    logs, locks = home / "logs", home / "run" / "units"
    procs = {}
    for name, sig in (
        ("a-loaded", signal.SIGTERM),
        ("b-held", signal.SIGINT),
        ("c-gone", signal.SIGHUP),
    ):
        marker = session_env_marker(name, 4)
        started(History(logs / name / "history.jsonl"), 4, marker)
        record(records, name, 4, marker, signal=int(sig), grace=5.0)
        procs[name] = lost.spawn(marker)
    holder = UnitLock(locks / "b-held.lock")
    assert holder.claim_name("b-held") is None  # an `agentd run b-held` elsewhere
    emitted = Emitted()
    times = iter(["T-gone"])
    try:
        ended = asyncio.run(
            reclaim.reclaim_orphans(
                records, {"a-loaded"}, locks=locks, logs=logs, emit=emitted, at=lambda: next(times)
            )
        )
    finally:
        holder.release()
    assert ended == ["c-gone"]
    assert lost.ended(procs["c-gone"]) == (0, "SIGHUP")  # its recorded stop signal
    assert procs["a-loaded"].poll() is None and procs["b-held"].poll() is None
    [said] = events_of(emitted, "session.orphan_killed")
    assert (said["unit"], said["session"], said["signal"]) == ("c-gone", 4, "HUP")
    assert History(logs / "c-gone" / "history.jsonl").recent()[-1] == {
        "kind": "end",
        "session": 4,
        "at": "T-gone",
        "reason": "agentd-lost",
    }
    assert [r.unit for r in records.all()] == ["a-loaded", "b-held"]
    assert History(logs / "b-held" / "history.jsonl").recent()[-1]["kind"] == "start"
    # the lock file says who took it and why (as every lock file does: `PID NOTE`)
    assert (locks / "c-gone.lock").read_text() == f"{os.getpid()} reclaiming a lost session\n"
    again = UnitLock(locks / "c-gone.lock")  # let go once done
    assert again.claim_name("c-gone") is None
    again.release()


def test_a_record_with_a_name_no_unit_can_have_is_not_acted_on(home: Path, tmp_path: Path) -> None:
    sessions = home / "run" / "sessions"
    sessions.mkdir(parents=True)
    marker = session_env_marker("../x", 1)
    data = {"unit": "../x", "session": 1, "marker": marker, "signal": 15, "grace": 1.0}
    (sessions / "bad.json").write_text(json.dumps(data))
    emitted = Emitted()
    ended = asyncio.run(
        reclaim.reclaim_orphans(
            SessionRecords(sessions),
            set(),
            locks=home / "run" / "units",
            logs=home / "logs",
            emit=emitted,
            at=lambda: AT,
        )
    )
    assert ended == [] and not emitted
    assert not (home / "run" / "units").exists() and not (home / "logs").exists()


def test_one_orphan_that_cannot_be_ended_is_reported_and_the_others_are_ended(
    home: Path, lost: Lost, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = SessionRecords(home / "run" / "sessions")
    logs, locks = home / "logs", home / "run" / "units"
    markers = {name: session_env_marker(name, 1) for name in ("a", "b")}
    for name, marker in markers.items():
        record(records, name, 1, marker, signal=int(signal.SIGTERM), grace=5.0)
    proc = lost.spawn(markers["b"])
    real = end_session_tree

    async def failing_for_a(**kw: Any) -> Any:
        if kw["marker"] == markers["a"]:
            raise PermissionError("no /proc")
        return await real(**kw)

    monkeypatch.setattr(reclaim, "end_session_tree", failing_for_a)
    emitted = Emitted()
    ended = asyncio.run(
        reclaim.reclaim_orphans(records, set(), locks=locks, logs=logs, emit=emitted, at=lambda: AT)
    )
    assert ended == ["b"]
    assert lost.ended(proc) == (0, "SIGTERM")
    assert events_of(emitted, "unit.error") == [
        {
            "event": "unit.error",
            "level": "error",
            "unit": "a",
            "error": "reclaiming a lost session: PermissionError: no /proc",
        }
    ]
    assert [r.unit for r in records.all()] == ["a"]  # kept: tried again by the next agentd
    with contextlib.ExitStack() as stack:
        for name in ("a", "b"):
            lock = UnitLock(locks / f"{name}.lock")
            assert lock.claim_name(name) is None  # both let go
            stack.callback(lock.release)


@pytest.mark.parametrize("how", ["unit loads again", "orphan"])
def test_a_lost_sessions_cgroup_goes_with_its_record(
    home: Path, lost: Lost, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, how: str
) -> None:
    """The cgroup agentd made for the session (under a base that is a plain directory
    here, with no process in it): once the session is ended it is removed."""
    base = tmp_path / "cgroup-base"
    base.mkdir()
    monkeypatch.setattr(cgroups, "delegated_base", lambda: base)
    unit = a_unit(home)
    records = SessionRecords(home / "run" / "sessions")
    marker = session_env_marker("u", 1)
    own = base / cgroups.cgroup_name(marker)
    own.mkdir()
    records.begin(Recorded("u", 1, marker, str(own), int(signal.SIGTERM), 5.0))
    proc = lost.spawn(marker)
    emitted = Emitted()
    history = History(home / "logs" / "u" / "history.jsonl")
    if how == "orphan":
        run = reclaim.reclaim_orphans(
            records,
            set(),
            locks=home / "run" / "units",
            logs=home / "logs",
            emit=emitted,
            at=lambda: AT,
        )
    else:
        run = reclaim.reclaim_lost_session(history, records, unit, emit=emitted, at=AT)
    asyncio.run(run)  # type: ignore[arg-type]
    assert lost.ended(proc)[0] in (0, -signal.SIGKILL)
    assert not own.exists() and records.read("u") is None


@pytest.mark.parametrize("how", ["unit loads again", "orphan"])
def test_a_process_that_cleared_its_marker_is_ended_through_the_sessions_cgroup(
    home: Path, lost: Lost, how: str
) -> None:
    if cgroups.delegated_base() is None:
        pytest.skip("no delegated cgroup v2 here: agentd uses no cgroups on this machine")
    marker = session_env_marker("u", 1)
    own = cgroups.session_cgroup(marker)
    assert own is not None
    try:
        hidden = lost.spawn(None)  # `env -i`: no marker, only its cgroup says whose it is
        (own / "cgroup.procs").write_text(str(hidden.pid))
        records = SessionRecords(home / "run" / "sessions")
        records.begin(Recorded("u", 1, marker, str(own), int(signal.SIGTERM), 5.0))
        history = History(home / "logs" / "u" / "history.jsonl")
        if how == "orphan":
            run = reclaim.reclaim_orphans(
                records,
                set(),
                locks=home / "run" / "units",
                logs=home / "logs",
                emit=Emitted(),
                at=lambda: AT,
            )
        else:
            unit = a_unit(home, signal="TERM", grace="5s")
            run = reclaim.reclaim_lost_session(history, records, unit, emit=Emitted(), at=AT)
        asyncio.run(run)  # type: ignore[arg-type]
        assert lost.ended(hidden) == (0, "SIGTERM")
        assert not own.exists()
    finally:
        lost.close()
        with contextlib.suppress(OSError):
            own.rmdir()
