"""The dashboard's presentation in the distribution's Chromium: a colour per state,
a failed unit's last screen after a daemon restart and a unit that never ran,
short sessions still wide enough to hover at a 5-minute zoom, and events as a
readable list; each checked on the page and kept as a screenshot."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support import (
    WAIT_MS,
    Served,
    console_errors,
    dashboard_daemon,
    fake,
    poll_for,
    write_unit,
)

sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright")
expect = sync_api.expect
SHOTS = "AGENTD_DASHBOARD_SHOTS"  # a dir to keep the screenshots in, when set


def shot(page: Any, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    if os.environ.get(SHOTS):
        shutil.copyfile(path, Path(os.environ[SHOTS]) / path.name)
    return path


@pytest.mark.slow
def test_states_screens_zoom_and_events_as_a_person_sees_them(
    dhome: Path, serve: list[Served], browser: Any, tmp_path: Path
) -> None:
    write_unit(
        dhome,
        "crash",
        {
            "command": fake("out:loading", "out:Error: no API key", "exit:3"),
            "inject": {"mode": "none"},
            "restart": {"on_failure": False},
        },
    )
    write_unit(
        dhome,
        "fin",
        {"command": fake("out:all done", "exit:0"), "state": {"dir": ".agent-f"}},
    )
    write_unit(
        dhome,
        "run",
        {"command": fake("out:working", "wait"), "state": {"dir": ".agent-r"}},
    )
    write_unit(
        dhome,
        "never",
        {"command": fake("wait"), "autostart": False, "state": {"dir": ".agent-n"}},
    )
    first, _ = dashboard_daemon(dhome, serve)
    poll_for(
        lambda: (
            first.status("crash")["state"] == "failed" and first.status("fin")["state"] == "done"
        ),
        what="crash failed and fin done",
    )
    assert first.stop() == 0
    d, site = dashboard_daemon(dhome, serve)  # a restart: the screens come from disk
    poll_for(lambda: d.status("run")["state"] == "running", what="run running again")
    page = browser.new_page()
    errors = console_errors(page)
    page.goto(f"{site.url}?token={site.token}")
    pills = {
        state: page.locator(f"table.units .state.s-{state}").first.evaluate(
            "p => getComputedStyle(p).backgroundColor"
        )
        for state in ("running", "done", "failed", "stopped")
    }
    assert len(set(pills.values())) == 4, pills  # done is not running's green
    shot(page, tmp_path, "units")

    page.goto(f"{site.url}units/crash")
    expect(page.locator("#screen")).to_contain_text("Error: no API key", timeout=WAIT_MS)
    note = page.locator(".screen-note").text_content() or ""
    assert note.startswith("Not running: session 1 ended (exit:3: on_failure is off) at ")
    items = page.locator("#events li")
    expect(items.first).to_be_attached(timeout=WAIT_MS)
    said = items.evaluate_all("items => items.map(i => i.textContent)")
    assert any("running → stopping" in s or "stopping → failed" in s for s in said), said
    assert not [s for s in said if "={" in s or '":' in s], said  # no raw JSON
    shot(page, tmp_path, "failed")

    page.goto(f"{site.url}units/never")
    assert "never ran: there is no screen yet" in (page.locator("#screen-box").text_content() or "")

    page.goto(f"{site.url}units/fin?span=5m")
    assert page.locator(".zoom b").text_content() == "5m"
    bar = page.locator("svg.timeline rect.session").first.bounding_box()
    assert bar is not None and bar["width"] >= 3, bar  # a session of a second, still seen
    shot(page, tmp_path, "zoom-5m")
    assert errors == []
