"""A session's usage record (the ``usage`` of its ``end`` record in the history,
``agentd.supervisor.usage`` writes them) read back and put in words: what the
budgets sum, and what ``agentctl status``/``history``/``top`` and the dashboard
show. A shared leaf (the command line reads records without the supervisor).
Pure: records that are not what they should be count as nothing."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

ESTIMATE = "estimate"  # ``source`` of a record estimated from the screen (output only)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if math.isfinite(value) and value > 0 else 0.0


def is_real(usage: Any) -> bool:
    """A usage record read from the CLI's records (not the screen estimate)."""
    return isinstance(usage, Mapping) and usage.get("source") not in (None, ESTIMATE)


def tokens_of(usage: Any) -> int:
    """Every token a usage record counts (only the estimated output for an estimate)."""
    if not isinstance(usage, Mapping):
        return 0
    keys = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    return int(sum(_number(usage.get(key)) for key in keys))


def output_of(usage: Any) -> int:
    return int(_number(usage.get("output_tokens"))) if isinstance(usage, Mapping) else 0


def cost_of(usage: Any) -> float:
    return _number(usage.get("cost_usd")) if isinstance(usage, Mapping) else 0.0


# -- in words ---------------------------------------------------------------------------
def tokens_text(n: float) -> str:
    """``916``, ``4,282``, ``12.3k``, ``1.25M``."""
    if n < 10_000:
        return f"{int(n):,}"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"


def cost_text(usd: float | None) -> str:
    """``$12.34``, ``$0.016``, ``<$0.001``; ``-`` when unknown."""
    if usd is None:
        return "-"
    if usd >= 1:
        return f"${usd:,.2f}"
    if usd >= 0.001 or usd == 0:
        return f"${usd:.3f}"
    return "<$0.001"


def tokens_cell(usage: Any) -> str:
    """The tokens of a session in a table: every token its CLI recorded, or
    ``~N est.`` (output estimated from the screen); ``-`` when nothing is known."""
    if not isinstance(usage, Mapping):
        return "-"
    if is_real(usage):
        return tokens_text(tokens_of(usage))
    if usage.get("source") == ESTIMATE:
        return f"~{tokens_text(tokens_of(usage))} est."
    return "-"


def cost_cell(usage: Any) -> str:
    cost = usage.get("cost_usd") if isinstance(usage, Mapping) else None
    return cost_text(cost) if isinstance(cost, int | float) else "-"


def context_cell(usage: Any) -> str:
    """How full the context was at the last request: ``57%``; ``-`` when not known."""
    if not isinstance(usage, Mapping):
        return "-"
    used, window = usage.get("context_tokens"), usage.get("context_window")
    if not isinstance(used, int) or not isinstance(window, int) or window <= 0:
        return "-"
    return f"{100 * used / window:.0f}%"


def usage_line(usage: Any) -> str:
    """One line of everything a usage record says, for ``agentctl status UNIT``."""
    if not isinstance(usage, Mapping):
        return "-"
    if not is_real(usage):
        note = f"; {usage['note']}" if usage.get("note") else ""
        return f"~{tokens_text(tokens_of(usage))} output tokens, estimated from the screen{note}"
    parts = [
        ("in", usage.get("input_tokens")),
        ("out", usage.get("output_tokens")),
        ("cache read", usage.get("cache_read_tokens")),
        ("cache write", usage.get("cache_write_tokens")),
    ]
    split = ", ".join(f"{name} {v:,}" for name, v in parts if isinstance(v, int))
    said = [f"{tokens_text(tokens_of(usage))} tokens ({split})"]
    if isinstance(usage.get("cost_usd"), int | float):
        said.append(cost_text(usage["cost_usd"]))
    if usage.get("model"):
        said.append(str(usage["model"]))
    context = context_cell(usage)
    if context != "-":
        said.append(f"context {context} of {tokens_text(usage['context_window'])}")
    said.append(f"from {usage.get('source')}")
    if usage.get("partial"):
        said.append(f"partial: {usage['partial']}")
    return ", ".join(said)
