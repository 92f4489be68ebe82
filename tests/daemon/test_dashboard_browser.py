"""The dashboard in a real browser: the distribution's Chromium (``apt-get install
chromium``) driven by Playwright's Python package, pointed at ``/usr/bin/chromium``;
no browser is ever downloaded. Skips, saying what to install, when either is
missing.

The unit page's screenshot is written to the test's tmp dir, and also to
``$AGENTD_DASHBOARD_SCREENSHOT`` when set (how ``docs/dashboard.png`` is made).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from agentd.daemon.dashboard.timeline import COLOURS
from tests.support import (
    QUICK,
    WAIT_MS,
    Served,
    Web,
    console_errors,
    dashboard_daemon,
    fake,
    poll_for,
    write_unit,
)

sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="the dashboard's browser tests need playwright: pip install -e '.[test]'",
)
expect = sync_api.expect
SCREENSHOT = "AGENTD_DASHBOARD_SCREENSHOT"


ALPHA_ON_SCREEN = re.compile("alpha working|agentd bootstrap: alpha, session 4")


def _shown(screen: str | list[str]) -> list[str]:
    """A screen's non-blank rows, right-trimmed: as the page shows them and as the daemon
    draws them."""
    rows = screen.splitlines() if isinstance(screen, str) else screen
    return [row.rstrip() for row in rows if row.strip()]


def two_units(home: Path) -> None:
    """alpha: four sessions (a hand-over, a compaction, a crash, then one that runs
    on); beta: one that runs until stopped."""
    write_unit(
        home,
        "alpha",
        {
            "command": fake(
                "out:alpha working",
                "sleep:1",
                "if-session:2:out:Compacting conversation",
                "if-session:2:wait",
                "if-session:3:exit:3",
                "if-session:4:wait",
                "exit:42",
            ),
            "sentinels": [
                {"name": "compaction", "match": "Compacting conversation", "action": "restart"}
            ],
            "restart": {**QUICK, "exit_codes": [42]},
        },
    )
    write_unit(
        home,
        "beta",
        {"command": fake("out:beta is thinking", "wait"), "state": {"dir": ".agent-beta"}},
    )  # two units may not share one


@pytest.mark.slow
def test_units_page_timeline_tooltips_and_a_screenshot(
    dhome: Path, serve: list[Served], browser: Any, tmp_path: Path
) -> None:
    two_units(dhome)
    d, site = dashboard_daemon(dhome, serve)
    page = browser.new_page()
    refused = page.goto(site.url)
    assert refused is not None and refused.status == 401
    assert "needs its token" in page.content()
    assert "Traceback" not in d.stderr and "Error handling request" not in d.stderr

    errors = console_errors(page)
    page.goto(f"{site.url}?token={site.token}")  # sets the cookie; the address drops the token
    expect(page).to_have_url(site.url, timeout=WAIT_MS)
    rows = page.locator("table.units tbody tr[data-unit]")
    assert rows.evaluate_all("rows => rows.map(r => r.dataset.unit)") == ["alpha", "beta"]
    poll_for(
        lambda: d.status("alpha")["session"] == 4 and d.status("alpha")["pid"],
        timeout=30,
        what="alpha's fourth session",
    )

    page.get_by_role("link", name="alpha").click()
    page.wait_for_url(f"{site.url}units/alpha", timeout=WAIT_MS)
    bars = page.locator("svg.timeline rect.session")
    got = bars.evaluate_all("""bars => bars.map(b => [b.dataset.session, b.dataset.outcome,
                                b.getAttribute('fill'), b.querySelector('title').textContent])""")
    assert [(n, outcome) for n, outcome, _, _ in got] == [
        ("1", "handoff"),
        ("2", "context"),
        ("3", "crashed"),
        ("4", "running"),
    ]
    assert [fill for _, _, fill, _ in got] == [COLOURS[o] for _, o, _, _ in got]
    # the tooltip is the bar's <title>
    assert got[1][3].startswith("session 2: context (sentinel:compaction), ")
    assert got[2][3].startswith("session 3: crashed (exit:3)")
    # session 4's screen: its output and the bootstrap's echo, in whichever order the two
    # processes got there (on loaded cores the agent may print first; 40 rows of bootstrap
    # then scroll its line away), so judged against the daemon's own screen
    expect(page.locator("#screen")).to_contain_text(ALPHA_ON_SCREEN, timeout=WAIT_MS)
    expect(page.locator("#events li").nth(5)).to_be_attached(timeout=WAIT_MS)
    # the picture: session 4 a few seconds in, drawn afresh
    poll_for(lambda: d.status("alpha")["uptime_s"] >= 3, what="alpha's session 4 to last 3 s")
    page.reload()
    poll_for(
        lambda: (
            _shown(page.locator("#screen").inner_text())
            == _shown(d.result("screen", unit="alpha")["rows"])
        ),
        timeout=WAIT_MS / 1000,
        what="the screen pane to show what `agentctl screen alpha` shows",
    )
    shot = tmp_path / "dashboard.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    if os.environ.get(SCREENSHOT):
        shutil.copyfile(shot, os.environ[SCREENSHOT])

    page.goto(f"{site.url}units/alpha?span=1h")
    assert page.locator("svg.timeline rect.session").count() == 4
    assert page.locator(".zoom b").text_content() == "1h"
    assert errors == []  # e.g. nothing the Content-Security-Policy refused


def live_page(browser: Any, d: Served, site: Web, path: str) -> tuple[Any, list[str]]:
    """Once beta runs: a page open at ``path`` (the token given) with its live events
    flowing, and the console errors it will log."""
    poll_for(lambda: d.status("beta")["pid"], what="beta to run")
    page = browser.new_page()
    errors = console_errors(page)
    page.goto(f"{site.url}{path}?token={site.token}")
    expect(page.locator("#live")).to_have_class("live on", timeout=WAIT_MS)  # events open
    return page, errors


@pytest.mark.slow
def test_the_stop_button_stops_the_unit_and_events_come_live(
    dhome: Path, serve: list[Served], browser: Any
) -> None:
    two_units(dhome)
    d, site = dashboard_daemon(dhome, serve)
    page, errors = live_page(browser, d, site, "units/beta")
    assert page.locator("#summary .state").text_content() == "running"

    page.get_by_role("button", name="Stop").click()
    expect(page.locator("#summary .state")).to_have_text("stopped", timeout=WAIT_MS)
    assert d.status("beta")["state"] == "stopped" and d.status("beta")["pid"] is None
    assert page.url == f"{site.url}units/beta"

    expect(page.locator("#live")).to_have_class("live on", timeout=WAIT_MS)
    d.result("start", units=["beta"])  # from agentctl: the page follows by itself
    started = page.locator("#events li", has_text="session.start").filter(has_text="beta #2")
    expect(started).to_have_count(1, timeout=WAIT_MS)
    expect(page.locator("#summary .state")).to_have_text("running", timeout=WAIT_MS)
    page.get_by_text("The next session's bootstrap").click()
    expect(page.locator("details.bootstrap pre").first).to_contain_text(
        "# agentd bootstrap: beta, session 3", timeout=WAIT_MS
    )
    assert errors == []
    page.close()  # the browser leaves: its live stream ends, quietly
    assert d.stop() == 0
    assert "Traceback" not in d.stderr and "Error handling request" not in d.stderr


@pytest.mark.slow
def test_a_click_pressed_before_the_page_refreshes_and_released_after_is_not_lost(
    dhome: Path, serve: list[Served], browser: Any
) -> None:
    """The live parts of a page are fetched and replaced at each change of a unit (and
    every 15 s while one runs). A link pressed before such a change and released after
    it still goes where it leads: the fresh parts wait for the release (without that,
    the link under the pointer was replaced and the click went nowhere)."""
    write_unit(dhome, "beta", {"command": fake("out:beta is thinking", "wait")})
    d, site = dashboard_daemon(dhome, serve)
    page, errors = live_page(browser, d, site, "")
    # the refresh comes: held for the release, or (what this guards against) put in at once
    page.evaluate(
        """() => {
            document.getElementById('units').dataset.before = '1';
            document.addEventListener('agentd:held', () => { window.held = true; });
        }"""
    )
    box = page.get_by_role("link", name="beta").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    d.result("stop", units=["beta"])  # a change: the table is fetched again, and held
    page.wait_for_function(
        "() => window.held === true || !document.getElementById('units').dataset.before",
        timeout=WAIT_MS,
    )
    page.mouse.up()
    page.wait_for_url(f"{site.url}units/beta", timeout=WAIT_MS)
    expect(page.locator("#summary .state")).to_have_text("stopped", timeout=WAIT_MS)
    assert errors == []
