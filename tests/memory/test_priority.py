"""The budget by priority (must, record, free), its account, and the lifecycle
of state items: handoffs shown once, template lines, mission and completion."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentd.cli.agentctl.group import main
from agentd.memory.bootstrap.parts import Part, must_parts, record_items
from agentd.memory.bootstrap.render import BootstrapContext, render
from agentd.memory.formats import complete
from agentd.memory.layout import load_layout, preset_names, templates
from agentd.memory.verbs import handoffs
from agentd.memory.verbs.init import init
from agentd.tokens import estimate_tokens
from tests.support import GOOD_LINE, NOW, boot, entry

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from bench_memory_grow import Grower  # the memory benchmark's state grower


def decisions(n: int, word: str = "choice") -> str:
    return "\n".join(GOOD_LINE.replace("one cache_manager", f"{word} {i:02d}") for i in range(n))


# --- the budget, by priority ---------------------------------------------------------


def test_must_then_records_then_free_whatever_the_file_order(tmp_path: Path) -> None:
    layout = [
        entry("scratch.md", keep="free"),
        entry("log", kind="decision-log", tail=3),
        entry("task.md"),
    ]
    files: dict[str, str | bytes] = {
        "scratch.md": "\n".join(f"note {i:03d} " + "y" * 50 for i in range(200)),
        "log": decisions(40),
        "task.md": "NEXT: port the invoice totals",
    }
    tight = boot(tmp_path, files, layout, budget_tokens=500)
    t = tight.text
    assert "NEXT: port the invoice totals" in t and "choice 39 " in t and "choice 37 " in t
    assert "note " not in t  # free text gets only what is left: nothing
    assert t.index("[left out for the token budget: read .agent/scratch.md]") > t.index("## log")
    roomy = boot(tmp_path, files, layout, budget_tokens=4000).text
    assert "choice 00 " in roomy  # then more of the newest records, as room allows
    assert "note 199 " in roomy and "note 000 " not in roomy  # free text: its newest end
    assert "[... cut for the token budget: read .agent/scratch.md for the rest]" in roomy
    assert roomy.index("## scratch.md") < roomy.index("## log") < roomy.index("## task.md")


def test_records_get_their_tail_then_share_the_rest_newest_first(tmp_path: Path) -> None:
    layout = [
        entry("a.log", kind="decision-log", tail=2),
        entry("b.log", kind="decision-log", tail=8),
    ]
    b = boot(
        tmp_path,
        {"a.log": decisions(30, "alpha"), "b.log": decisions(30, "beta")},
        layout,
        budget_tokens=1100,
    )
    alpha = sorted(int(m) for m in re.findall(r"alpha (\d\d) ", b.text))
    beta = sorted(int(m) for m in re.findall(r"beta (\d\d) ", b.text))
    assert len(beta) >= 8 and len(alpha) >= 2  # each its guaranteed tail
    for shown in (alpha, beta):  # an unbroken run of the newest
        assert shown == list(range(30 - len(shown), 30))
    assert abs((len(alpha) - 2) - (len(beta) - 8)) <= 1  # the rest is shared item by item


def test_must_keep_is_never_cut_while_a_record_is_shown(tmp_path: Path) -> None:
    must = "\n".join(f"fact {i:03d} " + "z" * 40 for i in range(60))
    layout = [entry("facts.md"), entry("log", kind="decision-log", tail=5)]
    for budget in range(500, 1500, 100):
        b = boot(tmp_path, {"facts.md": must, "log": decisions(20)}, layout, budget_tokens=budget)
        if "choice " in b.text:
            assert "fact 059 " in b.text and ".agent/facts.md" not in b.cut, budget
        else:
            assert ".agent/facts.md" in b.cut and "fact 000 " in b.text, budget
        assert b.tokens <= budget


def test_done_runs_in_a_must_file_are_records() -> None:
    lines = [
        "### CURRENT",
        "- task: t",
        "",
        "### DONE",
        "",
        *(f"- [x] d{i}" for i in range(3)),
        "  more about d2",
        "",
        "### NEXT",
        "- [ ] n",
    ]
    parts = must_parts(lines, "must", ".agent/T.md")
    assert [p.keep for p in parts] == ["must", "record", "must"]
    record = parts[1]
    assert record.items == [["- [x] d0"], ["- [x] d1"], ["- [x] d2", "  more about d2"]]
    assert record.caption(3, 3) == ["### DONE", ""]
    assert record.caption(1, 3) == ["### DONE", "", "- _(2 earlier done items: see .agent/T.md)_"]
    assert parts[0].lines == ["### CURRENT", "- task: t", ""]
    assert record_items(["## Must avoid", "", "- a", "  a2", "- b", "", "## Common", "- c"]) == [
        ["## Must avoid", "", "- a", "  a2"],
        ["- b"],
        ["", "## Common", "- c"],
    ]


# --- the account ---------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [200, 700, 1500, 3000])
@pytest.mark.parametrize("name", preset_names())
def test_the_account_covers_every_token(tmp_path: Path, name: str, budget: int) -> None:
    grower = Grower(tmp_path / ".agent", name, "en")
    grown = grower.grow(25)
    b = render(
        BootstrapContext(
            "u", 26, "exit:42", grown.path, tmp_path, load_layout(name).files, budget, NOW
        )
    )
    assert sum(row.tokens for row in b.account) == b.tokens == estimate_tokens(b.text)
    names = [row.name for row in b.account]
    assert names[0] == "header" and names[-1] == "rules"
    files = [row for row in b.account if row.keep != "fixed"]
    assert files and all(row.tokens <= row.total + 2 for row in files)
    for row in files:
        if row.tokens and row.tokens + 2 < row.total:  # not all of it: the account says why
            assert row.notes, row


def test_show_explain_prints_the_account(tmp_path: Path) -> None:
    Grower(tmp_path / ".agent", "agentd", "zh").grow(30)
    r = CliRunner().invoke(
        main, ["state", "show", "--dir", str(tmp_path / ".agent"), "--explain", "--budget", "1200"]
    )
    assert r.exit_code == 0, r.output
    rows = r.stdout.splitlines()
    assert rows[0].split()[:4] == ["PART", "KEEP", "SHOWN", "TOTAL"]
    shown = [int(line.split()[2]) for line in rows[1:-1]]
    total = rows[-1].split()
    assert total[0] == "total" and int(total[1]) == sum(shown) and "budget 1200" in rows[-1]
    assert any("decisions: the newest" in line for line in rows)
    assert any("free text left out" in line or "left out:" in line for line in rows)


# --- grown state dirs ------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", preset_names())
def test_a_grown_state_dir_keeps_its_must_haves(tmp_path: Path, name: str, lang: str) -> None:
    grown = Grower(tmp_path / ".agent", name, lang).grow(60)
    for budget in (1500, 3000):
        b = render(
            BootstrapContext(
                "u", 61, "exit:42", grown.path, tmp_path, load_layout(name).files, budget, NOW
            )
        )
        for fact, marker in grown.must.items():
            assert marker in b.text, (fact, b.text)
        assert b.tokens <= budget
    for kind in ("decisions", "done items"):  # at the default budget, the newest records too
        assert sum(m in b.text for m in grown.records[kind][-10:]) >= 9, (kind, b.text)


# --- lifecycle of state items ---------------------------------------------------------------


def state(tmp: Path, *args: str) -> str:
    r = CliRunner().invoke(main, ["state", *args, "--dir", str(tmp / ".agent")])
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.mark.parametrize("name", preset_names())
def test_a_handoff_is_dated_shown_once_then_history(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTD_SESSION", "7")
    agent = tmp_path / ".agent"
    state(tmp_path, "init", "--layout", name)
    state(tmp_path, "handoff", "the write path is next")
    ctx = BootstrapContext("u", 8, "exit:42", agent, tmp_path, load_layout(name).files, 3000, NOW)
    first = render(ctx).text
    assert "the write path is next" in first
    if name != "checkpoint":  # a checkpoint dates itself: [CHECKPOINT round=7 time=...]
        assert re.search(r"\[\d{4}-\d\d-\d\d \d\d:\d\d · session 7\] the write path is next", first)
    assert handoffs.retire(agent, name, 8, NOW) is not None  # what agentd does at session 8
    assert "the write path is next" not in render(ctx).text  # a stale handoff: never again
    assert handoffs.retire(agent, name, 9, NOW) is None
    everything = state(tmp_path, "show", "--all")
    assert "# Handoffs already shown" in everything and "## Shown to session 8" in everything
    assert "the write path is next" in everything


@pytest.mark.parametrize("name", preset_names())
def test_template_lines_are_not_presented_as_rules(tmp_path: Path, name: str) -> None:
    init(tmp_path / ".agent", name)
    text = state(tmp_path, "show")
    root = templates(name)
    examples = set()
    for path in [p for p in root.iterdir()] + [
        p for d in root.iterdir() if d.is_dir() for p in d.iterdir()
    ]:
        if path.is_file() and not path.name.endswith(".json"):
            examples |= {
                ln.strip()
                for ln in path.read_text().splitlines()
                if len(ln.strip()) > 12 and not ln.lstrip().startswith(("#", "<!--"))
            }
    leaked = [ln for ln in examples if ln in text]
    assert leaked == [], leaked
    if name in ("agentd", "checkpoint", "four-file", "decision-log"):
        assert "still the template:" in text and "examples are not rules" in text
    assert "\n\n\n" not in text


def test_a_filled_in_file_shows_what_was_written_and_counts_the_examples(tmp_path: Path) -> None:
    agent = tmp_path / ".agent"
    init(agent, "agentd")
    with (agent / "constraints.md").open("a") as f:
        f.write("- Keep the public API of src/cart.py as it is.\n")
    text = state(tmp_path, "show")
    assert "- Keep the public API of src/cart.py as it is." in text
    assert "_(2 example lines of the template, never edited, left out: examples are not " in text
    assert "Do not change public function signatures" not in text


def test_mission_complete_and_the_dir_after_the_verb(tmp_path: Path) -> None:
    agent = tmp_path / ".agent"
    state(tmp_path, "init", "--layout", "memento")
    out = state(tmp_path, "mission", "Port billing to the new ledger")
    assert "recorded in" in out and "(mission)" in out
    assert "**Mission:** Port billing to the new ledger" in state(tmp_path, "show")
    assert "mission` is not set" not in state(tmp_path, "show")
    assert "agentd ends the unit `done`" in state(tmp_path, "complete", "ledger ported, 212 tests")
    done = complete.read(agent)
    assert done is not None and done.summary == "ledger ported, 212 tests"
    assert "**The mission is marked complete**" in state(tmp_path, "show")
    out = state(tmp_path, "mission", "Now port refunds")
    assert "completion mark is cleared" in out and complete.read(agent) is None
    before = CliRunner().invoke(main, ["state", "--dir", str(agent), "next", "write tests"])
    assert before.exit_code == 0 and "next: recorded in" in before.stdout


@pytest.mark.parametrize("name", preset_names())
def test_mission_has_a_place_in_every_layout(tmp_path: Path, name: str) -> None:
    state(tmp_path, "init", "--layout", name)
    state(tmp_path, "mission", "Move the cart onto one cache layer")
    assert "Move the cart onto one cache layer" in state(tmp_path, "show")


def test_a_part_without_room_for_one_line_shows_part_of_it(tmp_path: Path) -> None:
    b = boot(tmp_path, {"one.md": "w" * 20_000}, [entry("one.md")], budget_tokens=600)
    assert "w" * 100 in b.text and "[... cut for the token budget: read .agent/one.md" in b.text
    assert b.tokens <= 600
    assert Part("must").keep == "must"
