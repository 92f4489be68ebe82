"""`agentd run` answers for its unit on a private socket: the session channel.

Every session's ``AGENTD_SOCKET`` names a socket that answers for its unit,
under ``agentd run`` as under ``agentd serve``: `agentctl` run by the agent
(or by the CLI's hooks) reaches its supervisor either way.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.support import agentd, fake, records, write_unit

QUICK = {"min_uptime": 0, "delay": "50ms"}


@pytest.mark.slow
def test_agentctl_restart_from_inside_a_session_under_agentd_run(
    home: Path, tmp_path: Path
) -> None:
    rec = tmp_path / "rec.jsonl"
    write_unit(
        home,
        "inner",
        {
            "command": fake(
                f"record:{rec}",
                "if-session:2:exit:0",
                "ctl:status $AGENTD_UNIT",
                "ctl:restart $AGENTD_UNIT --reason fresh",
                "wait",
            ),
            "restart": QUICK,
        },
    )
    res = agentd(home, "run", "inner", timeout=60)
    assert res.returncode == 0, res.stderr
    got = records(rec)
    assert [r["reason"] for r in got] == ["start", "manual:fresh"]
    socket = home / "run" / "units" / "inner.sock"
    assert {r["socket"] for r in got} == {str(socket)}
    transcript = (home / "logs" / "inner" / "transcript.log").read_text()
    assert "CTL:0:● inner" in transcript and "Active: running since" in transcript
    assert not socket.exists()  # removed on exit


@pytest.mark.slow
def test_the_run_socket_is_private(home: Path, tmp_path: Path) -> None:
    rec = tmp_path / "modes"
    probe = (
        "import os,stat,sys; p=os.environ['AGENTD_SOCKET']; "
        "open(sys.argv[1],'w').write('%o %o' % (stat.S_IMODE(os.stat(p).st_mode), "
        "stat.S_IMODE(os.stat(os.path.dirname(p)).st_mode)))"
    )
    write_unit(home, "priv", {"command": ["python3", "-c", probe, str(rec)]})
    res = agentd(home, "run", "priv")
    assert res.returncode == 0, res.stderr
    assert rec.read_text() == "600 700"
    assert not os.path.exists(home / "run" / "units" / "priv.sock")
    assert stat.S_IMODE(os.stat(home / "run" / "units").st_mode) == 0o700
