"""A sentinel that backtracks, against the agent's own text (issue 27): `(a+)+$` and a
26-character line froze the whole daemon for seconds (29 characters: 150 s). RE2 runs
that one in linear time; `(?!z)(a|a)+b` (a lookahead: not RE2's) runs with a timeout."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.daemon.test_hostile import no_traceback
from tests.support import Served, StatusWatch, events, fake, poll_for, write_unit

EVIL = "a" * 40 + "!b"  # neither matches: each tries every split of the a's


@pytest.mark.slow
def test_a_catastrophic_sentinel_never_holds_the_daemon(dhome: Path, serve: list[Served]) -> None:
    for name, match in (("re2", "(a+)+$"), ("budget", "(?!z)(a|a)+b")):
        write_unit(
            dhome,
            name,
            {
                "command": fake(*[f"out:{EVIL}"] * 20, "out:Compacting conversation", "wait"),
                "sentinels": [
                    {"name": "evil", "match": match, "action": "notify"},
                    {"name": "compaction", "match": "Compacting conversation", "action": "stop"},
                ],
                "inject": {"mode": "none"},
            },
        )
    d = Served(dhome).ready()
    serve.append(d)
    with StatusWatch(d.socket) as watch:
        for name in ("re2", "budget"):
            poll_for(
                lambda n=name: d.status(n)["state"] == "stopped",  # type: ignore[misc]
                timeout=30,
                what=f"{name}: the compaction sentinel after the evil lines",
            )
    watch.check()
    off = events(dhome, "session.sentinel_off")
    assert [(e["unit"], e["name"]) for e in off] == [("budget", "evil")]  # once, then off
    assert "backtracks" in off[0]["error"]
    assert d.stop() == 0
    no_traceback(d)
