"""Each layout preset renders its seed's files in its seed's order, and the
file kinds they need (sections, entries, latest, seed 004's state.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentd.memory.bootstrap.render import Bootstrap, BootstrapContext, render
from agentd.memory.formats import readonly
from agentd.memory.layout import load_layout, preset_names
from agentd.memory.verbs.init import init
from agentd.tokens import estimate_tokens
from tests.support import GOOD_LINE, NOW, boot, bytes_read, entry, needs_read_count

CONTRACT = """# PROJECT CONTRACT (IMMUTABLE)

## SUMMARY

- services must not import React
- no `any`

## STACK

- language: TypeScript 5.x

## NAMING

- components: PascalCase.tsx
"""
TASK_STATE = """# TASK STATE

## CURRENT

- task: refactor the auth module

## DONE

- [x] map the auth flow

## NEXT

- [ ] extract the token check

## BLOCKERS

- none

## HANDOFF

the parser is done; the check is next
"""


def test_contract_shows_only_the_summary(tmp_path: Path) -> None:
    b = boot(
        tmp_path,
        {"PROJECT_CONTRACT.md": CONTRACT, "TASK_STATE.md": TASK_STATE},
        list(load_layout("contract").files),
    )
    t = b.text
    assert "services must not import React" in t and "no `any`" in t
    for absent in ("STACK", "TypeScript", "NAMING", "PascalCase", "IMMUTABLE"):
        assert absent not in t
    order = [
        "## Project contract (summary)",
        "## Task state",
        "### CURRENT",
        "refactor the auth",
        "### DONE",
        "- [x] map the auth flow",
        "### NEXT",
        "extract the token check",
        "### HANDOFF",
        "the check is next",
        "## Rules",
    ]
    assert [t.index(s) for s in order] == sorted(t.index(s) for s in order)
    assert "BLOCKERS" not in t  # `- none`: an empty section is left out
    assert b.warnings == []


def test_missing_sections_are_warned(tmp_path: Path) -> None:
    layout = [entry("T.md", section=("CURRENT", "NEXT"))]
    b = boot(tmp_path, {"T.md": "## CURRENT\n\nx\n"}, layout)
    assert b.warnings == [".agent/T.md has no `## NEXT` section"]
    assert "### NEXT\n\n_(no `## NEXT` section)_" in b.text


def test_entries_show_the_newest_with_a_count(tmp_path: Path) -> None:
    doc = "# Decisions\n\nintro\n\n" + "\n".join(
        f"## {i}. decision {i}\n\n- why: reason {i}\n" for i in range(1, 13)
    )
    b = boot(
        tmp_path,
        {"decisions.md": doc},
        [entry("decisions.md", kind="entries", tail=3, max_tokens=60)],
    )
    assert "_(the newest 3 of 12 entries; read .agent/decisions.md for the rest)_" in b.text
    assert "### 12. decision 12" in b.text and "reason 10" in b.text
    assert "decision 9" not in b.text and "intro" not in b.text
    roomy = boot(tmp_path, {"decisions.md": doc}, [entry("decisions.md", kind="entries", tail=3)])
    assert "### 1. decision 1\n" in roomy.text and "the newest" not in roomy.text


def test_latest_file_sorts_numbers_by_value(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        f"snapshots/snapshot-{n:03d}.json": json.dumps({"n": n}) for n in (1, 999, 1000)
    }
    b = boot(tmp_path, files, [entry("snapshots", kind="latest", title="Latest snapshot")])
    assert "latest of 3 files: `.agent/snapshots/snapshot-1000.json`" in b.text
    assert '"n": 1000' in b.text


def test_long_done_lists_show_the_newest(tmp_path: Path) -> None:
    doc = "## Progress\n\n" + "\n".join(f"- [x] step {i}" for i in range(25)) + "\n- [ ] open\n"
    b = boot(tmp_path, {"t.md": doc}, [entry("t.md", title="Task", max_tokens=80)])
    shown = re.search(r"- _\((\d+) earlier done items: see .agent/t.md\)_", b.text)
    assert shown and 0 < int(shown[1]) < 15  # the newest ten and more, as room allows
    assert f"- [x] step {int(shown[1]) - 1}\n" not in b.text and "- [x] step 24" in b.text
    assert "### Progress" in b.text and "- [ ] open" in b.text  # the to-do is must-keep


def test_comments_are_hidden_and_headings_nested(tmp_path: Path) -> None:
    doc = "# Identity\n\n<!-- guidance\n  for people -->\n# Role\nagent\n"
    b = boot(tmp_path, {"identity.md": doc}, [entry("identity.md", title="Identity")])
    assert "## Identity\n\n### Role\nagent" in b.text and "guidance" not in b.text


def test_optional_file_with_only_a_template_comment_is_skipped(tmp_path: Path) -> None:
    b = boot(
        tmp_path,
        {"s.md": "<!-- notes go here -->\n", "r.md": ""},
        [entry("s.md", optional=True, title="S"), entry("r.md", title="R")],
    )
    assert "## S" not in b.text and "## R\n\n_(empty)_" in b.text


def test_seed_004_state_json(tmp_path: Path) -> None:
    state = {
        "task": "refactor auth",
        "status": "in progress",
        "next": "update logout()",
        "completed": [
            {"text": "split authenticate()", "verified": "pnpm test: 41 passed"},
            {"text": "update login()"},
            "plain string",
        ],
        "blocked_by": "无",
        "last_updated_round": 47,
    }
    b = boot(
        tmp_path,
        {"state.json": json.dumps(state)},
        [entry("state.json", kind="task-state", title="Progress")],
    )
    t = b.text
    assert "> **Next action:** update logout()" in t
    assert "**Task:** refactor auth · **Phase:** in progress" in t
    assert "- split authenticate() - verified: pnpm test: 41 passed" in t
    assert "- update login() (pending verification)" in t
    assert "- plain string (pending verification)" in t
    assert "Blockers" not in t  # "无" means none
    assert "`last_updated_round`: 47" in t
    assert b.warnings == []
    b = boot(
        tmp_path,
        {"state.json": json.dumps({"task": "", "next": ""})},
        [entry("state.json", kind="task-state")],
    )
    assert [w.split(": ", 1)[1][:18] for w in b.warnings] == [
        "`task` is not set:",
        "`next` is not set:",
    ]


def test_seed_000_labels_are_read(tmp_path: Path) -> None:
    line = (
        "[2024-05-01 14:32] 决策：接口层采用适配器模式 | 理由：三个数据源格式不一致 | "
        "影响文件：src/adapters/*.ts | 快照：snapshot-014 | 替代方案：直接耦合"
    )
    b = boot(
        tmp_path,
        {"decisions.log": f"{line}\n{GOOD_LINE}\n"},
        [entry("decisions.log", kind="decision-log", tail=5)],
    )
    assert b.warnings == [] and "接口层采用适配器模式" in b.text


def test_readonly_record_in_the_state_dir_wins(tmp_path: Path) -> None:
    layout = [entry("constraints.md", readonly=True)]
    first = boot(tmp_path, {"constraints.md": "no new deps"}, layout)
    readonly.save_record(tmp_path / ".agent", first.readonly_hashes)
    changed = boot(tmp_path, {"constraints.md": "anything goes"}, layout)  # no hashes passed
    assert changed.warnings[0].startswith("readonly file .agent/constraints.md changed")
    readonly.save_record(tmp_path / ".agent", {"constraints.md": None})  # still the template
    assert boot(tmp_path, {}, layout).warnings == []


def _filled(state: Path, layout: str) -> None:
    """What a person and an agent write into a fresh state dir of ``layout``."""
    init(state, layout)
    for path in state.rglob("*.md"):
        path.write_text(
            path.read_text(encoding="utf-8") + f"\nmarker {path.name}\n", encoding="utf-8"
        )
    for path in state.rglob("state.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data.update(
            {k: f"{k} text" for k in ("mission", "task", "next_action", "next") if k in data}
        )
        path.write_text(json.dumps(data), encoding="utf-8")
    (state / "decisions.log").write_text(GOOD_LINE + "\n", encoding="utf-8")
    (state / "snapshots").mkdir(exist_ok=True)
    (state / "snapshots" / "snapshot-001.json").write_text('{"snapshot": 1}', encoding="utf-8")


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_renders_its_files_in_order_within_budget(tmp_path: Path, name: str) -> None:
    state = tmp_path / ".agent"
    _filled(state, name)
    layout = load_layout(name)
    b = render(BootstrapContext("u", 2, "exit:42", state, tmp_path, layout.files, 3000, NOW))
    titles = [f"## {f.heading}\n" for f in layout.files if f.heading in b.text]
    required = [f"## {f.heading}\n" for f in layout.files if not f.optional]
    assert set(required) <= set(titles), b.text
    assert [b.text.index(t) for t in titles] == sorted(b.text.index(t) for t in titles)
    assert b.tokens == estimate_tokens(b.text) <= 3000 and b.cut == []
    assert b.warnings == [], b.warnings
    assert b.text.index(titles[-1]) < b.text.index("## Rules")


def _boot_big_log(root: Path, lines: int) -> tuple[Bootstrap, int]:
    """Render a layout whose decisions.log has ``lines`` lines: (bootstrap,
    bytes this process read meanwhile)."""
    state = root / ".agent"
    state.mkdir(parents=True, exist_ok=True)
    one = (GOOD_LINE + "\n").encode()
    with (state / "decisions.log").open("wb") as f:
        f.write(one * lines)
    (state / "state.json").write_text(json.dumps({"mission": "m", "next_action": "n"}))
    ctx = BootstrapContext("u", 2, None, state, root, load_layout("agentd").files, 3000, NOW)
    before = bytes_read()
    b = render(ctx)
    return b, bytes_read() - before


@needs_read_count
def test_a_300k_line_log_renders_without_reading_it_whole(tmp_path: Path) -> None:
    b, read = _boot_big_log(tmp_path, 300_000)
    size = (tmp_path / ".agent" / "decisions.log").stat().st_size
    assert size > 40_000_000
    assert b.text.count("[2026-11-30 14:32] [arch]") >= 10 and b.warnings == []
    assert b.tokens <= 3000
    assert read < 256 * 1024, f"read {read} bytes of a {size}-byte log"
