"""The ``usage`` section of a unit: where each session's token usage is read, and
what tokens cost (``agentd.supervisor.usage`` reads it; the presets set ``source``).

The agent CLIs keep exact records of what every model request used; agentd
reads them after each session (and while it runs) instead of estimating from
the screen. ``estimate`` (the default for a command that is no known CLI)
keeps the screen estimate: output tokens only, marked as an estimate.
"""

from __future__ import annotations

import fnmatch
from typing import Annotated, Literal

from pydantic import Field

from agentd.config.fields import NonNegative, StrictModel

UsageSource = Literal[
    "claude-transcript", "codex-rollout", "gemini-chats", "aider-analytics", "estimate"
]
USD = Annotated[float, Field(ge=0)]


class Price(StrictModel):
    """What a model's tokens cost, in US dollars per million tokens."""

    input: USD = 0.0
    """Input (prompt) tokens not read from a cache."""
    output: USD = 0.0
    """Output tokens (reasoning included)."""
    cache_read: USD | None = None
    """Input tokens read from the provider's cache (default: the `input` price)."""
    cache_write: USD | None = None
    """Input tokens written to the provider's cache (default: the `input` price)."""

    def cost(self, input_tokens: int, output: int, cache_read: int, cache_write: int) -> float:
        """The cost in US dollars of these tokens."""
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        return (
            input_tokens * self.input
            + output * self.output
            + cache_read * read
            + cache_write * write
        ) / 1_000_000


class UsageSpec(StrictModel):
    source: UsageSource = "estimate"
    """Where each session's token usage is read (the presets set it): `claude-transcript`
    (Claude Code's session transcript, its cost record and `~/.claude.json`; agentd gives each
    session a `--session-id`), `codex-rollout` (the rollout Codex writes under
    `$CODEX_HOME/sessions`), `gemini-chats` (Gemini CLI's chat record under
    `~/.gemini/tmp`; agentd gives each session a `--session-id`), `aider-analytics` (the
    analytics log agentd has aider write, `AIDER_ANALYTICS_LOG`), or `estimate` (tokens
    estimated from the screen: output only). Shown in `agentctl history` and `status`, summed
    for the daily budgets.
    """
    context_window: NonNegative = 0
    """The model's context window in tokens, for the context fill (`status`, `top`, and
    `handoff.context_percent`); 0: what the CLI's records say (Codex), else unknown.
    """
    prices: dict[str, Price] = {}  # noqa: RUF012 (pydantic copies it)
    """What tokens cost, per model name (a shell pattern such as `claude-opus-*`; the first that
    matches wins, an exact name before patterns): `{input, output, cache_read, cache_write}` in US
    dollars per million tokens. When every model of a session has a price, its cost is computed
    from them; otherwise it is the cost the CLI reports itself (Claude Code, aider), if any.
    """

    def price(self, model: str) -> Price | None:
        """The price of ``model`` (a Claude Code name such as ``claude-opus-4-8[1m]`` is
        also looked up without its ``[...]`` suffix); None if none is given."""
        names = [model, model.split("[", 1)[0]] if "[" in model else [model]
        for name in names:
            if name in self.prices:
                return self.prices[name]
        for pattern, price in self.prices.items():
            if any(fnmatch.fnmatchcase(name, pattern) for name in names):
                return price
        return None
