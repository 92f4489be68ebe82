"""Frozen records checked against their own annotations, built from YAML.

Layouts are data people write, so their fields are checked as strictly as the
unit's pydantic models check theirs, but without pydantic: importing it costs
about 200 ms of every ``agentctl state`` call, which agents make after every
step. The annotations are the one definition of a field; what they may be is
small on purpose: ``str``, ``int``, ``bool``, ``None``, a ``Literal`` of
strings, ``tuple[X, ...]``, another checked record, and unions of these.
Limits ride in the field's metadata: ``Field(metadata={"ge": 1})``,
``{"min_length": 1}``, ``{"inside": True}`` (a relative path that stays where
it is resolved: not absolute, no ``..``, no control characters).

- ``Record``: a frozen, keyword-only class whose fields are its annotations
  (base classes' first), with value equality and hashing. Not a dataclass:
  ``import dataclasses`` (it imports ``inspect``) and building a dataclass
  (it compiles its methods) cost an ``agentctl state`` call about 30 ms;
  a Record class costs nothing to build and needs no import;
- ``check_fields(obj)``, called from ``__post_init__``, raises ``KeyProblem``
  naming the field (and item) whose value does not fit;
- ``from_mapping(cls, data)`` builds ``cls`` from a mapping: unknown keys and
  missing required keys are errors, lists become tuples, mappings become the
  nested records, and every problem's path starts at ``data``.

Messages read like the unit loader's: ``should be a valid integer (got 'x')``.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from functools import cache
from typing import (
    Any,
    ClassVar,
    Literal,
    TypeVar,
    Union,
    dataclass_transform,
    get_args,
    get_origin,
    get_type_hints,
)

from agentd.errors import KeyProblem

T = TypeVar("T")
R = TypeVar("R", bound="Record")
Path = tuple[str | int, ...]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Field:
    """A field of a ``Record``: its default (``MISSING``: required) and its limits."""

    __slots__ = ("default", "metadata", "name")

    def __init__(self, default: Any = MISSING, metadata: Mapping[str, Any] | None = None) -> None:
        self.name = ""
        self.default = default
        self.metadata: Mapping[str, Any] = metadata or {}

    def __repr__(self) -> str:
        return f"Field({self.name!r}, default={self.default!r})"


def field(*, default: Any = MISSING, metadata: Mapping[str, Any] | None = None) -> Any:
    """A field with limits in a record's class body (``tail: int | None = field(...)``);
    typed ``Any`` so that the annotation, not ``Field``, is the field's type."""
    return Field(default, metadata)


@dataclass_transform(kw_only_default=True, field_specifiers=(Field, field))
class Record:
    """A frozen record with keyword-only fields: ``name: type = default`` in the
    class body (``Field(...)`` for limits); ``__post_init__`` runs after the
    fields are set. Equal and hashed by type and field values."""

    __fields__: ClassVar[dict[str, Field]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = dict(cls.__fields__)  # the base classes', in order
        # Not inspect.get_annotations: importing inspect is the cost this class avoids.
        for name in cls.__dict__.get("__annotations__", {}):  # noqa: RUF063
            value = cls.__dict__.get(name, MISSING)
            f = value if isinstance(value, Field) else Field(value)
            f.name = name
            fields[name] = f
            if isinstance(value, Field):  # the class attribute is the default, or none
                if f.default is MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, f.default)
        cls.__fields__ = fields

    def __init__(self, **values: Any) -> None:
        for name, f in self.__fields__.items():
            value = values.pop(name, f.default)
            if value is MISSING:
                raise TypeError(f"{type(self).__name__}() missing keyword argument {name!r}")
            object.__setattr__(self, name, value)
        if values:
            raise TypeError(
                f"{type(self).__name__}() got unexpected keyword argument {next(iter(values))!r}"
            )
        self.__post_init__()

    def __post_init__(self) -> None:
        pass

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__fields__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__fields__)
        return f"{type(self).__name__}({shown})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")


def replace(obj: R, **changes: Any) -> R:
    """A copy of ``obj`` with ``changes`` (checked again, as when it was built)."""
    values = {name: getattr(obj, name) for name in obj.__fields__}
    return type(obj)(**{**values, **changes})


def is_record(obj: Any) -> bool:
    """Whether ``obj`` is a Record class or instance."""
    cls = obj if isinstance(obj, type) else type(obj)
    return issubclass(cls, Record)


_NOUNS: dict[Any, tuple[str, str]] = {  # type -> (one, many)
    str: ("a valid string", "strings"),
    int: ("a valid integer", "integers"),
    bool: ("a valid boolean", "booleans"),
}


def _hints(cls: type) -> dict[str, Any]:
    return _cached_hints(cls)


@cache
def _cached_hints(cls: Any) -> dict[str, Any]:
    return get_type_hints(cls)


def check_fields(obj: Any) -> None:
    """Raise KeyProblem unless every field of ``obj`` fits its annotation and limits."""
    hints = _hints(type(obj))
    for f in obj.__fields__.values():
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
    fields: dict[str, Field] = cls.__fields__  # type: ignore[attr-defined]
    hints = _hints(cls)
    for key in data:
        if key not in fields:
            raise KeyProblem((*path, key), "unknown key")
    for name, f in fields.items():
        if f.default is MISSING and name not in data:
            raise KeyProblem((*path, name), "required key missing")
    values = {key: _convert(value, hints[key], (*path, key)) for key, value in data.items()}
    try:
        return cls(**values)
    except KeyProblem as exc:
        raise KeyProblem((*path, *exc.path), exc.message) from None
    except ValueError as exc:  # a check across fields: it is about the whole mapping
        raise KeyProblem(path, str(exc)) from None


def _convert(value: Any, hint: Any, path: Path) -> Any:
    """``value`` as ``hint`` wants it built: mappings as records, lists as tuples."""
    for option in _options(hint):
        if isinstance(value, Mapping) and isinstance(option, type) and is_record(option):
            return from_mapping(option, value, path)
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
    if isinstance(hint, type) and is_record(hint):
        return "mappings of keys" if many else "a mapping of keys"
    one, several = _NOUNS.get(hint, ("a valid value", "values"))
    return several if many else one


def _check_limits(f: Field, value: Any) -> None:
    least = f.metadata.get("ge")
    if least is not None and value < least:
        raise KeyProblem((f.name,), f"should be greater than or equal to {least} (got {value})")
    shortest = f.metadata.get("min_length")
    if shortest is not None and len(value) < shortest:
        chars = "character" if shortest == 1 else "characters"
        raise KeyProblem((f.name,), f"should have at least {shortest} {chars}")
    if f.metadata.get("inside") and isinstance(value, str) and (why := _leaves(value)):
        raise KeyProblem(
            (f.name,), f"should be a path inside the state dir (got {_shown(value)}): {why}"
        )


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
