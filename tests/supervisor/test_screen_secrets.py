"""State secrets agentd typed into a session (issue 27): the transcript hid them, but
`screen`, `attach` and the dashboard showed them; and `restart --reason` kept token
shapes raw in the history and `status`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentd.supervisor.api import Supervisor
from agentd.supervisor.states import State
from tests.support import fake, poll_for, records, run_with

GH = "ghp_" + "A1b2C3d4E5" * 4  # a GitHub token's shape


def test_a_state_secret_typed_in_is_hidden_on_the_screen_and_to_attached_terminals(
    home: Path,
) -> None:
    state = home / "work" / ".agent"
    state.mkdir(parents=True)
    (state / "scratch.md").write_text(f"push with {GH}\n")
    seen: list[bytes] = []

    async def body(sup: Supervisor) -> None:
        svc = sup.get("s")
        svc.watch(seen.append)  # as `agentctl attach` is fed
        svc.start()
        await svc.wait(lambda s: s == State.RUNNING)
        await asyncio.to_thread(
            poll_for,
            lambda: (
                (home / "logs" / "s" / "transcript.log").exists()
                and "push with ***" in (home / "logs" / "s" / "transcript.log").read_text()
            ),
            what="the typed bootstrap echoed",
        )
        drawn = await asyncio.to_thread(sup.screen("s").draw, redraw=True)
        shown = "\n".join(drawn.rows)
        assert "push with" in shown  # the echo is there...
        assert GH not in shown and GH[:12] not in shown  # ...its secret is not
        assert GH.encode() not in drawn.redraw and b"push with" in drawn.redraw
        await sup.stop("s")

    run_with(
        home,
        "s",
        {
            "command": fake("prompt:> ", "wait"),
            "inject": {"mode": "stdin"},
            "pty": {"cols": 30, "rows": 40},  # the secret wraps across two rows
        },
        body,
    )
    relayed = b"".join(seen)
    assert b"push with" in relayed and GH.encode() not in relayed


SK = "sk-ant-api03-" + "Zx9" * 12


def test_a_token_shape_in_a_restart_reason_is_hidden(home: Path) -> None:
    async def body(sup: Supervisor) -> None:
        svc = sup.get("r")
        svc.start()
        await svc.wait(lambda s: s == State.RUNNING)
        sup.restart("r", f"rotated the key to {SK} and GITHUB_TOKEN={GH}")
        await svc.wait(lambda s: s == State.RUNNING and svc.session_no == 2)
        status = sup.status(["r"])[0]
        assert SK not in str(status) and GH not in str(status)
        assert "rotated the key to ***" in status["last_reason"]
        await sup.stop("r")

    seen = run_with(home, "r", {"command": fake("wait"), "inject": {"mode": "none"}}, body)
    history = (home / "logs" / "r" / "history.jsonl").read_text()
    assert SK not in history and GH not in history and "rotated the key to ***" in history
    assert not any(SK in str(e) for e in seen)
    assert records(home / "logs" / "r" / "history.jsonl")
