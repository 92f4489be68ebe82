"""The bootstrap keeps what the agent wrote in its own words.

The corpus (``tests/memory/handwritten.py``): every layout, every list style,
10, 300 and 3,000 items, English and Chinese, written as an agent's editor
writes them; for each, the next session's bootstrap must show every must-have
fact, at least 9 of the 10 newest items of every record, within the budget
(+5%). Then the same invariants over generated styles, sizes and section
orders (hypothesis), and the parts one by one: the reader of items, the
outline of a must-keep file, the cut that knows the structure, JSON records.
"""

from __future__ import annotations

import json
import re
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentd.memory.formats import items, markdown, outline
from agentd.memory.layout import LayoutFile
from tests.memory import handwritten as hw
from tests.support import boot, entry

SIZES = (10, 300, 3000)


# --- the corpus -----------------------------------------------------------------------


@pytest.mark.parametrize("lang", sorted(hw.LANGS))
@pytest.mark.parametrize("style", sorted(hw.STYLES))
@pytest.mark.parametrize("layout", hw.LAYOUTS)
def test_the_corpus_keeps_every_fact_and_the_newest_items(
    tmp_path: Path, layout: str, style: str, lang: str
) -> None:
    for size in SIZES:  # one state dir, rewritten at each size (as a long run grows it)
        written = hw.write(tmp_path / ".agent", layout, style, lang, size)
        shown = hw.shown(written)
        assert not shown.misses(), (size, shown.misses(), *shown.account)


def test_the_corpus_has_the_styles_the_issue_names() -> None:
    """At least seven list styles, among them the ones agents were seen to write."""
    named = {"dash", "star", "plus", "numbered", "paren", "checkbox", "day-tag", "headings"}
    named |= {"continued", "crlf", "fullwidth", "paragraphs"}
    assert named <= set(hw.STYLES) and len(hw.STYLES) >= 7
    lines = hw.list_lines(hw.STYLES["crlf"], ["a"], "")
    assert hw.STYLES["crlf"].newline == "\r\n" and lines == ["* a"]


# --- the same invariants, generated -----------------------------------------------------

BULLETS = ["- {t}", "* {t}", "+ {t}", "{k}. {t}", "{k}) {t}", "- [x] {t}", "✅ {t}", "{k}、{t}"]
BULLETS += ["- [day {k}] {t}", "（{k}）{t}", "• {t}"]
HEADINGS = ["## {n}", "### {n}", "# {n}", "## {n}:", "**{n}:**", "## ✅ {n}", "## {n}："]


@st.composite
def styles(draw: st.DrawFn) -> hw.Style:
    """A list style of the agent's own: one or more bullets (mixed within a
    list), continuation lines or not, a heading form, line ends, loose or tight."""
    bullets = draw(st.lists(st.sampled_from(BULLETS), min_size=1, max_size=3))
    continued = draw(st.booleans())
    heading = draw(st.sampled_from(HEADINGS))

    def item(k: int, of: int, text: str, why: str) -> list[str]:
        first = bullets[k % len(bullets)].format(k=k, t=text)
        return [first, f"  because {why}"] if continued and why else [first]

    return hw.Style(
        item,
        heading=lambda name: heading.format(n=name),
        newline=draw(st.sampled_from(["\n", "\r\n"])),
        loose=draw(st.booleans()),
        json=draw(st.sampled_from(["text", "strings", "step", "title", "own-keys"])),
        names=draw(st.integers(0, 4)),
    )


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    layout=st.sampled_from(hw.LAYOUTS),
    style=styles(),
    lang=st.sampled_from(sorted(hw.LANGS)),
    size=st.integers(1, 400),
    order=st.permutations(hw.SECTIONS),
)
def test_generated_styles_sizes_and_orders_keep_the_same_invariants(
    layout: str, style: hw.Style, lang: str, size: int, order: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        written = hw.write(Path(tmp) / ".agent", layout, style, lang, size, order)
        shown = hw.shown(written)
        assert not shown.misses(), (shown.misses(), *shown.account)


# --- the reader of items ------------------------------------------------------------------


def firsts(text: str) -> tuple[str, list[str]]:
    """(shape, each item's own first line) of ``text`` read as a record."""
    reading = items.read(text.splitlines())
    return reading.shape, [item.own[0] for item in reading.items]


@pytest.mark.parametrize(
    ("text", "shape", "own"),
    [
        ("- a\n* b\n+ c\n1. d\n2) e\n", "list", ["- a", "* b", "+ c", "1. d", "2) e"]),
        ("- [x] a\n- [ ] b\n✅ c\n☐ d", "list", ["- [x] a", "- [ ] b", "✅ c", "☐ d"]),
        ("1、甲\n（2）乙\n３．丙\n• 丁", "list", ["1、甲", "（2）乙", "３．丙", "• 丁"]),
        ("- a\n  more a\n  - nested\n- b\nlazy b\n", "list", ["- a", "- b"]),
        ("- a\n\n  still a\n\n- b\n", "list", ["- a", "- b"]),
        ("# Log\n\nintro\n\n- a\n- b\n", "list", ["- a", "- b"]),
        ("## 1. x\n- date: 1\n- why: y\n## 2. z\n- date: 2\n", "headings", ["## 1. x", "## 2. z"]),
        (
            "## 5. 方案\n日期：第 2 天\n## 6. 另一个\n理由：快\n",
            "headings",
            ["## 5. 方案", "## 6. 另一个"],
        ),
        ("## Must avoid\n- a\n- b\n## Common\n- c\n", "list", ["- a", "- b", "- c"]),
        ("| # | what |\n|---|---|\n| 1 | a |\n| 2 | b |\n", "table", ["| 1 | a |", "| 2 | b |"]),
        ("one\nstill one\n\ntwo\n\nthree\n", "paragraphs", ["one", "two", "three"]),
        ("one\ntwo\nthree\n", "lines", ["one", "two", "three"]),
        ("3. c\n2. b\n1. a\n", "list", ["1. a", "2. b", "3. c"]),  # newest first: reversed
        (
            "- [2026-12-03] c\n- [2026-12-02] b\n- [2026-12-01] a\n",
            "list",
            ["- [2026-12-01] a", "- [2026-12-02] b", "- [2026-12-03] c"],
        ),
        ("```\n- not an item\n```\n<!-- - nor this -->\n", "lines", ["```"]),  # a block
        ("<!-- - a comment -->\n\n", "empty", []),
    ],
)
def test_items_in_any_common_shape(text: str, shape: str, own: list[str]) -> None:
    assert firsts(text) == (shape, own)


def test_crlf_and_a_byte_order_mark_read_as_any_file(tmp_path: Path) -> None:
    raw = "\ufeff# Decisions\r\n\r\n* [D1] one\r\n* [D2] two\r\n".encode()
    b = boot(tmp_path, {"d.md": raw}, [entry("d.md", kind="entries", title="Decisions")])
    assert "[D1] one" in b.text and "[D2] two" in b.text and "\r" not in b.text


def test_where_the_reader_guesses_it_says_so_with_the_line() -> None:
    lines = ["# Log", "", "- a", "- b", "", "a stray note", "- c"]
    reading = items.read(lines, first=1)
    assert [str(g) for g in reading.guesses] == ["line 6: text between list items: read as an item"]
    assert [str(g) for g in items.read(["x", "y"], first=10).guesses] == [
        "line 10: no list items: read as 2 lines, one item each"
    ]
    assert items.read(["- a", "- b"]).guesses == []  # a list: nothing guessed


LINE_KINDS = st.sampled_from(
    [
        "- item",
        "* item",
        "1. item",
        "  continued",
        "",
        "## Heading",
        "text",
        "| a | b |",
        "|---|---|",
        "```",
        "- [x] done",
        "✅ done",
        "**Label:**",
        "<!-- c -->",
    ]
)


@given(st.lists(LINE_KINDS, max_size=40))
def test_the_reader_never_loses_or_reorders_a_line(lines: list[str]) -> None:
    reading = items.read(lines)
    found = list(reading.items)
    if any(g.message == items.NEWEST_FIRST for g in reading.guesses):
        found.reverse()  # back in file order
    got = [*reading.head, *(ln for it in found for ln in it.lines), *reading.tail]
    if reading.shape == "table":  # the header goes first, above every row
        assert sorted(got) == sorted(lines)
    else:
        assert got == lines


# --- the outline of a must-keep file --------------------------------------------------


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("NEXT", "now"),
        ("🎯 Next step:", "now"),
        ("Current task: refactor auth", "now"),
        ("下一步计划", "now"),
        ("卡住的问题", "now"),
        ("上次中断时的状态", "now"),
        ("HANDOFF", "now"),
        ("DONE", "list"),
        ("✅ Done (so far)", "list"),
        ("Completed steps", "list"),
        ("已完成的工作", "list"),
        ("进度", "list"),
        ("Constraints", "text"),
        ("Done when", "text"),  # acceptance criteria, not a growing list
    ],
)
def test_section_roles(name: str, role: str) -> None:
    assert outline.role(name) == role


def test_a_list_section_holds_its_subsections_and_labels_name_sections() -> None:
    lines = ["## DONE", "### Week 1", "- a", "### Week 2", "- b", "**Next:**", "- c", "## Notes"]
    spans = [(s.start, s.end, s.role) for s in outline.outline(lines)]
    assert spans == [(0, 5, "list"), (5, 7, "now"), (7, 8, "text")]
    assert outline.section_body(["**Next:**", "- c", "", "**Done:**"], "NEXT") == ["- c"]


@pytest.mark.parametrize(
    "heading",
    [
        "## Next step",
        "## NEXT STEP",
        "## 🎯 Next step:",
        "### 3. Next step",
        "## Next step：",
        "## **Next step**",
        "# Next step #",
    ],
)
def test_headings_match_as_people_write_them(heading: str) -> None:
    assert markdown.section_body([heading, "go"], ["Next step"]) == ["go"]


def test_a_chinese_heading_needs_no_space_but_a_hashtag_is_text() -> None:
    assert markdown.section_body(["##下一步", "改"], ["下一步"]) == ["改"]
    assert markdown.headings(["#hashtag", "####### seven"]) == []


# --- the cut that knows the structure -------------------------------------------------


def contract_state(done: int, notes: int = 0) -> str:
    items_ = "".join(f"- [s{n:04d}] moved module {n} onto the cache layer\n" for n in range(done))
    note = "".join(f"background line {n} about the cache layer's history\n" for n in range(notes))
    return (
        "# TASK STATE\n\n## CURRENT\n\n- mission: [mission] one cache layer\n\n"
        f"## DONE\n\n{items_}\n## NOTES\n\n{note}\n## NEXT\n\n- [ ] [next] module {done}\n\n"
        "## BLOCKERS\n\n- [blocker] staging redis\n\n## HANDOFF\n\n[handoff] half done\n"
    )


@pytest.mark.parametrize("budget", range(400, 3001, 200))
def test_what_to_do_now_is_never_cut_while_an_old_item_shows(tmp_path: Path, budget: int) -> None:
    layout = [entry("T.md", title="Task state")]
    b = boot(tmp_path, {"T.md": contract_state(300)}, layout, budget_tokens=budget)
    shown = sorted(int(n) for n in re.findall(r"\[s(\d{4})\]", b.text))
    if shown:
        for fact in ("[mission]", "[next]", "[blocker]", "[handoff]"):
            assert fact in b.text, (budget, fact)
        assert shown == list(range(300 - len(shown), 300)), budget  # the newest, unbroken
        assert f"- _({300 - len(shown)} earlier done items: see .agent/T.md)_" in b.text
    assert b.tokens <= budget


def test_a_must_file_over_its_share_keeps_the_sections_after_its_lists(tmp_path: Path) -> None:
    """Must-keep text alone over the budget: what to do now is shown whole, the
    other text is cut (marked), and the list gives way first."""
    layout = [entry("T.md", title="Task state")]
    b = boot(tmp_path, {"T.md": contract_state(300, notes=400)}, layout, budget_tokens=1200)
    for fact in ("[mission]", "[next]", "[blocker]", "[handoff]"):
        assert fact in b.text, fact
    assert "[s0" not in b.text  # no record while must-keep text is cut
    assert "[... cut for the token budget: read .agent/T.md for the rest]" in b.text
    assert b.text.index("background line 0 ") < b.text.index("[next]")  # file order kept
    assert b.tokens <= 1200


def test_a_checkpoint_in_its_own_template_keeps_its_next_step(tmp_path: Path) -> None:
    """The checkpoint's own template (已完成 / 当前状态 / 下一步), its done list long."""
    done = "".join(f"- [s{n:04d}] 已完成第 {n} 处替换\n" for n in range(800))
    text = (
        "[CHECKPOINT round=47 time=2026-12-01]\n\n## 已完成\n\n" + done + "\n## 当前状态\n\n"
        "- [handoff] 正在改写路径\n\n## 下一步\n\n- [next] 改 order_service 写路径\n\n"
        "## 关键约束\n\n- [c1] 不改接口\n\n[/CHECKPOINT]\n"
    )
    layout = [entry("latest.md", title="Latest checkpoint")]
    b = boot(tmp_path, {"latest.md": text}, layout, budget_tokens=1500)
    assert "[handoff]" in b.text and "[next]" in b.text and "[c1]" in b.text
    assert "[s0799]" in b.text and "[s0000]" not in b.text


# --- JSON records ----------------------------------------------------------------------------


def test_json_records_of_any_text_key_in_a_layout_of_ones_own(tmp_path: Path) -> None:
    decisions = [{"title": f"[D{n:04d}] use the cache", "why": "one TTL"} for n in range(500)]
    lines = "\n".join(json.dumps({"ts": n, "msg": f"[L{n:04d}] did a thing"}) for n in range(500))
    layout = [
        entry("decisions.json", title="Decisions", keep="record"),
        entry("log.jsonl", title="Log", keep="record", tail=5),
    ]
    b = boot(
        tmp_path,
        {"decisions.json": json.dumps(decisions), "log.jsonl": lines + "\n"},
        layout,
        budget_tokens=1500,
    )
    assert "- [D0499] use the cache - because one TTL" in b.text and "[D0000]" not in b.text
    assert "[L0499] did a thing" in b.text
    notes = {row.name: row.notes for row in b.account}
    assert "read as 500 items of the top-level array" in notes[".agent/decisions.json"]
    assert "read as 500 items of one JSON value per line" in notes[".agent/log.jsonl"]


@pytest.mark.parametrize(
    ("step", "shown"),
    [
        ({"step": "a", "verified": "pytest"}, "- a - verified: pytest"),
        ({"title": "a", "date": "2026-12-01"}, "- a (2026-12-01) (pending verification)"),
        ({"内容": "甲", "原因": "快"}, "- 甲 - because 快 (pending verification)"),
    ],
)
def test_completed_steps_with_the_agents_own_keys(tmp_path: Path, step: object, shown: str) -> None:
    state = {"mission": "m", "next_action": "n", "completed_steps": [step]}
    b = boot(tmp_path, {"state.json": json.dumps(state)}, [entry("state.json", kind="task-state")])
    assert shown in b.text, b.text
    assert b.warnings == []


def test_a_state_json_with_keys_of_the_agents_own(tmp_path: Path) -> None:
    """`done`, `next_steps`, `current_step`: a record, facts, a fact shown whole."""
    current = "[task] " + "halfway through the write path of order_service " * 3
    state = {
        "mission": "[mission] one cache layer",
        "next_steps": ["[next] replace call 301"],
        "current_step": current,
        "done": [f"[s{n:04d}] replaced call {n}" for n in range(300)],
    }
    b = boot(
        tmp_path,
        {"state.json": json.dumps(state)},
        [entry("state.json", kind="task-state")],
        budget_tokens=1200,
    )
    assert "[next] replace call 301" in b.text and "[mission]" in b.text
    assert current.strip() in b.text  # whole, not a 60-character preview
    assert "[s0299]" in b.text and "[s0000]" not in b.text
    assert "**Done:** the newest" in b.text


# --- a decision log written by hand ---------------------------------------------------------


def test_a_hand_written_log_newest_first_shows_its_newest(tmp_path: Path) -> None:
    start = datetime(2026, 12, 1, 9, 0)
    stamps = [(start + timedelta(minutes=7 * n)).strftime("%Y-%m-%d %H:%M") for n in range(2000)]
    lines = "".join(f"- [{at}] [D{n:04d}] chose x\n" for n, at in enumerate(stamps))
    reversed_log = "".join(reversed(lines.splitlines(keepends=True)))
    layout = [LayoutFile(path="decisions.log", kind="decision-log", tail=5, keep="record")]
    b = boot(tmp_path, {"decisions.log": reversed_log}, layout, budget_tokens=800)
    assert "[D1999]" in b.text and "[D0000]" not in b.text
    notes = [n for row in b.account for n in row.notes]
    assert any("read newest first" in n for n in notes), notes
    warning = next(w for w in b.warnings if "six-field" in w)
    assert re.search(r"lines 1, 2, 3, 4, 5 and \d+ more", warning), warning


def test_many_unreadable_list_items_are_one_warning(tmp_path: Path) -> None:
    """3,000 completed steps that read as no text: one warning naming five and
    counting the rest - not 3,000 warnings crowding out the facts."""
    state = {
        "mission": "[mission]",
        "next_action": "[next]",
        "completed_steps": [[n] for n in range(3000)],
    }
    b = boot(tmp_path, {"state.json": json.dumps(state)}, [entry("state.json", kind="task-state")])
    bad = [w for w in b.warnings if "expected form" in w]
    assert len(bad) == 1 and "`completed_steps[4]` and 2995 more are" in bad[0], bad
    assert "[mission]" in b.text and "[next]" in b.text and b.tokens <= 3000
