"""Usage records the agent made hostile, under the real `agentd serve`: read while
the session runs, they are refused and said once, and the daemon goes on answering
and supervising (a FIFO would block an open, a link to /etc/shadow leads out of the
CLI's directory). The session then ends with the screen estimate, marked so."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from tests.support import Served, agentctl, events, fake, poll_for, records, write_unit

pytestmark = [pytest.mark.timeout(90), pytest.mark.slow]

SID = "2e2b9c5d-428a-4fcd-ba2f-1870a0160bce"
HOSTILE = {
    "fifo": ('mkfifo "$1"', "is a FIFO"),
    "shadow": ('ln -s /etc/shadow "$1"', "leads outside"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_transcript_is_refused_while_the_daemon_goes_on(
    dhome: Path, serve: list[Served], tmp_path: Path, case: str
) -> None:
    make, said = HOSTILE[case]
    workdir, clihome = tmp_path / "w", tmp_path / "clihome"
    workdir.mkdir()
    folder = re.sub(r"[^A-Za-z0-9]", "-", os.path.realpath(workdir))
    where = clihome / ".claude" / "projects" / folder / f"{SID}.jsonl"
    agent = shlex.join(fake("out:working on it", "prompt:working> ", "wait"))
    script = f'mkdir -p "$(dirname "$1")" && {make}; exec {agent}'
    write_unit(
        dhome,
        "u",
        {
            "command": ["sh", "-c", script, "sh", str(where)],
            "workdir": str(workdir),
            "env": {"HOME": str(clihome)},
            "inject": {"mode": "none"},
            "usage": {"source": "claude-transcript"},
            "restart": {"min_uptime": 0, "delay": "50ms"},
        },
    )
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(
        lambda: [e for e in events(dhome, "unit.error") if said in e.get("error", "")],
        timeout=30,
        what=f"the usage reader refusing the {case}",
    )
    assert d.status("u")["state"] == "running"  # the daemon answers; the session goes on
    stopped = agentctl(dhome, "stop", "u")
    assert stopped.returncode == 0, stopped.stderr
    (end,) = [r for r in records(dhome / "logs" / "u" / "history.jsonl") if r["kind"] == "end"]
    usage = end["usage"]
    assert usage["source"] == "estimate" and said in usage["note"], usage
    assert usage["output_tokens"] == end["tokens"] > 0
    refused = [e for e in events(dhome, "unit.error") if said in e.get("error", "")]
    assert len(refused) == 1, refused  # said once, though read again at the end
    assert d.proc.poll() is None  # still serving
