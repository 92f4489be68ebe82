"""The keys a unit file may hold, read from the schema the loader validates with.

One walk over ``Unit`` (pydantic models, and the layout's checked records
for ``state.layout`` items) serves two readers: the loader's "did you mean"
for a mistyped key, and ``scripts/gen_docs.py``, which writes the reference of
every key from it (type, default, and the field's docstring), so the docs
cannot drift from what the loader accepts.
"""

from __future__ import annotations

import ast
import difflib
import functools
import inspect
import itertools
import json
import textwrap
import types
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from agentd.config.convert import parse_duration, parse_signal, parse_size
from agentd.memory.layout import LayoutFile
from agentd.memory.schema import MISSING, is_record

# Not for people to write: the loader sets it from the file's path.
INTERNAL = frozenset({"source"})
FILE_NAME = "(the file's name)"  # the default of `name`, which the loader fills in

# The layout's file entries are checked records of the memory layer, which
# carry no docstrings per field; their words live here, beside the walk that
# makes sure none is missing (tests/config/test_keys.py).
LAYOUT_FILE_DOCS = {
    "path": "The file, relative to the state dir.",
    "title": "The heading the bootstrap shows above it (default: the path).",
    "kind": "How it is read: `text` as is; `task-state` a state.json shown as Markdown; "
    "`decision-log` six-field decision lines, newest last; `handoff` only the "
    "handoff of a state.json; `entries` the newest `## ` entries of a Markdown "
    "file; `latest` the newest file of a directory.",
    "tail": "Only the last N lines (or entries), read from the end of the file.",
    "section": "Only this `## ` section (or these sections) of a Markdown file.",
    "max_tokens": "At most this many tokens of the file; the rest is cut with a marker.",
    "optional": "A missing file is not worth a warning.",
    "readonly": "agentd records its hash and the bootstrap warns when it changed.",
    "keep": "What the budget keeps first: `must` (facts, never cut while anything of lower "
    "priority is shown), `record` (append-only records: the newest items, a guaranteed "
    "`tail` first), `free` (free text: only what is left). Default: decision logs, "
    "entries and `tail:` files are records, everything else is must-keep.",
}


@dataclass(frozen=True)
class Key:
    """One key of a unit file: ``restart.delay``, ``sentinels[].match``."""

    path: str
    kind: str  # what it holds, for a person: "duration", "list of text", "one of: a, b"
    default: str | None  # as one would write it; None when required
    doc: str
    section: bool  # a mapping of further keys (or a list of them)


def _schema_of(annotation: Any) -> Any:
    """The model or checked record a field holds (itself or in a list), if any."""
    if isinstance(annotation, type) and (
        issubclass(annotation, BaseModel) or is_record(annotation)
    ):
        return annotation
    for arg in get_args(annotation):
        found = _schema_of(arg)
        if found is not None:
            return found
    return None


def _fields(schema: Any) -> dict[str, tuple[Any, Any, str, Any]]:
    """name -> (annotation, metadata, doc, default) of a model or checked record."""
    if issubclass(schema, BaseModel):
        out = {}
        for name, info in schema.model_fields.items():
            if schema.__name__ == "Unit" and name in INTERNAL:
                continue
            doc = " ".join((info.description or _attribute_doc(schema, name)).split())
            default = FILE_NAME if schema.__name__ == "Unit" and name == "name" else _default(info)
            out[name] = (info.annotation, info.metadata, doc, default)
        return out
    hints = get_type_hints(schema)
    docs = LAYOUT_FILE_DOCS if schema is LayoutFile else {}
    return {
        f.name: (
            hints[f.name],
            [],
            docs.get(f.name, ""),
            None if f.default is MISSING else f.default,
        )
        for f in schema.__fields__.values()
    }


def _attribute_doc(schema: type[BaseModel], name: str) -> str:
    """The docstring under field ``name`` of ``schema`` or the model it inherits it from."""
    for klass in schema.__mro__:
        if issubclass(klass, BaseModel) and name in (docs := _attribute_docs(klass)):
            return docs[name]
    return ""


@functools.cache
def _attribute_docs(klass: type) -> dict[str, str]:
    """The string right under each ``name: type`` of a class, read from its source (as
    pydantic's ``use_attribute_docstrings`` would): only the docs need them, so the
    models do not read their source at every import (60 ms of each agentd command)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return {}
    body = tree.body if isinstance(tree, ast.ClassDef) else []
    docs = {}
    for field, under in itertools.pairwise(body):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(under, ast.Expr)
            and isinstance(under.value, ast.Constant)
            and isinstance(under.value.value, str)
        ):
            docs[field.target.id] = inspect.cleandoc(under.value.value)
    return docs


def _default(info: FieldInfo) -> Any:
    if info.default is not PydanticUndefined:
        return info.default
    if info.default_factory is not None:
        return info.default_factory()  # type: ignore[call-arg]
    return None


def keys_at(path: tuple[str | int, ...]) -> list[str] | None:
    """The keys the mapping at ``path`` (``("restart",)``, ``("sentinels", 0)``) accepts."""
    from agentd.config.unit import Unit

    schema: Any = Unit
    named = False  # the part is a name a mapping of names gives (`usage.prices.MODEL`)
    for part in path:
        if isinstance(part, int) or named:
            named = False
            continue  # a list's item has its list's schema; so has a named entry
        fields = _fields(schema)
        if part not in fields:
            return None
        schema = _schema_of(fields[part][0])
        named = _is_dict(fields[part][0])
        if schema is None:
            return None
    return None if named else list(_fields(schema))


def did_you_mean(path: tuple[str | int, ...], key: str) -> str | None:
    """The accepted key at ``path`` closest to ``key``: ``exit_code`` -> ``exit_codes``."""
    known = keys_at(path)
    if not known or not isinstance(key, str):
        return None
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    return close[0] if close else None


def unit_keys() -> Iterator[Key]:
    """Every key of a unit file, depth first in the schema's order."""
    from agentd.config.unit import Unit

    yield from _walk(Unit, "")


def _walk(schema: Any, prefix: str) -> Iterator[Key]:
    for name, (annotation, metadata, doc, default) in _fields(schema).items():
        path = f"{prefix}{name}"
        inner = _schema_of(annotation)
        listed = inner is not None and _is_list(annotation)
        named = inner is not None and _is_dict(annotation)  # usage.prices.NAME.input
        yield Key(
            path=path,
            kind=_kind(annotation, metadata),
            doc=doc,
            default=_shown(default, metadata)
            if default is not None or _optional(annotation)
            else None,
            section=inner is not None,
        )
        if inner is not None:
            yield from _walk(
                inner, f"{path}[]." if listed else f"{path}.NAME." if named else f"{path}."
            )


def _is_list(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin in (list, tuple):
        return True
    return any(_is_list(a) for a in get_args(annotation) if get_origin(a) is not None)


def _is_dict(annotation: Any) -> bool:
    if get_origin(annotation) is dict:
        return True
    return any(_is_dict(a) for a in get_args(annotation) if get_origin(a) is not None)


def _optional(annotation: Any) -> bool:
    return type(None) in get_args(annotation)


def _converter(metadata: Any) -> Any:
    for item in metadata or []:
        func = getattr(item, "func", None)
        if func in (parse_duration, parse_size, parse_signal):
            return func
    return None


def _kind(annotation: Any, metadata: Any) -> str:
    func = _converter(metadata) or _converter(getattr(annotation, "__metadata__", ()))
    if func is parse_duration:
        return "duration"
    if func is parse_size:
        return "size"
    if func is parse_signal:
        return "signal"
    origin = get_origin(annotation)
    args = [a for a in get_args(annotation) if a is not type(None)]
    if origin is Annotated:
        return _kind(args[0], annotation.__metadata__)
    if origin is Literal:
        return "one of: " + ", ".join(str(a) for a in get_args(annotation))
    if origin in (Union, types.UnionType):
        return " or ".join(dict.fromkeys(_kind(a, ()) for a in args))
    if origin in (list, tuple):
        inner = _kind(args[0], ()) if args else ""
        if inner.startswith("one of: "):
            return "list of: " + inner.removeprefix("one of: ")
        return f"list of {_plural(inner)}" if args else "list"
    if origin is dict:
        inner = _schema_of(annotation)
        return "mapping of names to mappings" if inner is not None else "mapping of text to text"
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel) or is_record(annotation):
            return "mapping"
        return {str: "text", int: "integer", float: "number", bool: "true or false"}.get(
            annotation, "path" if annotation.__name__ == "Path" else annotation.__name__
        )
    return str(annotation)


def _plural(kind: str) -> str:
    return {"text": "text", "mapping": "mappings", "integer": "integers"}.get(kind, kind)


def _shown(value: Any, metadata: Any) -> str:
    """A default as a person would write it in the file."""
    func = _converter(metadata)
    if value is None:
        return "null"
    if value == FILE_NAME:
        return FILE_NAME
    if func is parse_duration:
        return _duration(value)
    if func is parse_size:
        return _size(int(value))
    if isinstance(value, Enum):
        return value.name.removeprefix("SIG")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, BaseModel) or is_record(value):
        return "(see below)"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_shown(v, ()) for v in value) + "]" if value else "[]"
    if isinstance(value, dict):
        return "{}" if not value else str(value)
    return json.dumps(value) if isinstance(value, str) else str(value)


def _duration(seconds: float) -> str:
    for unit, factor in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % factor == 0:
            return f"{seconds / factor:g}{unit}"
    return f"{seconds:g}s" if seconds else "0"


def _size(n: int) -> str:
    for unit, factor in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if n and n % factor == 0:
            return f"{n // factor}{unit}"
    return str(n)
