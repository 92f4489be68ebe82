"""A refused completion, pure: the policy's decision (a fresh session, or failed after
``attempts``), and the bootstrap's first must-keep section that says why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentd.config.sections import Limits, RestartSpec
from agentd.memory.bootstrap.refusal import TITLE, Refusal
from agentd.memory.bootstrap.render import BootstrapContext, render
from agentd.memory.layout import resolve
from agentd.reasons import Outcome
from agentd.supervisor.policy import RestartPolicy, SessionEnd

TAIL = "\n".join(
    [*(f"tests/test_{i}.py::test_ok PASSED" for i in range(40)), "FAILED tests/test_cart.py"]
)


def refused(attempt: int, attempts: int = 3, tail: str = TAIL) -> Refusal:
    return Refusal(
        session=4,
        command="pytest -q",
        said="exited with code 1",
        tail=tail,
        attempt=attempt,
        attempts=attempts,
    )


def end(n: int = 4, **kw: object) -> SessionEnd:
    return SessionEnd(session=n, started_at=0.0, ended_at=60.0, **kw)  # type: ignore[arg-type]


def policy(**restart: object) -> RestartPolicy:
    return RestartPolicy(RestartSpec(**restart), Limits())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("attempt", "attempts", "next_"),
    [(1, 3, "start"), (2, 3, "start"), (3, 3, "failed"), (1, 1, "failed"), (5, 3, "failed")],
)
def test_a_refusal_hands_over_until_attempts_then_fails(
    attempt: int, attempts: int, next_: str
) -> None:
    claimed = end(exit_code=0, refusal=refused(attempt, attempts))
    decision = policy().decide(claimed, [], 60.0)
    assert (decision.next, decision.reason) == (next_, "verify-failed")
    assert decision.outcome == Outcome.VERIFY_FAILED
    assert not decision.failure  # not a crash: no backoff, no burst
    assert "`pytest -q` exited with code 1" in decision.detail
    assert f"{attempt}" in decision.detail


def test_a_refusal_is_not_a_failure_even_quick_or_with_a_failure_code() -> None:
    p = policy(burst=1, min_uptime=30)
    quick = [
        SessionEnd(n, 0.0, 0.1, exit_code=1, refusal=refused(1, 9), complete=None)
        for n in range(1, 6)
    ]
    assert not any(p.is_failure(e, quick[:i]) for i, e in enumerate(quick))
    assert p.decide(quick[-1], quick[:-1], 1.0).next == "start"
    # the same ends without the refusal are crashes that exhaust the burst
    plain = [SessionEnd(n, 0.0, 0.1, exit_code=1) for n in range(1, 6)]
    assert p.decide(plain[-1], plain[:-1], 1.0).next == "failed"


def test_a_stop_wins_over_a_refusal_and_max_sessions_still_holds() -> None:
    stopped = end(exit_code=0, refusal=refused(1), trigger="manual", action="stop")
    assert policy().decide(stopped, [], 60.0).next == "stopped"
    capped = policy(max_sessions=4).decide(end(4, exit_code=0, refusal=refused(1)), [], 60.0)
    assert (capped.next, capped.reason) == ("failed", "verify-failed")
    assert "max_sessions reached (4)" in capped.detail


def test_the_end_reason_is_verify_failed_and_without_a_refusal_complete_is_done() -> None:
    assert end(exit_code=0, refusal=refused(1)).reason == "verify-failed"
    done = policy().decide(end(exit_code=143, complete="all ported"), [], 60.0)
    assert (done.next, done.reason, done.outcome) == ("done", "complete", Outcome.DONE)


def ctx(work: Path, refusal: Refusal | None, budget: int = 3000) -> BootstrapContext:
    state = work / ".agent"
    state.mkdir(exist_ok=True)
    (state / "state.json").write_text(
        json.dumps({"schema_version": 1, "mission": "port the cart", "next_action": "run tests"})
    )
    (state / "scratch.md").write_text("notes " * 2000)
    return BootstrapContext(
        unit="cart",
        session=5,
        last_reason="verify-failed",
        state_dir=state,
        workdir=work,
        layout=resolve("agentd"),
        budget_tokens=budget,
        now=1_764_513_120.0,
        verify="pytest -q",
        refusal=refusal,
    )


def test_the_bootstrap_begins_with_the_refusal_naming_the_check_and_its_output(
    tmp_path: Path,
) -> None:
    boot = render(ctx(tmp_path, refused(1)))
    text = boot.text
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections[0] == f"## {TITLE}"  # the first section, before every state file
    assert "`verify-failed` (its claimed completion failed verification)" in text
    refusal = text.split(f"## {TITLE}", 1)[1].split("\n## ", 1)[0]
    assert (
        "Session 4 marked the mission complete, but the check `pytest -q` exited with code 1"
        in (refusal)
    )
    assert "refusal 1 of 3: 2 more refused completions and the unit ends `failed`" in refusal
    assert "FAILED tests/test_cart.py" in refusal
    assert "```text" in refusal
    assert "once its check `pytest -q` passes" in text  # the rules name the check
    row = next(r for r in boot.explain() if r["name"] == "the output of `pytest -q`")
    assert row["keep"] == "must"


def test_a_tight_budget_keeps_the_refusal_and_the_end_of_its_output(tmp_path: Path) -> None:
    boot = render(ctx(tmp_path, refused(3, 3), budget=700))
    refusal = boot.text.split(f"## {TITLE}", 1)[1].split("\n## ", 1)[0]
    assert "the next refusal ends the unit `failed`" in refusal
    assert "FAILED tests/test_cart.py" in refusal  # the end, where the runner says what failed
    assert "test_0.py" not in refusal  # the start was cut for the budget
    assert "cut for the token budget" in refusal
    assert "notes notes" not in boot.text  # free text gets nothing before must-keep facts


def test_no_refusal_no_section_and_control_characters_in_the_output_are_escaped(
    tmp_path: Path,
) -> None:
    assert TITLE not in render(ctx(tmp_path, None)).text
    boot = render(ctx(tmp_path, refused(1, tail="ok\x1b]0;pwned\x07\x03done")))
    assert "\x1b" not in boot.text and "\x03" not in boot.text
    assert "\\x1b]0;pwned\\x07\\x03done" in boot.text
    silent = render(ctx(tmp_path, refused(1, tail=""))).text
    assert "It printed nothing." in silent and "```text" not in silent
