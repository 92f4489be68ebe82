"""What scripts read from ``agentctl --json``: the keys of a status, and a reload's exit.

Against a real daemon: every unit's status object has the same keys, whatever
its state (running, stopped, a file that never loaded), so a script can read
any of them without guarding each; ``reload --json`` says what it found and
exits 1 when a file is invalid, as the plain ``reload`` does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agentd.cli.agentctl.group import main as agentctl_main
from tests.support import Served, fake, poll_for, write_unit

# The keys every status object has (agentctl status --json); more appear when they apply
# (paused_until, detail, verify, worktree, invalid...).
STATUS_KEYS = {
    "unit",
    "state",
    "pid",
    "session",
    "uptime_s",
    "output_bytes",
    "restarts",
    "last_reason",
    "last_at",
    "since",
    "enabled",
}


def agentctl(*args: str) -> Result:
    return CliRunner().invoke(agentctl_main, list(args), catch_exceptions=False)


@pytest.mark.slow
def test_every_status_object_has_the_same_keys_whatever_the_units_state(
    dhome: Path, serve: list[Served]
) -> None:
    write_unit(dhome, "up", {"command": fake("wait"), "stop": {"grace": "300ms"}})
    write_unit(dhome, "down", {"command": fake("wait"), "autostart": False})
    bad = dhome / "units" / "broken.yaml"
    bad.write_text("command: [x]\nworkdir: /nonexistent/dir\n")
    bad.chmod(0o600)
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: d.status("up")["state"] == "running", what="unit up to run")
    res = agentctl("status", "--json")
    objects = {o["unit"]: o for o in json.loads(res.stdout)}
    assert {u: o["state"] for u, o in objects.items()} == {
        "up": "running",
        "down": "stopped",
        "broken": "invalid",
    }
    missing = {u: sorted(STATUS_KEYS - o.keys()) for u, o in objects.items()}
    assert missing == {"up": [], "down": [], "broken": []}
    assert objects["broken"]["invalid"]["file"] == str(bad)
    assert objects["broken"]["output_bytes"] == 0 and objects["broken"]["pid"] is None
    assert isinstance(objects["up"]["pid"], int) and objects["down"]["pid"] is None


@pytest.mark.slow
def test_reload_json_says_what_it_found_and_exits_1_for_an_invalid_file(
    dhome: Path, serve: list[Served]
) -> None:
    d = Served(dhome)
    serve.append(d.ready())
    clean = agentctl("reload", "--json")
    assert clean.exit_code == 0, clean.output
    assert json.loads(clean.stdout)["invalid"] == []
    bad = dhome / "units" / "bad.yaml"
    bad.write_text("command: [x]\nworkdir: /nonexistent/dir\n")
    bad.chmod(0o600)
    write_unit(dhome, "c", {"command": fake("wait"), "autostart": False})
    res = agentctl("reload", "--json")
    assert res.exit_code == 1, res.output
    found = json.loads(res.stdout)
    assert found["loaded"] == ["c"]
    assert [(i["file"], i["line"]) for i in found["invalid"]] == [(str(bad), 2)]
