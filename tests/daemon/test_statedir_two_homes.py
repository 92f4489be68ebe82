"""One state dir, two agentds (issue 27): the lock in `run/statedirs` only worked within
one AGENTD_HOME; two daemons of two homes both ran a unit on the same state dir."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import Served, events, fake, poll_for, write_unit


@pytest.fixture
def other_home() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="ad", dir="/tmp"))
    (root / "units").mkdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_a_state_dir_in_use_by_another_home_refuses_the_second(
    dhome: Path, other_home: Path, serve: list[Served], tmp_path: Path
) -> None:
    work = tmp_path / "shared"
    work.mkdir()
    write_unit(dhome, "a", {"command": fake("wait"), "workdir": str(work)})
    write_unit(other_home, "b", {"command": fake("wait"), "workdir": str(work)})
    first = Served(dhome).ready()
    serve.append(first)
    poll_for(lambda: first.status("a")["state"] == "running", what="a running")
    assert (work / ".agent").is_dir()  # made by a's first session
    second = Served(other_home).ready()
    serve.append(second)
    refused = poll_for(
        lambda: [e for e in events(other_home, "unit.error") if e.get("unit") == "b"],
        what="b refused",
    )
    assert "in use by another agentd" in refused[0]["error"]
    assert str(work / ".agent") in refused[0]["error"]
    assert second.status("b")["state"] != "running"
    assert first.status("a")["state"] == "running"
    assert first.stop() == 0
    second.result("start", units=["b"])  # free now: the second may have it
    poll_for(lambda: second.status("b")["state"] == "running", what="b running")
    assert second.stop() == 0
