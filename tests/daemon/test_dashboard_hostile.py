"""The dashboard against hostile peers and input (issue 27): invalid unit files, the
port's caps and deadlines, DNS rebinding, the session cookie, slow live-event readers,
and other local users (a second uid: CI runs as root and can `useradd`)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import fake
from tests.daemon import test_dashboard
from tests.daemon.test_daemon import Served
from tests.daemon.test_dashboard import dashboard_daemon
from tests.helpers import write_unit

dhome, serve = test_dashboard.dhome, test_dashboard.serve  # the fixtures


def test_one_invalid_unit_file_does_not_make_the_pages_answer_500(
    dhome: Path, serve: list[Served]
) -> None:
    write_unit(dhome, "good", {"command": fake("wait"), "autostart": False})
    bad = dhome / "units" / "bad.yaml"
    bad.write_text(f"workdir: {dhome / 'work'}\ncommand: [true]\nrestart: {{exit_code: [42]}}\n")
    bad.chmod(0o600)
    _, site = dashboard_daemon(dhome, serve)
    code, _, page = site.get("/")
    assert code == 200, page
    assert 'href="/units/good"' in page and 'href="/units/bad"' in page
    assert "exit_code" in page  # what is wrong with it, as agentctl status says
    code, _, page = site.get("/units/bad")
    assert code == 200, page
    assert "invalid" in page and "exit_code" in page
    assert site.get("/units/bad/timeline.svg")[0] == 200
    assert site.get("/units/bad/screen")[0] == 404
    assert site.get("/units/bad/bootstraps/next")[0] == 404
    assert site.get("/units/bad/bootstraps/1")[0] == 404
