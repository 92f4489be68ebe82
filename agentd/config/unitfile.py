"""Unit files on disk: find them, refuse unsafe ones, load them with line numbers.

YAML is composed to a node tree (not ``safe_load``) so every mapping key and
sequence item keeps its line; pydantic's error locations are then mapped back
to ``file:line: key.path: message``. A unit file can run any command as the
daemon's user, so one that others could write, or that someone else owns, is
refused before it is parsed.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any, ClassVar

import yaml
from pydantic import ValidationError
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from agentd.config.fields import KeyProblem
from agentd.config.presets import apply_preset
from agentd.config.unit import UNIT_NAME, Unit
from agentd.errors import UnitError

Lines = dict[tuple[Any, ...], int]


class _Index(int):
    """A list position in a key path (``[1]``), equal to the int, so lookups match."""


_MAX_NODES = 100_000  # alias bombs ("billion laughs") stop here, not in memory
_PLAIN_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")


class UnitInvalid(UnitError):
    """Several problems in one unit file; ``str`` lists them one per line."""

    def __init__(self, problems: list[UnitError]) -> None:
        self.problems = problems
        first = problems[0]
        super().__init__(first.message, file=first.file, line=first.line, key=first.key)

    def __str__(self) -> str:
        return "\n".join(str(problem) for problem in self.problems)


# --- finding unit files ----------------------------------------------------------


def unit_paths(units_dir: Path) -> list[Path]:
    """The unit files in ``units_dir``, sorted; hidden files (editor locks) skipped."""
    if not units_dir.is_dir():
        return []
    found = [
        p
        for p in units_dir.iterdir()
        if p.suffix in (".yaml", ".yml") and not p.name.startswith(".") and p.is_file()
    ]
    return sorted(found)


def resolve_unit_arg(arg: str, units_dir: Path) -> Path:
    """The file ``agentd run ARG`` means: a path, or a unit name in ``units_dir``."""
    path = Path(arg).expanduser()
    if path.is_file() or "/" in arg or arg.endswith((".yaml", ".yml")):
        if not path.exists():
            raise UnitError("no such unit file", file=path)
        if not path.is_file():
            raise UnitError("not a unit file (not a regular file)", file=path)
        return path
    for suffix in (".yaml", ".yml"):
        candidate = units_dir / f"{arg}{suffix}"
        if candidate.is_file():
            return candidate
    raise UnitError(f"no unit named {arg} in {units_dir} (looked for {arg}.yaml)")


# --- permissions -------------------------------------------------------------


def check_permissions(path: Path) -> None:
    """Refuse a unit file others may write or someone else owns (root included)."""
    try:
        st = path.stat()
    except OSError as exc:
        raise UnitError(f"cannot read: {exc.strerror}", file=path) from None
    _refuse_unsafe(st, path)


def _refuse_unsafe(st: os.stat_result, path: Path) -> None:
    """Raise if ``st`` shows a file others may write or someone else owns.

    Being root changes nothing: a root daemon running a world-writable unit
    would run anyone's command as root.
    """
    mode = stat.S_IMODE(st.st_mode)
    writable = [
        who for who, bit in (("group", stat.S_IWGRP), ("world", stat.S_IWOTH)) if mode & bit
    ]
    if writable:
        raise UnitError(
            f"mode {mode:04o} is {'- and '.join(writable)}-writable; run: chmod go-w {path}",
            file=path,
        )
    me = os.geteuid()
    if st.st_uid not in (me, 0):
        raise UnitError(
            f"owned by uid {st.st_uid}, not by this user (uid {me}) or root;"
            f" run: chown {me} {path}",
            file=path,
        )


# --- loading -----------------------------------------------------------------


def load_unit(path: Path, *, check_permissions: bool = True) -> Unit:
    """The unit in ``path``, named after the file; UnitError says what is wrong where."""
    _check_name(path.stem, path)
    try:
        with path.open("rb") as handle:  # check what was opened: no swap after the check
            if check_permissions:
                _refuse_unsafe(os.fstat(handle.fileno()), path)
            raw = handle.read()
    except OSError as exc:
        raise UnitError(f"cannot read: {exc.strerror}", file=path) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise UnitError("not UTF-8 text", file=path, line=line) from None
    return _validate(text, str(path), path.stem, Path(os.path.abspath(path)))


def parse_unit(text: str, *, file: str, name: str) -> Unit:
    """The unit in ``text`` as if read from ``file`` (no file access but the workdir)."""
    _check_name(name, file)
    return _validate(text, file, name, Path(os.path.abspath(file)))


def _check_name(name: str, file: Path | str) -> None:
    if not re.fullmatch(UNIT_NAME, name):
        raise UnitError(
            f"{name!r} is not a valid unit name (the file name without .yaml must match"
            f" {UNIT_NAME}); rename the file",
            file=file,
        )


def _validate(text: str, file: str, name: str, source: Path) -> Unit:
    data, lines = read_yaml(text, file)
    if not isinstance(data, dict):
        raise UnitError(
            "a unit file must be a mapping of keys (key: value)", file=file, line=lines[()]
        )
    if "source" in data:
        raise UnitError("unknown key", file=file, line=lines[("source",)], key="source")
    if "name" in data and data["name"] != name:
        line = lines.get(("name",), 1)
        raise UnitError(
            f"{data['name']!r} differs from the file name; a unit is named after its file"
            " (remove this key)",
            file=file,
            line=line,
            key="name",
        )
    try:
        return Unit.model_validate({**data, "name": name, "source": source})
    except ValidationError as exc:
        problems = _problems(exc, data, lines, file)
    raise problems[0] if len(problems) == 1 else UnitInvalid(problems)


# --- YAML with line numbers --------------------------------------------------


class _Loader(yaml.SafeLoader):
    """SafeLoader whose only booleans are true/false (YAML 1.2), so ``on:`` stays a key."""

    yaml_implicit_resolvers: ClassVar[dict[Any, list[tuple[str, re.Pattern[str]]]]] = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def read_yaml(text: str, file: str) -> tuple[Any, Lines]:
    """The YAML document in ``text`` and the line of each key path in it."""
    loader: yaml.SafeLoader | None = None
    try:
        loader = _Loader(text)
        root = loader.get_single_node()
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
    finally:
        if loader is not None:
            loader.dispose()
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
                return [self.build(item, (*path, _Index(i))) for i, item in enumerate(node.value)]
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
                    key=_format_key((*path, key)),
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


# --- pydantic errors -> UnitErrors ---------------------------------------------


def _problems(
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
    return _at(path, _message(error), lines, file)


def _keyed(
    problem: KeyProblem, loc: tuple[Any, ...], data: Any, lines: Lines, file: str
) -> UnitError:
    below = tuple(_Index(p) if isinstance(p, int) else p for p in problem.path)
    return _at(_data_path(loc, data, missing=False) + below, problem.message, lines, file)


def _at(path: tuple[Any, ...], message: str, lines: Lines, file: str) -> UnitError:
    """A UnitError at the line of ``path``, or of its nearest parent with one."""
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            line = lines[path[:end]]
            break
    else:
        line = 1
    return UnitError(message, file=file, line=line, key=_format_key(path) or None)


def _data_path(loc: tuple[Any, ...], data: Any, *, missing: bool) -> tuple[Any, ...]:
    """``loc`` without pydantic's union tags: only the parts that index ``data``.

    A missing key is not in the data, so the last part is kept when ``missing``.
    """
    path: list[Any] = []
    for index, part in enumerate(loc):
        if isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data, part = data[part], _Index(part)
        elif isinstance(data, dict) and part in data:
            data = data[part]
        elif missing and index == len(loc) - 1:
            pass
        else:
            continue
        path.append(part)
    return tuple(path)


def _format_key(path: tuple[Any, ...]) -> str:
    """``("sentinels", 1, "match")`` -> ``sentinels[1].match``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, _Index) else f".{part}"
    return out.lstrip(".")


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
