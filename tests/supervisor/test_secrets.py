"""Secrets in the state, in `--reason` and in argv: hidden wherever agentd keeps or shows them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentd.supervisor.api import Supervisor
from agentd.supervisor.states import State
from tests.support import agentd, async_poll_for, events, fake, records, run_with, write_unit

GH = "ghp_" + "A1b2C3d4E5" * 4  # a GitHub token's shape
CORP = "corp-7f3a9c1e"  # only the unit's `secrets:` pattern knows this one


@pytest.mark.slow
def test_a_secret_in_the_state_is_hidden_in_the_kept_bootstrap_the_transcript_and_events(
    home: Path, tmp_path: Path
) -> None:
    rec = tmp_path / "rec.jsonl"
    state = home / "work" / ".agent"
    state.mkdir(parents=True)
    (state / "scratch.md").write_text(
        f"push with {GH}\nDEPLOY_PASSWORD=hunter2hunter2\nthe vpn: {CORP}\n"
    )
    # The agent prints what it was given, and the token split by a colour code and a wrap.
    split = GH[:10] + "\\x1b[31m" + GH[10:25] + "\\r\\n" + GH[25:]
    write_unit(
        home,
        "s",
        {
            "command": fake(
                f"record:{rec}",
                "bootstrap",
                f"out:again {split} done",
                "exit:0",
                "--",
                "Read {bootstrap_file}",
            ),
            "secrets": ["corp-[0-9a-f]{8}"],
        },
    )
    res = agentd(home, "run", "s")
    assert res.returncode == 0, res.stderr
    given = Path(records(rec)[0]["bootstrap_file"])
    kept = home / "logs" / "s" / "bootstrap-1.md"
    assert given != kept and given.is_relative_to(home / "run")
    whole = records(rec)[0]["bootstrap"]
    assert GH in whole and CORP in whole  # the agent has its state
    assert records(rec)[0]["given_mode"] == "0o600"
    assert not given.exists()  # removed when the unit's supervisor is done with it
    logs = [
        kept.read_text(),
        (home / "logs" / "s" / "transcript.log").read_text(),
        (home / "logs" / "agentd.jsonl").read_text(),
        (home / "logs" / "s" / "history.jsonl").read_text(),
    ]
    for text in logs:
        for secret in (GH, "hunter2hunter2", CORP, GH[:10], GH[25:]):
            assert secret not in text
    assert "push with ***" in logs[0] and "DEPLOY_PASSWORD=***" in logs[0]
    assert "again *** done" in logs[1]


@pytest.mark.slow
def test_without_secrets_the_session_is_given_the_kept_copy(home: Path, tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    write_unit(home, "p", {"command": fake(f"record:{rec}", "exit:0", "--", "{bootstrap_file}")})
    assert agentd(home, "run", "p").returncode == 0
    assert records(rec)[0]["bootstrap_file"] == str(home / "logs" / "p" / "bootstrap-1.md")


@pytest.mark.slow
def test_a_secret_pattern_is_checked_when_the_unit_loads(home: Path) -> None:
    write_unit(home, "bad", {"command": fake("exit:0"), "secrets": ["ok-[0-9]+", "x*", "("]})
    res = agentd(home, "check")
    assert res.returncode != 0
    assert "secrets[1]: 'x*' matches empty text" in res.stdout + res.stderr


@pytest.mark.slow
def test_argv_injection_warns_once_per_unit_that_ps_shows_the_state(home: Path) -> None:
    write_unit(
        home,
        "v",
        {
            "command": fake("if-session:2:exit:0", "exit:42", "--", "{bootstrap}"),
            "restart": {"min_uptime": "0s", "delay": "50ms"},
        },
    )
    assert agentd(home, "run", "v").returncode == 0
    warned = events(home, "unit.error")
    assert len(warned) == 1 and warned[0]["level"] == "warning"
    assert "`ps`" in warned[0]["error"]
    assert len(events(home, "session.start")) == 2


def test_a_reason_is_hidden_in_status_history_events_and_the_next_bootstrap(
    home: Path, tmp_path: Path
) -> None:
    rec = tmp_path / "rec.jsonl"
    token = "tok-0123456789"
    seen_status: list[dict[str, object]] = []

    async def body(sup: Supervisor) -> None:
        svc = sup.get("r")
        svc.start()
        await svc.wait(lambda s: s == State.RUNNING)
        # session 1 has recorded itself, whole (else the restart could come first)
        await async_poll_for(
            lambda: rec.exists() and rec.read_text().endswith("\n"), what="session 1's record"
        )
        sup.restart("r", f"rotate {token} now")
        await svc.wait(lambda s: s == State.DONE)
        seen_status.extend(sup.status(["r"]))

    seen = run_with(
        home,
        "r",
        {
            "command": fake(
                f"record:{rec}", "if-session:2:exit:0", "wait", "--", "{bootstrap_file}"
            ),
            "env": {"API_TOKEN": token},
        },
        body,
    )
    got = records(rec)
    assert got[1]["reason"] == "manual:rotate *** now"
    logs = home / "logs"
    for text in (
        json.dumps(seen),
        json.dumps(seen_status),
        (logs / "r" / "history.jsonl").read_text(),
        (logs / "r" / "bootstrap-2.md").read_text(),
        (logs / "agentd.jsonl").read_text(),
    ):
        assert token not in text
    assert "manual:rotate *** now" in (logs / "r" / "bootstrap-2.md").read_text()


def test_the_preview_of_the_next_bootstrap_hides_them_too(home: Path) -> None:
    """`agentctl bootstrap UNIT` and the dashboard show what the next session would get:
    with its secrets hidden, as in the kept copies."""
    state = home / "work" / ".agent"
    state.mkdir(parents=True)
    (state / "scratch.md").write_text(f"push with {GH}\nthe vpn: {CORP}\n")
    shown: list[str] = []

    async def body(sup: Supervisor) -> None:
        number, boot = sup.preview_bootstrap("p")
        assert number == 1
        shown.append(boot.text)

    run_with(
        home,
        "p",
        {"command": fake("exit:0"), "secrets": ["corp-[0-9a-f]{8}"], "autostart": False},
        body,
    )
    assert "push with ***" in shown[0] and "the vpn: ***" in shown[0]
    assert GH not in shown[0] and CORP not in shown[0]
