"""The layout models check what they are given, as the pydantic models did,
without pydantic: every refusal names its key; mappings nest; presets load."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentd.errors import KeyProblem
from agentd.memory import layout
from agentd.memory.layout import (
    ArchiveRule,
    Layout,
    LayoutError,
    LayoutFile,
    StateVerbs,
    Target,
    load_layout,
    parse_files,
)
from agentd.memory.schema import from_mapping, replace

KINDS = "'text', 'task-state', 'decision-log', 'handoff', 'entries' or 'latest'"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"path": ""}, "path: should have at least 1 character"),
        ({"path": 5}, "path: should be a valid string (got 5)"),
        ({"path": "a", "tail": 0}, "tail: should be greater than or equal to 1 (got 0)"),
        ({"path": "a", "tail": True}, "tail: should be a valid integer (got True)"),
        ({"path": "a", "tail": "5"}, "tail: should be a valid integer (got '5')"),
        ({"path": "a", "max_tokens": -1}, "max_tokens: should be greater than or equal to 1"),
        ({"path": "a", "kind": "txt"}, f"kind: should be {KINDS} (got 'txt')"),
        ({"path": "a", "optional": "yes"}, "optional: should be a valid boolean (got 'yes')"),
        (
            {"path": "a", "section": 5},
            "section: should be a valid string or a list of strings (got 5)",
        ),
        ({"path": "a", "section": ("A", 5)}, "section[1]: should be a valid string (got 5)"),
    ],
)
def test_a_layout_file_refuses_bad_values_naming_the_key(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(KeyProblem) as caught:
        LayoutFile(**kwargs)
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, ValueError)


def test_a_layout_file_keeps_its_defaults_and_properties() -> None:
    entry = LayoutFile(path="T.md", section="NEXT")
    assert (entry.kind, entry.tail, entry.optional, entry.readonly) == ("text", None, False, False)
    assert (entry.heading, entry.sections) == ("T.md", ("NEXT",))
    assert LayoutFile(path="T.md", title="Task", section=("A", "B")).sections == ("A", "B")
    assert LayoutFile(path="T.md", title="Task").heading == "Task"
    with pytest.raises(AttributeError, match="frozen"):
        entry.path = "other.md"  # type: ignore[misc]
    with pytest.raises(KeyProblem, match="tail"):
        replace(entry, tail=0)  # a copy is checked too
    assert hash(entry) == hash(LayoutFile(path="T.md", section="NEXT"))
    assert entry != Target(path="T.md", section="NEXT")  # another type is never equal
    assert entry != replace(entry, optional=True)
    with pytest.raises(TypeError, match="missing keyword argument 'path'"):
        LayoutFile()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'titel'"):
        LayoutFile(path="T.md", titel="x")  # type: ignore[call-arg]
    rule = ArchiveRule(path="s.json", field="done", keep=1, to="a.jsonl")
    assert list(rule.__fields__)[:2] == ["path", "field"]  # the base's fields first


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"path": "log.md", "form": "line", "section": "X"}, "form 'line' writes a whole file"),
        ({"path": "s.json", "section": "X"}, "a .json target needs `field`"),
        ({"path": "T.md", "field": "next"}, "a .json target needs `field`"),
        ({"path": "T.md"}, "a Markdown target needs `section`"),
        ({"path": "T.md", "section": "C", "form": "key"}, "form `key` and `key:` go together"),
        ({"path": "T.md", "section": "C", "key": "task"}, "form `key` and `key:` go together"),
        ({"path": "T.md", "section": "C", "form": "append"}, "form: should be 'text', 'key',"),
    ],
)
def test_a_target_must_be_addressed(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        Target(**kwargs)


def test_a_target_is_a_json_field_a_markdown_section_or_a_whole_file() -> None:
    assert Target(path="s.json", field="next").is_json
    section = Target(path="T.md", section="NEXT", aliases=("下一步",), form="first-item")
    assert section.names == ("NEXT", "下一步") and not section.is_json
    assert Target(path="decisions.md", form="entry").names == ()
    assert Target(path="T.md", section="CURRENT", form="key", key="task").key == "task"


def test_an_archive_rule_needs_keep_and_to() -> None:
    rule = ArchiveRule(path="s.json", field="done", form="step", keep=10, to="a/{year}.jsonl")
    assert rule.keep == 10 and rule.is_json
    with pytest.raises(KeyProblem, match=r"^keep: should be greater than or equal to 1"):
        ArchiveRule(path="s.json", field="done", keep=0, to="x")
    with pytest.raises(KeyProblem, match=r"^to: should have at least 1 character"):
        ArchiveRule(path="s.json", field="done", keep=1, to="")
    with pytest.raises(TypeError):  # keyword-only and required, like the pydantic fields
        ArchiveRule(path="s.json", field="done")  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"files": [{"path": "a.md", "tial": 1}]}, ("files", 0, "tial"), "unknown key"),
        ({"files": [], "extra": 1}, ("extra",), "unknown key"),
        ({"description": "no files"}, ("files",), "required key missing"),
        ({"files": [{"path": "a"}, "b.md"]}, ("files", 1), "should be a mapping of keys"),
        ({"files": "a.md"}, ("files",), "should be a list of mappings of keys (got 'a.md')"),
        (
            {"files": [], "state": {"next": {"path": "T.md"}}},
            ("state", "next"),
            "a Markdown target needs `section`",
        ),
        ({"files": [], "state": {"nxt": {"path": "T.md"}}}, ("state", "nxt"), "unknown key"),
        ({"files": [], "state": 5}, ("state",), "should be a mapping of keys (got 5)"),
        (
            {"files": [], "archive": [{"path": "s.json", "field": "d", "to": "x"}]},
            ("archive", 0, "keep"),
            "required key missing",
        ),
        (
            {"files": [], "state": {"decide": [{"path": "d.md", "form": "entry"}, {}]}},
            ("state", "decide", 1, "path"),
            "required key missing",
        ),
    ],
)
def test_from_mapping_names_the_path_of_the_bad_key(
    data: dict[str, Any], path: tuple[str | int, ...], message: str
) -> None:
    with pytest.raises(KeyProblem) as caught:
        from_mapping(Layout, {"name": "x", **data})
    assert caught.value.path == path
    assert caught.value.message.startswith(message)


def test_from_mapping_nests_and_turns_lists_into_tuples() -> None:
    built = from_mapping(
        Layout,
        {
            "name": "x",
            "files": [{"path": "T.md", "section": ["CURRENT", "NEXT"]}],
            "state": {"next": {"path": "T.md", "section": "NEXT", "aliases": ["下一步"]}},
            "archive": [{"path": "s.json", "field": "done", "keep": 3, "to": "a.jsonl"}],
        },
    )
    assert built.files == (LayoutFile(path="T.md", section=("CURRENT", "NEXT")),)
    assert built.state.next == Target(path="T.md", section="NEXT", aliases=("下一步",))
    assert built.archive == (ArchiveRule(path="s.json", field="done", keep=3, to="a.jsonl"),)
    assert built.state.task is None and built.state.decide == () and built.description == ""
    assert from_mapping(StateVerbs, {}) == StateVerbs()


def test_inline_files_name_the_item_and_key() -> None:
    assert parse_files([{"path": "a.md", "tail": 2}]) == [LayoutFile(path="a.md", tail=2)]
    built = LayoutFile(path="b.md")
    assert parse_files([built])[0] is built
    with pytest.raises(KeyProblem) as caught:
        parse_files([{"path": "a.md"}, {"path": "b.md", "tail": 0}])
    assert caught.value.path == (1, "tail")
    assert str(caught.value) == "[1].tail: should be greater than or equal to 1 (got 0)"


def test_a_bad_preset_file_is_a_layout_error_naming_file_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled = {"broken": {"files": [{"path": "a.md", "kind": "nope"}]}, "list": ["a.md"]}
    monkeypatch.setattr(layout, "_compiled", lambda: compiled)
    load_layout.cache_clear()
    try:
        with pytest.raises(LayoutError, match=r"^layout 'broken' \(broken.yaml\): files\[0\]"):
            load_layout("broken")
        with pytest.raises(LayoutError, match=r"list\.yaml is not a mapping of keys"):
            load_layout("list")
    finally:
        load_layout.cache_clear()


def test_the_state_verbs_import_no_pydantic() -> None:
    """`agentctl state` runs after every agent step: pydantic would cost ~200 ms of it."""
    code = (
        "import sys, agentd.memory.layout, agentd.memory.verbs.ops, agentd.memory.verbs.record;"
        " print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_compiled_presets_are_the_yaml_files() -> None:
    """`agentctl state` reads presets.json; it must say what the YAML files say."""
    assert layout.COMPILED.read_text(encoding="utf-8") == layout.compile_presets(), (
        "run scripts/gen_docs.py"
    )
