"""YAML with line numbers: the document and the line of every key path in it.

YAML is composed to a node tree (not ``safe_load``) so every mapping key and
sequence item keeps its line. Only ``true``/``false`` are booleans (YAML 1.2),
duplicate keys and recursive aliases are errors, and alias bombs stop early.
Problems are ``UnitError``s with the file and line.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from agentd.errors import UnitError

Lines = dict[tuple[Any, ...], int]


class Index(int):
    """A list position in a key path (``[1]``), equal to the int, so lookups match."""


_MAX_NODES = 100_000  # alias bombs ("billion laughs") stop here, not in memory
_PLAIN_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")


class _Loader(yaml.SafeLoader):
    """SafeLoader whose only booleans are true/false (YAML 1.2), so ``on:`` stays a key."""

    yaml_implicit_resolvers = {  # noqa: RUF012 (PyYAML's own class attribute)
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


_BOOL = (
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)
_Loader.add_implicit_resolver(*_BOOL)

_CLoader: type[Any] | None = None
if yaml.__with_libyaml__:

    class _LibyamlLoader(yaml.CSafeLoader):
        """``_Loader`` on libyaml: the same document, 15 times faster (a 1 MiB file in
        under a second, not 11 s). libyaml bounds the nesting depth itself."""

        yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers

    _CLoader = _LibyamlLoader


def _compose(text: str) -> Node | None:
    """The document's node tree; a document libyaml refuses is parsed again by the
    pure-Python parser, whose errors say more (and are the ones tested)."""
    if _CLoader is not None:
        loader = _CLoader(text)
        try:
            return loader.get_single_node()  # type: ignore[no-any-return]
        except (yaml.YAMLError, RecursionError):
            pass
        finally:
            loader.dispose()
    pure = _Loader(text)
    try:
        return pure.get_single_node()
    finally:
        pure.dispose()


def read_yaml(text: str, file: str) -> tuple[Any, Lines]:
    """The YAML document in ``text`` and the line of each key path in it."""
    try:
        root = _compose(text)
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        char = exc.character if isinstance(exc.character, int) else ord(exc.character)
        message = f"invalid YAML: unacceptable character #x{char:04x}: {exc.reason}"
        raise UnitError(message, file=file, line=line) from None
    except yaml.MarkedYAMLError as exc:
        raise _yaml_error(exc, file) from None
    except yaml.YAMLError as exc:
        raise UnitError(f"invalid YAML: {exc}", file=file, line=1) from None
    except RecursionError:
        raise UnitError("invalid YAML: nested too deeply", file=file, line=1) from None
    if root is None:
        raise UnitError("empty file: a unit needs at least command and workdir", file=file, line=1)
    builder = _Builder(file)
    try:
        data = builder.build(root, ())
    except RecursionError:
        raise UnitError("nested too deeply", file=file, line=_line(root)) from None
    return data, builder.lines


def _yaml_error(exc: yaml.MarkedYAMLError, file: str) -> UnitError:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "syntax error"
    if exc.context and exc.problem and problem.startswith("but "):
        problem = f"{exc.context}, {problem}"
    elif exc.context and exc.problem and exc.context_mark:
        problem += f" ({exc.context} at line {exc.context_mark.line + 1})"
    return UnitError(f"invalid YAML: {problem}", file=file, line=mark.line + 1 if mark else 1)


def _line(node: Node) -> int:
    return node.start_mark.line + 1


class _Builder:
    """Python values from a composed node tree, recording ``lines[key path]``."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.lines: Lines = {}
        self.constructor = SafeConstructor()
        self.count = 0
        self.active: set[int] = set()

    def build(self, node: Node, path: tuple[Any, ...]) -> Any:
        self.lines.setdefault(path, _line(node))
        self.count += 1
        if self.count > _MAX_NODES:
            raise UnitError("document too large (too many aliases?)", file=self.file, line=1)
        if id(node) in self.active:
            raise UnitError("recursive alias", file=self.file, line=_line(node))
        if isinstance(node, ScalarNode) or node.tag not in _PLAIN_TAGS:
            return self.construct(node)
        self.active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return [self.build(item, (*path, Index(i))) for i, item in enumerate(node.value)]
            assert isinstance(node, MappingNode)
            return self.pairs(node, path)
        finally:
            self.active.discard(id(node))

    def pairs(self, node: MappingNode, path: tuple[Any, ...]) -> dict[Any, Any]:
        """The mapping's items; ``<<`` merges may be overridden, own keys not repeated."""
        merged: dict[Any, Any] = {}
        own: dict[Any, Any] = {}
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                merged = {**self.merge(value_node, path), **merged}
                continue
            key = self.key(key_node)
            if key in seen:
                raise UnitError(
                    f"duplicate key {key!r} (first on line {seen[key]})",
                    file=self.file,
                    line=_line(key_node),
                    key=format_key((*path, key)),
                )
            seen[key] = self.lines[(*path, key)] = _line(key_node)
            own[key] = self.build(value_node, (*path, key))
        for key in merged.keys() - own.keys():
            self.lines.setdefault((*path, key), self.lines.get(path, 1))
        return {**merged, **own}

    def merge(self, node: Node, path: tuple[Any, ...]) -> dict[Any, Any]:
        """What ``<<: *a`` or ``<<: [*a, *b]`` brings in (earlier mappings win)."""
        sources = node.value if isinstance(node, SequenceNode) else [node]
        out: dict[Any, Any] = {}
        for source in reversed(sources):
            value = self.build(source, ("<<", *path)) if isinstance(source, MappingNode) else None
            if not isinstance(value, dict):
                raise UnitError(
                    "<< must merge a mapping or a list of mappings",
                    file=self.file,
                    line=_line(source),
                )
            out.update(value)
        return out

    def key(self, node: Node) -> Any:
        key = self.construct(node)
        try:
            hash(key)
        except TypeError:
            raise UnitError(
                "a key must be a plain value", file=self.file, line=_line(node)
            ) from None
        return key

    def construct(self, node: Node) -> Any:
        """One value via PyYAML's safe constructor; its errors become UnitErrors."""
        try:
            return self.constructor.construct_object(node, deep=True)
        except yaml.MarkedYAMLError as exc:
            raise _yaml_error(exc, self.file) from None
        except (ValueError, TypeError, OverflowError, yaml.YAMLError) as exc:
            raise UnitError(f"invalid value: {exc}", file=self.file, line=_line(node)) from None
        finally:
            self.constructor.constructed_objects.clear()


def line_of(path: tuple[Any, ...], lines: Lines) -> int:
    """The line of ``path``, or of its nearest parent with one (a key a preset brought)."""
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return 1


def format_key(path: tuple[Any, ...]) -> str:
    """``("sentinels", 1, "match")`` -> ``sentinels[1].match``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, Index) else f".{part}"
    return out.lstrip(".")
