"""Frozen dataclasses checked against their own annotations, built from YAML.

Layouts are data people write, so their fields are checked as strictly as the
unit's pydantic models check theirs, but without pydantic: importing it costs
about 200 ms of every ``agentctl state`` call, which agents make after every
step. The annotations are the one definition of a field; what they may be is
small on purpose: ``str``, ``int``, ``bool``, ``None``, a ``Literal`` of
strings, ``tuple[X, ...]``, another checked dataclass, and unions of these.
Limits ride in the field's metadata: ``field(metadata={"ge": 1})``,
``{"min_length": 1}``, ``{"inside": True}`` (a relative path that stays where
it is resolved: not absolute, no ``..``, no control characters).

- ``check_fields(obj)``, called from ``__post_init__``, raises ``KeyProblem``
  naming the field (and item) whose value does not fit;
- ``from_mapping(cls, data)`` builds ``cls`` from a mapping: unknown keys and
  missing required keys are errors, lists become tuples, mappings become the
  nested dataclasses, and every problem's path starts at ``data``.

Messages read like the unit loader's: ``should be a valid integer (got 'x')``.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from functools import cache
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from agentd.errors import KeyProblem

T = TypeVar("T")
Path = tuple[str | int, ...]

_NOUNS: dict[Any, tuple[str, str]] = {  # type -> (one, many)
    str: ("a valid string", "strings"),
    int: ("a valid integer", "integers"),
    bool: ("a valid boolean", "booleans"),
}


@cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def check_fields(obj: Any) -> None:
    """Raise KeyProblem unless every field of ``obj`` fits its annotation and limits."""
    hints = _hints(type(obj))
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        problem = _misfit(value, hints[f.name])
        if problem is not None:
            below, message = problem
            raise KeyProblem((f.name, *below), message)
        if value is not None:
            _check_limits(f, value)


def from_mapping(cls: type[T], data: Any, path: Path = ()) -> T:
    """A ``cls`` from the mapping ``data``; KeyProblem paths start at ``data``."""
    if not isinstance(data, Mapping):
        raise KeyProblem(path, f"should be a mapping of keys (got {_shown(data)})")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = _hints(cls)
    for key in data:
        if key not in fields:
            raise KeyProblem((*path, key), "unknown key")
    for name, f in fields.items():
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if required and name not in data:
            raise KeyProblem((*path, name), "required key missing")
    values = {key: _convert(value, hints[key], (*path, key)) for key, value in data.items()}
    try:
        return cls(**values)
    except KeyProblem as exc:
        raise KeyProblem((*path, *exc.path), exc.message) from None
    except ValueError as exc:  # a check across fields: it is about the whole mapping
        raise KeyProblem(path, str(exc)) from None


def _convert(value: Any, hint: Any, path: Path) -> Any:
    """``value`` as ``hint`` wants it built: mappings as dataclasses, lists as tuples."""
    for option in _options(hint):
        if isinstance(value, Mapping) and dataclasses.is_dataclass(option):
            return from_mapping(option, value, path)  # type: ignore[arg-type]
        if isinstance(value, list) and get_origin(option) is tuple:
            item = get_args(option)[0]
            return tuple(_convert(v, item, (*path, i)) for i, v in enumerate(value))
    return value


def _misfit(value: Any, hint: Any) -> tuple[Path, str] | None:
    """None if ``value`` fits ``hint``, else (the path below it, what is wrong)."""
    options = _options(hint)
    if any(_fits(value, option) for option in options):
        return None
    for option in options:  # a list of the wrong things: name the wrong item
        if isinstance(value, tuple) and get_origin(option) is tuple:
            item = get_args(option)[0]
            for i, v in enumerate(value):
                problem = _misfit(v, item)
                if problem is not None:
                    return (i, *problem[0]), problem[1]
    literals = [a for option in options if get_origin(option) is Literal for a in get_args(option)]
    if literals:
        names = [repr(a) for a in literals]
        wanted = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
    else:
        wanted = " or ".join(_noun(option) for option in options if option is not type(None))
    return (), f"should be {wanted} (got {_shown(value)})"


def _fits(value: Any, hint: Any) -> bool:
    origin = get_origin(hint)
    if origin is Literal:
        return isinstance(value, str) and value in get_args(hint)
    if origin is tuple:
        item = get_args(hint)[0]
        return isinstance(value, tuple) and all(_fits(v, item) for v in value)
    if hint is type(None):
        return value is None
    if hint is int:  # True is an int to Python, not to a person writing YAML
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _options(hint: Any) -> tuple[Any, ...]:
    if get_origin(hint) in (Union, types.UnionType):
        return get_args(hint)
    return (hint,)


def _noun(hint: Any, *, many: bool = False) -> str:
    if get_origin(hint) is tuple:
        return "a list of " + _noun(get_args(hint)[0], many=True)
    if dataclasses.is_dataclass(hint):
        return "mappings of keys" if many else "a mapping of keys"
    one, several = _NOUNS.get(hint, ("a valid value", "values"))
    return several if many else one


def _check_limits(f: dataclasses.Field[Any], value: Any) -> None:
    least = f.metadata.get("ge")
    if least is not None and value < least:
        raise KeyProblem((f.name,), f"should be greater than or equal to {least} (got {value})")
    shortest = f.metadata.get("min_length")
    if shortest is not None and len(value) < shortest:
        chars = "character" if shortest == 1 else "characters"
        raise KeyProblem((f.name,), f"should have at least {shortest} {chars}")
    if f.metadata.get("inside") and isinstance(value, str) and (why := _leaves(value)):
        raise KeyProblem((f.name,), f"should be a path inside the state dir (got "
                                    f"{_shown(value)}): {why}")


def _leaves(path: str) -> str | None:
    """Why ``path`` could lead out of the directory it is relative to (None: it cannot)."""
    if path.startswith(("/", "~")) or (len(path) > 1 and path[1] == ":"):
        return "no absolute path"
    if ".." in path.replace("\\", "/").split("/"):
        return "no `..`"
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        return "no control characters"
    return None


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown[:60] + "..." if len(shown) > 60 else shown
