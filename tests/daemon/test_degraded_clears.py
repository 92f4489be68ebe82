"""`degraded` ends when its cause does (issue 27): a kind of write that failed on a
full disk and did not come again (a bootstrap, a run record, while the session runs on
quietly) kept agentd `degraded` long after the disk had room again."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentd.events import PROBE_EVERY
from tests.daemon.test_hostile import fill, small_home  # noqa: F401 (a fixture)
from tests.support import QUICK, Served, events, fake, poll_for, write_unit


@pytest.mark.slow
def test_a_spell_of_failed_writes_ends_once_they_would_work(small_home: Path) -> None:  # noqa: F811
    write_unit(
        small_home,
        "u",
        {"command": fake("out:up", "wait"), "restart": QUICK, "stop": {"grace": "1s"}},
    )
    daemon = Served(small_home).ready()
    filler: Path | None = None
    try:
        poll_for(lambda: daemon.status("u")["state"] == "running", what="session 1")
        filler = fill(small_home)
        daemon.result("restart", units=["u"])  # session 2 starts on a full disk
        failing = poll_for(
            lambda: (
                {d["what"] for d in daemon.call("status").get("degraded", [])}
                & {"bootstrap:u", "run:u", "history:u"}
            ),
            what="the session's own writes failing",
        )
        filler.unlink()  # room again; the session runs on, writing nothing
        filler = None
        poll_for(
            lambda: not daemon.call("status").get("degraded"),
            timeout=PROBE_EVERY + 15,
            what=f"{failing} to end once writes would work",
        )
        recovered = {e["what"] for e in events(small_home, "daemon.recovered")}
        assert failing <= recovered
        assert daemon.status("u")["state"] == "running"
        assert daemon.stop() == 0
    finally:
        if filler is not None:
            filler.unlink()
        daemon.stop()
