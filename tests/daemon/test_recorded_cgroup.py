"""The cgroup a session record names is agentd's own or nothing (issue 27): the next
agentd killed everything in whatever cgroup `run/sessions/UNIT.json` named."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentd.process import cgroup
from agentd.supervisor.records.sessions import Recorded, checked
from tests.support import Served, poll_for


@pytest.fixture
def victim() -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """A cgroup that is not one of agentd's sessions', with a process in it."""
    base = cgroup.delegated_base()
    if base is None:
        pytest.skip("no delegated cgroup v2 here: agentd uses no cgroups on this machine")
    path = base / f"victim-{os.getpid()}"
    path.mkdir(exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        (path / "cgroup.procs").write_text(str(proc.pid))
        yield path, proc
    finally:
        proc.kill()
        proc.wait()
        with contextlib.suppress(OSError):
            path.rmdir()


def marker(unit: str, session: int) -> str:
    return f"{os.environ.get('AGENTD_MARKER_PREFIX', '')}{unit}:{session}:0123456789ab"


@pytest.mark.slow
def test_a_record_naming_another_cgroup_is_not_obeyed(
    dhome: Path, serve: list[Served], victim: tuple[Path, subprocess.Popen[bytes]]
) -> None:
    path, proc = victim
    record = dhome / "run" / "sessions" / "ghost.json"
    record.parent.mkdir(parents=True)
    record.write_text(
        json.dumps(
            {
                "unit": "ghost",
                "session": 1,
                "marker": marker("ghost", 1),
                "cgroup": str(path),
                "signal": int(signal.SIGTERM),
                "grace": 1.0,
            }
        )
    )
    d = Served(dhome).ready()  # reclaims what records name, for units that did not load
    serve.append(d)
    poll_for(lambda: not record.exists(), timeout=20, what="the ghost record reclaimed")
    assert proc.poll() is None, "a process in a cgroup agentd does not own was killed"
    assert path.is_dir() and cgroup.members(path) == [proc.pid]
    assert d.stop() == 0


@pytest.mark.parametrize(
    ("written", "unit", "session", "kept"),
    [
        ("{base}/agentd-{m}", "a", 4, True),  # what agentd makes for it
        ("{base}/victim", "a", 4, False),
        ("{base}/agentd-{m}/../victim", "a", 4, False),
        ("/sys/fs/cgroup/agentd-{m}", "a", 4, None),  # outside the delegated base
        ("{base}/agentd-{other}", "a", 4, False),  # another session's
        ("", "a", 4, False),
    ],
)
def test_a_recorded_cgroup_must_be_the_sessions_own(
    written: str, unit: str, session: int, kept: bool | None
) -> None:
    base = cgroup.delegated_base()
    if base is None:
        pytest.skip("no delegated cgroup v2 here")
    m = marker(unit, session)
    name = cgroup.PREFIX + m.replace("/", "_").replace(":", ".")
    text = written.format(
        base=base, m=name[len(cgroup.PREFIX) :], other=name[len(cgroup.PREFIX) :] + "0"
    )
    record = Recorded(unit, session, m, text or None, 15, 1.0)
    expected = base / name if kept else None
    if kept is None and str(base) == "/sys/fs/cgroup":
        expected = base / name
    assert record.cgroup_path == expected


@pytest.mark.parametrize(
    ("mark", "good"),
    [
        ("{p}a:4:0123456789ab", True),
        ("{p}b:4:0123456789ab", False),  # another unit's session
        ("{p}a:5:0123456789ab", False),
        ("{p}xa:4:0123456789ab", False),
        ("", False),
        ("{p}a:4:", False),
        ("{p}a.verify:4:0123456789ab", True),  # its completion check after session 4
        ("{p}b.verify:4:0123456789ab", False),
        ("{p}a.other:4:0123456789ab", False),
    ],
)
def test_a_recorded_marker_must_be_the_sessions_own(mark: str, good: bool) -> None:
    prefix = os.environ.get("AGENTD_MARKER_PREFIX", "")
    record = Recorded("a", 4, mark.format(p=prefix), None, 15, 1.0)
    assert (checked(record) is not None) is good
