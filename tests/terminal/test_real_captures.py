"""What real CLIs drew on their terminals, through the matcher with the presets'
rules, as a session builds them (``agentd.supervisor.triggers.rules``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentd.config.unit import Unit
from agentd.supervisor.triggers import rules
from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Hit

CAPTURED = Path(__file__).resolve().parent.parent / "fixtures" / "captured"


def _hits(preset: str, capture: str) -> list[Hit]:
    unit = Unit.model_validate({"name": "u", "preset": preset, "workdir": "/"})
    matcher = LineMatcher(rules(unit))
    data = (CAPTURED / capture).read_bytes()
    hits: list[Hit] = []
    for i in range(0, len(data), 512):  # as the fake agent replays it: 512-byte writes
        hits += matcher.feed(data[i : i + 512])
    return hits + matcher.flush()


def test_codex_context_compacted_restarts() -> None:
    hits = _hits("codex", "codex-0.171.0-autocompact.raw")
    assert [h.rule.name for h in hits if h.rule.action == "restart"][:1] == ["compacted"]


def test_claude_code_context_low_footer_asks_for_a_handoff() -> None:
    unit = Unit.model_validate({"name": "u", "preset": "claude-code", "workdir": "/"})
    handoffs = [
        h
        for h in _hits("claude-code", "claude-code-2.1.197-context-low.raw")
        if h.rule.name == "handoff"
    ]
    assert handoffs, "the footer's `10% until auto-compac` was not seen"
    assert unit.handoff.percent_left(handoffs[0].groups) == 10
    assert unit.handoff.wanted(handoffs[0].groups)


@pytest.mark.parametrize(
    "capture",
    sorted(p.name for p in CAPTURED.glob("claude-code-*.raw") if "context-low" not in p.name),
)
def test_claude_code_compaction_is_seen(capture: str) -> None:
    names = [h.rule.name for h in _hits("claude-code", capture)]
    assert "compacting" in names or "compacted" in names, names
