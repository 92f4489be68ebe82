"""How a session's usage record reads to people (``agentctl history``, ``status``,
``top``, the dashboard). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentd.supervisor.usage.tally import ESTIMATE, is_real, tokens_of


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
