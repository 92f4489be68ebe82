"""Markdown state files as the seeds write them: sections, lists, entries."""

from __future__ import annotations

import pytest

from agentd.memory.formats import markdown
from agentd.memory.formats import markdown as md

TASK_STATE = """# TASK STATE

## CURRENT

- task: refactor auth
- phase: extract token check

## DONE

- [x] map the auth flow
- [x] extract the token parser

## NEXT

- [ ] extract the token check
- [ ] add unit tests

## BLOCKERS

- 无
""".splitlines()


@pytest.mark.parametrize(
    ("names", "body"),
    [
        (["CURRENT"], ["- task: refactor auth", "- phase: extract token check"]),
        (["current"], ["- task: refactor auth", "- phase: extract token check"]),
        (["NEXT"], ["- [ ] extract the token check", "- [ ] add unit tests"]),
        (["nope", "BLOCKERS"], ["- 无"]),
        (["TASK STATE"], TASK_STATE[2:]),  # an h1 holds everything below it
        (["missing"], None),
    ],
)
def test_section_body(names: list[str], body: list[str] | None) -> None:
    assert md.section_body(TASK_STATE, names) == body


def test_headings_in_code_fences_do_not_count() -> None:
    lines = ["## A", "```", "## B", "```", "a", "## C", "c"]
    assert md.section_body(lines, ["A"]) == ["```", "## B", "```", "a"]
    assert md.find_section(lines, ["B"]) is None


def test_seed_002_chinese_h1_sections() -> None:
    lines = ["# 当前任务", "重构模块 A", "# 进度", "- [x] 梳理", "- [ ] 修改", "# 下一步", "改"]
    assert md.section_body(lines, ["Current task", "当前任务"]) == ["重构模块 A"]
    assert markdown.items(lines, ["进度"]) == [("x", "梳理"), (" ", "修改")]


@pytest.mark.parametrize(
    ("kw", "section", "expected"),
    [
        (
            {"add": "- [ ] first", "first": True},
            "NEXT",
            ["- [ ] first", "- [ ] extract the token check", "- [ ] add unit tests"],
        ),
        (
            {"add": "- [ ] add unit tests", "remove": "add unit tests", "first": True},
            "NEXT",
            ["- [ ] add unit tests", "- [ ] extract the token check"],
        ),
        (
            {"add": "- [x] done now"},
            "DONE",
            ["- [x] map the auth flow", "- [x] extract the token parser", "- [x] done now"],
        ),
        ({"add": "- redis down"}, "BLOCKERS", ["- redis down"]),  # the placeholder goes
        ({"remove": "Extract  the token CHECK"}, "NEXT", ["- [ ] add unit tests"]),
        ({"add": "- new"}, "HANDOFF", ["- new"]),  # a missing section is created
    ],
)
def test_edit_items(kw: dict[str, object], section: str, expected: list[str]) -> None:
    lines, _ = markdown.edit_items(list(TASK_STATE), [section], **kw)  # type: ignore[arg-type]
    assert md.section_body(lines, [section]) == expected
    assert "\n\n\n" not in "\n".join(lines)  # one blank line between sections, always
    for other in ("CURRENT", "DONE", "NEXT", "BLOCKERS"):
        if other != section:
            assert md.section_body(lines, [other]) == md.section_body(TASK_STATE, [other])


def test_done_item_replaces_its_todo_in_place() -> None:
    progress = ["## Progress", "", "- [x] a", "- [ ] b", "- [ ] c", ""]
    lines, removed = markdown.edit_items(
        progress, ["Progress"], add="- [x] c", remove="c", replace_removed=True
    )
    assert removed and md.section_body(lines, ["Progress"]) == ["- [x] a", "- [ ] b", "- [x] c"]
    lines, removed = markdown.edit_items(
        progress, ["Progress"], add="- [x] new", remove="new", replace_removed=True
    )
    assert not removed  # not a to-do item: goes after the last done one
    assert md.section_body(lines, ["Progress"]) == ["- [x] a", "- [x] new", "- [ ] b", "- [ ] c"]


def test_set_key_and_get_key() -> None:
    lines = markdown.set_key(list(TASK_STATE), ["CURRENT"], "task", "new task")
    assert markdown.get_key(lines, ["CURRENT"], "task") == "new task"
    assert md.section_body(lines, ["CURRENT"]) == [
        "- task: new task",
        "- phase: extract token check",
    ]
    lines = markdown.set_key(lines, ["CURRENT"], "last-file", "a.ts")
    assert md.section_body(lines, ["CURRENT"])[0] == "- last-file: a.ts"
    assert markdown.get_key(["## CURRENT", "- task： 全角"], ["CURRENT"], "task") == "全角"


def test_set_body_keeps_guidance_comments() -> None:
    lines = ["## HANDOFF", "<!-- for the next", "     session -->", "old", "## X", "x"]
    out = md.set_body(lines, ["HANDOFF"], ["new", "two"])
    assert out == [
        "## HANDOFF",
        "",
        "<!-- for the next",
        "     session -->",
        "new",
        "two",
        "",
        "## X",
        "x",
    ]
    assert md.set_body([], ["Handoff", "交接"], ["t"]) == ["## Handoff", "", "t", ""]


@pytest.mark.parametrize(
    ("lines", "hidden"),
    [
        (["<!-- a -->", "x"], {0}),
        (["<!-- a", "b -->", "x"], {0, 1}),
        (["<!-- a --> text"], set()),
        (["<!-- never closed", "x"], set()),
        (["x <!-- inline -->"], set()),
    ],
)
def test_comment_lines(lines: list[str], hidden: set[int]) -> None:
    assert md.comment_lines(lines) == hidden


@pytest.mark.parametrize(
    ("line", "placeholder"),
    [
        ("- none", True),
        ("- 无", True),
        ("(none)", True),
        ("<!-- x -->", True),
        ("- [ ] none", True),
        ("- something", False),
        ("none of it", False),
    ],
)
def test_is_placeholder(line: str, placeholder: bool) -> None:
    assert md.is_placeholder(line) is placeholder


def test_empty_sections_and_blank_runs_are_dropped() -> None:
    lines = [
        "# Task",
        "",
        "## Next",
        "",
        "## Blockers",
        "",
        "- none",
        "",
        "## Done",
        "",
        "### Today",
        "- [x] a",
        "",
        "",
        "",
        "## Handoff",
        "<!-- note -->",
    ]
    assert md.drop_empty_sections(lines) == [
        "# Task",
        "",
        "## Done",
        "",
        "### Today",
        "- [x] a",
        "",
        "",
        "",
    ]
    assert md.single_blank(["a", "", "", "b", "", ""]) == ["a", "", "b", ""]
    assert md.drop_empty_sections(["```", "# not a heading", "```"]) == [
        "```",
        "# not a heading",
        "```",
    ]


def test_nest_moves_headings_under_the_block() -> None:
    assert md.nest(["# Identity", "", "# Role", "x", "## Sub"], "Identity") == [
        "",
        "### Role",
        "x",
        "#### Sub",
    ]
    assert md.nest(["# Other", "x"], "Identity") == ["### Other", "x"]
    assert md.nest(["## 1. a", "## 2. b"], "") == ["### 1. a", "### 2. b"]
    assert md.nest(["plain"], "t") == ["plain"]


def test_entries() -> None:
    lines = ["# Decisions", "intro", "## 3. freeze API", "- why: x", "## 5. DI", "- why: y"]
    pre, entries = md.split_entries(lines)
    assert pre == ["# Decisions", "intro"] and [e[0] for e in entries] == [
        "## 3. freeze API",
        "## 5. DI",
    ]
    assert md.next_entry_number(lines) == 6
    assert md.next_entry_number(["# Decisions"]) == 1
