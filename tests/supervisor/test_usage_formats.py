"""Each CLI's usage records, as the real CLIs wrote them, folded into exact figures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentd.config.sections import Budget
from agentd.config.usage import UsageSpec
from agentd.supervisor.budget import Usage, reached, usage_today, with_session
from agentd.supervisor.usage.formats import (
    AiderAnalytics,
    ClaudeTranscript,
    CodexRollout,
    Fold,
    GeminiChats,
)
from agentd.supervisor.usage.tally import Counts, Spent, estimate_record
from tests.realcli.usage_model import Reported, chosen, total

CAPTURES = Path(__file__).resolve().parent.parent / "fixtures" / "usage"
SPEC = UsageSpec()


def _records(name: str) -> Iterator[dict[str, Any]]:
    for line in (CAPTURES / name).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if isinstance(record, dict):
            yield record


def _fold(fold: Fold, name: str) -> Spent:
    for record in _records(name):
        fold.feed(record)
    spent = fold.spent()
    assert spent is not None
    return spent


def _expected(*ks: int, cache_write: bool = True) -> dict[str, int]:
    sums = total([chosen(k) for k in ks])
    return {
        "input_tokens": sums["input"],
        "output_tokens": sums["output"],
        "cache_read_tokens": sums["cache_read"],
        "cache_write_tokens": sums["cache_write"] if cache_write else 0,
    }


def _tokens(record: dict[str, Any]) -> dict[str, Any]:
    keys = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    return {key: record[key] for key in keys}


def test_claude_code_2_1_197_transcript_counts_each_main_response_once() -> None:
    record = _fold(ClaudeTranscript(), "claude-code-2.1.197-transcript.jsonl").record(SPEC)
    assert _tokens(record) == _expected(2, 3)  # the title request (1) has no record
    assert (record["model"], record["requests"], record["cost_usd"]) == (
        "claude-opus-4-8",
        2,
        None,
    )
    last = chosen(3)
    assert record["context_tokens"] == last.input + last.cache_read + last.cache_write + last.output


def test_claude_code_2_1_197_totals_on_exit_count_every_request_and_the_cost() -> None:
    fold = ClaudeTranscript()
    for record in _records("claude-code-2.1.197-transcript.jsonl"):
        fold.feed(record)
    config = json.loads((CAPTURES / "claude-code-2.1.197-claude.json").read_text())
    (entry,) = config["projects"].values()
    fold.claude_config(entry)
    record = fold.spent().record(SPEC)  # type: ignore[union-attr]
    assert _tokens(record) == _expected(1, 2, 3)  # the title request included
    assert record["cost_usd"] == pytest.approx(0.04003125) and record["cost_from"] == "cli"
    assert "requests" not in record  # the totals do not say how many


def test_claude_code_2_1_332_cost_state_holds_the_totals_and_the_cost() -> None:
    record = _fold(ClaudeTranscript(), "claude-code-2.1.332-transcript.jsonl").record(SPEC)
    assert _tokens(record) == _expected(1, 2)
    assert record["model"] == "claude-opus-5-5"
    assert record["cost_usd"] == pytest.approx(0.015898)


def test_claude_transcript_without_cost_state_sums_its_messages() -> None:
    fold = ClaudeTranscript()
    for record in _records("claude-code-2.1.332-transcript.jsonl"):
        if record.get("type") != "cost-state":  # as if killed before its exit
            fold.feed(record)
    assert not fold.has_totals
    assert _tokens(fold.spent().record(SPEC)) == _expected(1, 2)  # type: ignore[union-attr]


def test_claude_records_of_one_response_count_once_and_synthetic_ones_not_at_all() -> None:
    fold = ClaudeTranscript()
    assistant = [
        r for r in _records("claude-code-2.1.332-transcript.jsonl") if r.get("type") == "assistant"
    ]
    for record in [*assistant, assistant[0]]:  # a response of two blocks: two records, one id
        fold.feed(record)
    fold.feed(
        {
            "type": "assistant",
            "message": {"id": "x", "model": "<synthetic>", "usage": {"input_tokens": 9}},
        }
    )
    spent = fold.spent()
    assert spent is not None and spent.counts.requests == 2
    assert _tokens(spent.record(SPEC)) == _expected(1, 2)


def test_codex_rollout_total_leaves_out_the_title_request() -> None:
    record = _fold(CodexRollout(), "codex-0.171.0-rollout.jsonl").record(SPEC)
    assert _tokens(record) == _expected(1, 3, cache_write=False)  # Codex has no cache writes
    assert (record["model"], record["requests"], record["context_window"]) == (
        "fake-model",
        2,
        258400,
    )
    last = chosen(3)
    assert record["context_tokens"] == last.input + last.cache_read + last.output


def test_codex_rollout_from_its_last_token_count_alone() -> None:
    """A huge rollout is read from its end: the last token_count holds the totals."""
    fold = CodexRollout()
    records = list(_records("codex-0.171.0-rollout.jsonl"))
    last = [r for r in records if r.get("payload", {}).get("type") == "token_count"][-1]
    fold.feed(last)
    assert _tokens(fold.spent().record(SPEC)) == _expected(1, 3, cache_write=False)  # type: ignore[union-attr]


def test_gemini_chats_by_message_id_last_wins() -> None:
    spent = _fold(GeminiChats(), "gemini-0.61.0-chat.jsonl")
    record = spent.record(UsageSpec(context_window=1_048_576))
    # the routing request (1) is not recorded; thoughts count as output
    assert _tokens(record) == _expected(2, 3, cache_write=False)
    assert (record["model"], record["requests"]) == ("gemini-3.1-pro-preview", 2)
    assert spent.context_percent(UsageSpec(context_window=1_048_576)) == pytest.approx(
        100 * (chosen(3).input + chosen(3).cache_read + chosen(3).output) / 1_048_576
    )


def test_gemini_set_records_carry_messages_too() -> None:
    fold = GeminiChats()
    messages = [r for r in _records("gemini-0.61.0-chat.jsonl") if r.get("type") == "gemini"]
    fold.feed({"$set": {"messages": messages}})
    assert _tokens(fold.spent().record(SPEC)) == _expected(2, 3, cache_write=False)  # type: ignore[union-attr]


def test_aider_analytics_prompt_tokens_include_the_cached_ones() -> None:
    record = _fold(AiderAnalytics(), "aider-0.86.2-analytics.jsonl").record(SPEC)
    first = chosen(1)
    assert record["input_tokens"] == first.input + first.cache_read  # aider cannot split them
    assert (record["output_tokens"], record["cache_read_tokens"]) == (first.output, None)
    assert record["cost_usd"] == pytest.approx(
        (first.input + first.cache_read) * 3e-6 + first.output * 1.5e-5
    )
    assert record["model"] == "openai/fake"


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "assistant", "message": {"usage": {"input_tokens": -5, "output_tokens": "9"}}},
        {"type": "assistant", "message": "not a mapping"},
        {"type": "cost-state", "modelUsage": {"m": {"inputTokens": 1e400}}},
        {"type": "cost-state", "modelUsage": [1, 2]},
        {"type": "assistant", "message": {"usage": {"input_tokens": True}}},
    ],
)
def test_hostile_records_count_nothing_and_raise_nothing(bad: dict[str, Any]) -> None:
    fold = ClaudeTranscript()
    fold.feed(bad)
    spent = fold.spent()
    assert spent is None or spent.counts.total == 0


def test_prices_win_over_the_cli_cost_when_every_model_has_one() -> None:
    spent = Spent(
        "claude-transcript",
        {"claude-opus-4-8[1m]": Counts(1_000_000, 100_000, 2_000_000, 10)},
        9.99,
    )
    priced = UsageSpec.model_validate(
        {"prices": {"claude-opus-*": {"input": 5, "output": 25, "cache_read": 0.5}}}
    )
    cost, source = spent.cost(priced)
    assert source == "prices"
    assert cost == pytest.approx(5 + 2.5 + 1.0 + 10 * 5 / 1e6)
    assert spent.cost(UsageSpec()) == (9.99, "cli")
    partly = Spent("x", {"a": Counts(10), "b": Counts(10)}, None)
    assert partly.cost(UsageSpec.model_validate({"prices": {"a": {"input": 1}}})) == (None, None)


def test_day_sums_real_usage_and_estimates() -> None:
    now = 1_796_000_000.0
    at = "2026-11-30T12:00:00+00:00"
    from datetime import datetime

    at = datetime.fromtimestamp(now).astimezone().isoformat()
    real = Spent("codex-rollout", {"m": Counts(100, 20, 30, 0, 1)}).record(SPEC)
    real["cost_usd"] = 0.25
    records = [
        {"kind": "start", "session": 1, "at": at},
        {"kind": "end", "session": 1, "at": at, "duration_s": 3, "tokens": 999, "usage": real},
        {"kind": "start", "session": 2, "at": at},
        {
            "kind": "end",
            "session": 2,
            "at": at,
            "duration_s": 1,
            "tokens": 7,
            "usage": estimate_record(7),
        },
    ]
    day = usage_today(records, now)
    assert day == Usage(
        sessions=2, runtime_s=4, tokens=20 + 7, all_tokens=150 + 7, cost_usd=0.25, estimated=1
    )
    assert reached(Budget(max_tokens_per_day=157), day) == "max_tokens_per_day"
    assert reached(Budget(max_tokens_per_day=158), day) is None
    assert reached(Budget(max_cost_per_day=0.25), day) == "max_cost_per_day"
    running = with_session(day, {"usage": real})
    assert (running.all_tokens, running.cost_usd) == (307, 0.5)


def test_reported_is_what_the_tests_compare_with() -> None:
    """The fixtures' numbers are ``chosen(k)``: a change of it would silently change them."""
    assert chosen(2) == Reported(
        input=2017, output=83, cache_read=605, cache_write=141, reasoning=2
    )
