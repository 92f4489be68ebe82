"""Each CLI's usage records, folded into a session's ``Spent``. Pure.

A ``Fold`` is fed the JSON objects of one record file, line by line, in the
order the CLI wrote them, and says what they add up to. It trusts nothing: a
field that is missing, negative or not a number counts as 0, a record that is
not what it expects is skipped. ``markers``: a line that contains none of
these bytes holds nothing the fold wants (it is not even parsed).
``cumulative``: the file's newest records hold its totals, so a huge file may
be read from near its end.

What each CLI writes (checked with the real CLIs, tests/realcli):

- Claude Code (``claude-transcript``): an ``assistant`` record per model
  response, ``message.usage`` with ``input_tokens``,
  ``cache_read_input_tokens``, ``cache_creation_input_tokens``,
  ``output_tokens``; a response of several content blocks is written as
  several records with the same ``message.id`` (counted once). Summary and
  title requests have no record; 2.1.332 appends a ``cost-state`` record on
  exit whose ``modelUsage`` counts every request, with the cost, and 2.1.197
  keeps the same totals in ``~/.claude.json`` (``claude_config``).
- Codex (``codex-rollout``): ``event_msg`` records of type ``token_count``,
  whose ``total_token_usage`` is the running sum over the thread (its
  ``input_tokens`` include ``cached_input_tokens``) and ``last_token_usage``
  the newest response; ``model_context_window``; the model in ``turn_context``.
- Gemini CLI (``gemini-chats``): each ``gemini`` message has ``tokens``
  ``{input, output, cached, thoughts, tool, total}`` (``input`` includes
  ``cached``; ``output`` leaves out ``thoughts``); a message is written
  again with the same ``id`` when it grows, and ``$set`` records may carry
  whole message lists: by ``id``, the last wins.
- aider (``aider-analytics``): one ``message_send`` event per message with
  ``prompt_tokens``, ``completion_tokens``, ``cost`` and ``main_model``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol

from agentd.supervisor.usage.tally import Counts, Spent


class Fold(Protocol):
    markers: tuple[bytes, ...]
    cumulative: bool

    def feed(self, record: Mapping[str, Any]) -> None: ...

    def spent(self) -> Spent | None:
        """What the records fed so far add up to; None before the first response."""


def _n(value: Any) -> int:
    """A token count from a record: a non-negative whole number, else 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float) and math.isfinite(value):
        return max(int(value), 0)
    return 0


def _dollars(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _name(value: Any) -> str:
    return value if isinstance(value, str) else ""


class ClaudeTranscript:
    markers: tuple[bytes, ...] = (b'"usage"', b'"cost-state"')
    cumulative: bool = False

    def __init__(self) -> None:
        self._messages: dict[str, tuple[str, Counts]] = {}  # message id -> (model, counts)
        self._last: str | None = None
        self._totals: dict[str, Counts] | None = None  # the newest cost-state's
        self._cost: float | None = None
        self._config: tuple[dict[str, Counts], float | None] | None = None

    def feed(self, record: Mapping[str, Any]) -> None:
        kind = record.get("type")
        if kind == "assistant":
            message = _map(record.get("message"))
            usage = message.get("usage")
            model = _name(message.get("model"))
            if not isinstance(usage, Mapping) or model == "<synthetic>":  # a local error note
                return
            key = str(message.get("id") or record.get("requestId") or record.get("uuid") or "")
            self._messages[key or f"#{len(self._messages)}"] = (model, _anthropic(usage))
            self._last = key
        elif kind == "cost-state" and isinstance(record.get("modelUsage"), Mapping):
            self._totals = _model_usage(record["modelUsage"])
            self._cost = _dollars(record.get("totalCostUSD"))

    def claude_config(self, entry: Mapping[str, Any]) -> None:
        """The project's entry of ``~/.claude.json`` for this session (its
        ``lastSessionId`` checked by the caller): the totals Claude Code keeps on exit."""
        usage = entry.get("lastModelUsage")
        if isinstance(usage, Mapping):
            self._config = (_model_usage(usage), _dollars(entry.get("lastCost")))

    def spent(self) -> Spent | None:
        last = self._messages.get(self._last or "")
        context = last[1].context if last is not None else None
        if self._totals is not None:  # every request of the session, the CLI's cost
            return Spent("claude-transcript", self._totals, self._cost, context, None, False)
        if self._config is not None:
            totals, cost = self._config
            return Spent("claude-transcript", totals, cost, context, None, False)
        if not self._messages:
            return None
        models: dict[str, Counts] = {}
        for model, counts in self._messages.values():
            models.setdefault(model, Counts()).add(counts)
        return Spent("claude-transcript", models, None, context)

    @property
    def has_totals(self) -> bool:
        """Claude Code's own totals were read (it writes them on exit)."""
        return self._totals is not None or self._config is not None


def _anthropic(usage: Mapping[str, Any]) -> Counts:
    return Counts(
        input=_n(usage.get("input_tokens")),
        output=_n(usage.get("output_tokens")),
        cache_read=_n(usage.get("cache_read_input_tokens")),
        cache_write=_n(usage.get("cache_creation_input_tokens")),
        requests=1,
    )


def _model_usage(by_model: Mapping[str, Any]) -> dict[str, Counts]:
    """Claude Code's ``modelUsage`` / ``lastModelUsage``: totals per model."""
    out: dict[str, Counts] = {}
    for model, raw in by_model.items():
        usage = _map(raw)
        out[str(model)] = Counts(
            input=_n(usage.get("inputTokens")),
            output=_n(usage.get("outputTokens")),
            cache_read=_n(usage.get("cacheReadInputTokens")),
            cache_write=_n(usage.get("cacheCreationInputTokens")),
        )
    return out


class CodexRollout:
    markers: tuple[bytes, ...] = (b'"token_count"', b'"turn_context"')
    cumulative: bool = True

    def __init__(self) -> None:
        self._total: Mapping[str, Any] | None = None
        self._last: Mapping[str, Any] = {}
        self._window: int | None = None
        self._model = ""
        self._requests = 0

    def feed(self, record: Mapping[str, Any]) -> None:
        payload = _map(record.get("payload"))
        if record.get("type") == "turn_context":
            self._model = _name(payload.get("model")) or self._model
            return
        if record.get("type") != "event_msg" or payload.get("type") != "token_count":
            return
        info = payload.get("info")
        if not isinstance(info, Mapping) or not isinstance(info.get("total_token_usage"), Mapping):
            return  # a rate-limit update, no usage
        total = info["total_token_usage"]
        if total != self._total:
            self._requests += 1
        self._total = total
        self._last = _map(info.get("last_token_usage"))
        self._window = _n(info.get("model_context_window")) or self._window

    def spent(self) -> Spent | None:
        if self._total is None:
            return None
        total, last = self._total, self._last
        cached = _n(total.get("cached_input_tokens"))
        counts = Counts(
            input=max(_n(total.get("input_tokens")) - cached, 0),
            output=_n(total.get("output_tokens")),
            cache_read=cached,
            cache_write=_n(total.get("cache_write_input_tokens")),
            requests=self._requests,
        )
        context = _n(last.get("input_tokens")) + _n(last.get("output_tokens"))
        # from the tail of a huge file the count of requests is not known
        return Spent("codex-rollout", {self._model: counts}, None, context, self._window)


class GeminiChats:
    markers: tuple[bytes, ...] = (b'"tokens"',)
    cumulative: bool = False

    def __init__(self) -> None:
        self._messages: dict[str, tuple[str, Counts, int]] = {}  # id -> (model, counts, context)
        self._last = ""

    def feed(self, record: Mapping[str, Any]) -> None:
        listed = _map(record.get("$set")).get("messages")
        if isinstance(listed, list):
            for message in listed:
                if isinstance(message, Mapping):
                    self._message(message)
        else:
            self._message(record)

    def _message(self, message: Mapping[str, Any]) -> None:
        tokens = message.get("tokens")
        if message.get("type") != "gemini" or not isinstance(tokens, Mapping):
            return
        prompt, cached = _n(tokens.get("input")), _n(tokens.get("cached"))
        tool, output = _n(tokens.get("tool")), _n(tokens.get("output")) + _n(tokens.get("thoughts"))
        counts = Counts(
            input=max(prompt - cached, 0) + tool,
            output=output,
            cache_read=min(cached, prompt),
            requests=1,
        )
        key = str(message.get("id") or f"#{len(self._messages)}")
        self._messages[key] = (_name(message.get("model")), counts, prompt + tool + output)
        self._last = key

    def spent(self) -> Spent | None:
        if not self._messages:
            return None
        models: dict[str, Counts] = {}
        for model, counts, _ in self._messages.values():
            models.setdefault(model, Counts()).add(counts)
        return Spent("gemini-chats", models, None, self._messages[self._last][2])


class AiderAnalytics:
    markers: tuple[bytes, ...] = (b'"message_send"',)
    cumulative: bool = False

    def __init__(self) -> None:
        self._models: dict[str, Counts] = {}
        self._cost: float | None = None
        self._context: int | None = None

    def feed(self, record: Mapping[str, Any]) -> None:
        if record.get("event") != "message_send":
            return
        props = _map(record.get("properties"))
        prompt, completion = _n(props.get("prompt_tokens")), _n(props.get("completion_tokens"))
        counts = Counts(input=prompt, output=completion, requests=1)
        self._models.setdefault(_name(props.get("main_model")), Counts()).add(counts)
        cost = _dollars(props.get("cost"))
        if cost is not None:
            self._cost = (self._cost or 0.0) + cost
        self._context = prompt + completion

    def spent(self) -> Spent | None:
        if not self._models:
            return None
        return Spent(
            "aider-analytics", dict(self._models), self._cost, self._context, cache_known=False
        )
