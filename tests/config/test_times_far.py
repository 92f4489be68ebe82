"""Reset times that no usage limit has: absurdly far, not a number (issue 27)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentd.cli.agentctl.output import status_rows
from agentd.supervisor.api import Supervisor
from agentd.supervisor.states import State
from agentd.times import MAX_RESET_AHEAD, iso, parse_reset_time
from tests.support import fake, run_with, states

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    "text",
    [
        "in 100000000000000000 days",
        "in 1" + "0" * 400 + " days",  # inf
        "Dec 31, 9999 11pm",
        "9999-12-31 23:00",
        "9999999999999",  # an epoch in milliseconds: the year 2286
    ],
)
def test_a_reset_further_than_a_usage_limit_goes_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a usage limit's reset"):
        parse_reset_time(text, NOW)


def test_a_reset_within_the_horizon_is_read() -> None:
    assert parse_reset_time("in 30 days", NOW) == NOW + 30 * 86400
    assert NOW + 30 * 86400 < NOW + MAX_RESET_AHEAD


@pytest.mark.parametrize("epoch", [1e300, -1e300, float("inf"), float("nan"), 1e17])
def test_iso_writes_any_epoch(epoch: float) -> None:
    assert iso(epoch).endswith("Z")


def test_a_pause_days_away_shows_its_date() -> None:
    until = NOW + 3 * 86400
    row = status_rows(
        [{"unit": "u", "state": "paused", "pid": None, "paused_until": iso(until)}], NOW
    )
    assert time.strftime("%Y-%m-%d %H:%M", time.localtime(until)) in row
    soon = status_rows(
        [{"unit": "u", "state": "paused", "pid": None, "paused_until": iso(NOW + 600)}], NOW
    )
    assert f"paused until {time.strftime('%H:%M', time.localtime(NOW + 600))}" in soon


def test_a_reset_in_ten_to_the_seventeen_days_pauses_for_pause_for(home: Path) -> None:
    """It ended the unit `failed` with an OverflowError; now the time is refused with a
    warning and the unit pauses for `pause_for`."""

    async def body(sup: Supervisor) -> None:
        svc = sup.get("far")
        svc.start()
        await svc.wait(lambda s: s in (State.PAUSED, State.FAILED))
        status = sup.status(["far"])[0]
        assert status["state"] == "paused", status
        left = time.time() + 7200 - svc.paused_until  # type: ignore[operator]
        assert -5 < left < 5

    seen = run_with(
        home,
        "far",
        {
            "command": fake("out:usage limit reached, resets in 100000000000000000 days", "wait"),
            "sentinels": [
                {
                    "name": "limit",
                    "action": "pause",
                    "pause_for": "2h",
                    "match": r"usage limit reached, resets (?P<until>in \d+ days)",
                }
            ],
            "inject": {"mode": "none"},
        },
        body,
    )
    assert "failed" not in states(seen)
    warned = [e for e in seen if e["event"] == "session.sentinel" and e.get("error")]
    assert warned and "not a usage limit's reset" in warned[0]["error"]
