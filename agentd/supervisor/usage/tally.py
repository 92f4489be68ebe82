"""What one session spent (``Spent``), and its record in the history. Pure.

Counts are kept the way Anthropic reports them, as disjoint parts that add up
to everything the model was sent and sent back: ``input`` (the prompt tokens
not read from a cache), ``cache_read``, ``cache_write`` and ``output``
(reasoning included). A CLI whose records say otherwise (OpenAI's and
Gemini's input counts include the cached tokens) is converted when its
records are read (``formats``).

The record (``usage`` in a history ``end`` record, ``agentctl history --json``)::

    {"input_tokens": 2017, "output_tokens": 83, "cache_read_tokens": 605,
     "cache_write_tokens": 0, "model": "gemini-3.1-pro-preview", "cost_usd": null,
     "source": "gemini-chats", "requests": 2, "context_tokens": 4045,
     "context_window": 1048576}

plus ``cost_from`` (``cli`` or ``prices``) with a cost, ``models`` when more
than one model answered, ``partial`` when the records may be short of the
truth (and why). Without records: ``source: estimate``, only
``output_tokens`` (estimated from the screen) and ``note`` (why).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agentd.config.usage import UsageSpec
from agentd.spent import ESTIMATE


@dataclass
class Counts:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    requests: int = 0

    def add(self, other: Counts) -> None:
        self.input += other.input
        self.output += other.output
        self.cache_read += other.cache_read
        self.cache_write += other.cache_write
        self.requests += other.requests

    @property
    def total(self) -> int:
        """Every token sent and received, cached ones included."""
        return self.input + self.output + self.cache_read + self.cache_write

    @property
    def context(self) -> int:
        """What this request leaves in the context: all its input and its output."""
        return self.total


@dataclass(frozen=True)
class Spent:
    """One session's usage as its CLI recorded it."""

    source: str
    models: Mapping[str, Counts] = field(default_factory=dict)  # "" when no model was named
    cost_usd: float | None = None  # the CLI's own figure, if it reports one
    context_tokens: int | None = None  # the last request's input (all of it) and output
    context_window: int | None = None  # as the CLI's records say
    requests_known: bool = True  # the records say how many requests there were
    cache_known: bool = True  # False: the CLI does not tell cached input apart (aider)
    partial: str | None = None  # why the records may be short of the truth

    @property
    def counts(self) -> Counts:
        out = Counts()
        for counts in self.models.values():
            out.add(counts)
        return out

    @property
    def model(self) -> str | None:
        """The model that took most of the tokens (the session's main one)."""
        named = {name: c for name, c in self.models.items() if name}
        return max(named, key=lambda n: named[n].total) if named else None

    def with_partial(self, why: str) -> Spent:
        return replace(self, partial=f"{self.partial}; {why}" if self.partial else why)

    def cost(self, spec: UsageSpec) -> tuple[float | None, str | None]:
        """The session's cost in US dollars and where it comes from: the unit's prices
        when every model that answered has one, else the CLI's own figure."""
        priced = [(spec.price(name), c) for name, c in self.models.items() if c.total]
        if priced and all(price is not None for price, _ in priced):
            return (
                sum(
                    p.cost(c.input, c.output, c.cache_read, c.cache_write)
                    for p, c in priced
                    if p is not None
                ),
                "prices",
            )
        if self.cost_usd is not None:
            return self.cost_usd, "cli"
        return None, None

    def window(self, spec: UsageSpec) -> int | None:
        return self.context_window or spec.context_window or None

    def context_percent(self, spec: UsageSpec) -> float | None:
        """How full the context was at the last request, in percent of the window."""
        window = self.window(spec)
        if not window or self.context_tokens is None:
            return None
        return 100.0 * self.context_tokens / window

    def record(self, spec: UsageSpec) -> dict[str, Any]:
        c = self.counts
        cost, cost_from = self.cost(spec)
        out: dict[str, Any] = {
            "input_tokens": c.input,
            "output_tokens": c.output,
            "cache_read_tokens": c.cache_read if self.cache_known else None,
            "cache_write_tokens": c.cache_write if self.cache_known else None,
            "model": self.model,
            "cost_usd": cost,
            "source": self.source,
        }
        if cost_from is not None:
            out["cost_from"] = cost_from
        if self.requests_known:
            out["requests"] = c.requests
        if self.context_tokens is not None:
            out["context_tokens"] = self.context_tokens
        window = self.window(spec)
        if window:
            out["context_window"] = window
        named = {name: counts for name, counts in self.models.items() if name}
        if len(named) > 1:
            out["models"] = {
                name: {
                    "input_tokens": n.input,
                    "output_tokens": n.output,
                    "cache_read_tokens": n.cache_read if self.cache_known else None,
                    "cache_write_tokens": n.cache_write if self.cache_known else None,
                }
                for name, n in named.items()
            }
        if self.partial:
            out["partial"] = self.partial
        return out


def merged(parts: list[Spent], source: str) -> Spent | None:
    """Several record files of one session as one (Codex may start more than one
    thread): counts and costs add up; the context is the newest file's (the last)."""
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    models: dict[str, Counts] = {}
    for part in parts:
        for name, counts in part.models.items():
            models.setdefault(name, Counts()).add(counts)
    costs = [p.cost_usd for p in parts if p.cost_usd is not None]
    why = "; ".join(p.partial for p in parts if p.partial) or None
    return Spent(
        source,
        models,
        sum(costs) if costs else None,
        parts[-1].context_tokens,
        parts[-1].context_window,
        all(p.requests_known for p in parts),
        all(p.cache_known for p in parts),
        why,
    )


def estimate_record(tokens: int, note: str | None = None) -> dict[str, Any]:
    """The usage of a session without records: its output estimated from the screen."""
    out: dict[str, Any] = {
        "input_tokens": None,
        "output_tokens": int(tokens),
        "cache_read_tokens": None,
        "cache_write_tokens": None,
        "model": None,
        "cost_usd": None,
        "source": ESTIMATE,
    }
    if note:
        out["note"] = note
    return out
