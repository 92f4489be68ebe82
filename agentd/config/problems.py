"""Pydantic's validation errors as ``file:line: key.path: message``.

Each error's location is mapped back to the key path in the unit file (without
pydantic's union tags), and from there to the line ``read_yaml`` recorded; a
``KeyProblem`` adds the finer key it names. Messages are for a person: no
"Value error, ", no "Input should"; an unknown key that is close to a known
one says which (``did you mean exit_codes?``).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from agentd.config.keys import did_you_mean
from agentd.config.presets import apply_preset
from agentd.config.yamllines import Index, Lines, format_key, line_of
from agentd.errors import KeyProblem, UnitError


def validation_problems(
    exc: ValidationError, data: dict[str, Any], lines: Lines, file: str
) -> list[UnitError]:
    """One UnitError per key (its messages joined), in line order."""
    try:
        merged = apply_preset(data)  # the locations refer to the merged mapping
    except KeyProblem:
        merged = data
    found: dict[tuple[int | None, str | None], list[str]] = {}
    for error in exc.errors():
        problem = _from_pydantic(error, merged, lines, file)
        messages = found.setdefault((problem.line, problem.key), [])
        if problem.message not in messages:
            messages.append(problem.message)
    return [
        UnitError("; or ".join(messages), file=file, line=line, key=key)
        for (line, key), messages in sorted(found.items(), key=lambda item: item[0][0] or 0)
    ]


def _from_pydantic(error: Any, data: Any, lines: Lines, file: str) -> UnitError:
    kind, loc = error["type"], tuple(error["loc"])
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, KeyProblem):
        return _keyed(cause, loc, data, lines, file)
    path = _data_path(loc, data, missing=kind == "missing")
    message = _unknown(path) if kind == "extra_forbidden" else _message(error)
    return _at(path, message, lines, file)


def _keyed(
    problem: KeyProblem, loc: tuple[Any, ...], data: Any, lines: Lines, file: str
) -> UnitError:
    below = tuple(Index(p) if isinstance(p, int) else p for p in problem.path)
    path = _data_path(loc, data, missing=False) + below
    message = problem.message
    if message == "unknown key":  # a layout file's key, checked by the memory layer
        message = _unknown(path)
    return _at(path, message, lines, file)


def _unknown(path: tuple[Any, ...]) -> str:
    """``unknown key``, with the known key it was probably meant to be."""
    guess = did_you_mean(path[:-1], path[-1]) if path else None
    return f"unknown key (did you mean {guess}?)" if guess else "unknown key"


def _at(path: tuple[Any, ...], message: str, lines: Lines, file: str) -> UnitError:
    """A UnitError at the line of ``path``, or of its nearest parent with one."""
    return UnitError(message, file=file, line=line_of(path, lines), key=format_key(path) or None)


def _data_path(loc: tuple[Any, ...], data: Any, *, missing: bool) -> tuple[Any, ...]:
    """``loc`` without pydantic's union tags: only the parts that index ``data``.

    A missing key is not in the data, so the last part is kept when ``missing``.
    """
    path: list[Any] = []
    for index, part in enumerate(loc):
        if isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data, part = data[part], Index(part)
        elif isinstance(data, dict) and part in data:
            data = data[part]
        elif missing and index == len(loc) - 1:
            pass
        else:
            continue
        path.append(part)
    return tuple(path)


def _message(error: Any) -> str:
    """Pydantic's message for a person: no "Value error, ", no "Input should"."""
    kind, msg = error["type"], str(error["msg"])
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key missing"
    cause = error.get("ctx", {}).get("error")
    if kind in ("value_error", "assertion_error") and cause is not None:
        return str(cause)
    msg = re.sub(r"^Input should", "should", msg).split(", unable to")[0]
    msg = msg[:1].lower() + msg[1:]
    value = error.get("input")
    if isinstance(value, str | int | float | bool) or value is None:
        shown = repr(value)
        msg += f" (got {shown[:60] + '...' if len(shown) > 60 else shown})"
    return msg
