"""The bootstrap renderer and the state dir helpers, from tables of state dirs."""

from __future__ import annotations

import io
import json
import os
import re
import stat
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentd.fileio import tail_lines, write_atomic
from agentd.memory.bootstrap.render import BootstrapContext, render
from agentd.memory.formats.decisions import DECISION_LINE
from agentd.memory.gitinfo import git_head, might_be_a_repo
from agentd.memory.layout import resolve
from agentd.memory.statedir import fingerprint, read_tail_lines
from agentd.tokens import estimate_tokens
from tests.support import GOOD_LINE, NOW, boot, entry, git, make_dir

STATE = {
    "schema_version": 1,
    "mission": "Refactor the cart cache layer",
    "task": "replace redis calls",
    "phase": "2/3",
    "next_action": "replace the 5 calls in order_service",
    "completed_steps": [
        {"text": "list the redis calls", "at": "2026-11-30 10:00", "verified": "grep count 23"},
        {"text": "extract cache_manager", "at": "2026-11-30 11:00"},
    ],
    "blockers": [],
    "constraints": ["do not change controller signatures"],
    "key_decisions": [{"decision": "one cache_manager", "reason": "one place to monitor"}],
    "handoff": "order_service.py is half done",
    "updated_at": "2026-11-30T11:00:00Z",
}


def commit(root: Path, name: str, content: str, message: str) -> str:
    (root / name).write_text(content)
    git(root, "add", name)
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


# --- header, order, rules --------------------------------------------------------


@pytest.mark.parametrize(
    ("session", "reason", "expected"),
    [
        (1, None, "This is the first session"),
        (3, "sentinel:compaction", "`sentinel:compaction` (its context was being compacted)"),
        (2, "exit:42", "ended: `exit:42` (the agent asked for a fresh session)"),
        (4, "exit:1", "ended: `exit:1` (it exited with code 1)"),
        (5, "context", "ended: `context` (its context was nearly full)"),
        (6, "sentinel:limit", "its output matched the sentinel 'limit'"),
    ],
)
def test_header_names_unit_session_and_reason(
    tmp_path: Path, session: int, reason: str | None, expected: str
) -> None:
    b = boot(tmp_path, {"state.json": json.dumps(STATE)}, session=session, last_reason=reason)
    first = b.text.splitlines()[0]
    assert first == f"# agentd bootstrap: shop, session {session}"
    assert expected in b.text
    assert "the files win" in b.text


def test_sections_in_spec_order(tmp_path: Path) -> None:
    layout = [entry("b.md", title="Bee"), entry("a.md", title="Ay"), entry("c.md")]
    b = boot(tmp_path, {"a.md": "AAA", "b.md": "BBB", "c.md": "CCC"}, layout, unchanged_sessions=3)
    order = ["# agentd bootstrap", "## Bee", "BBB", "## Ay", "AAA", "## c.md", "CCC"]
    order += ["## Warnings", "## Rules"]
    positions = [b.text.index(s) for s in order]
    assert positions == sorted(positions)
    assert "no state change across the last 3 sessions" in b.text
    rules = b.text[b.text.index("## Rules") :]
    for must in ("under 50 words", "agentctl state", "code 42", 'agentctl restart "$AGENTD_UNIT"'):
        assert must in rules


def test_no_warnings_section_when_all_is_well(tmp_path: Path) -> None:
    b = boot(tmp_path, {"state.json": json.dumps(STATE), "decisions.log": GOOD_LINE + "\n"})
    assert b.warnings == []
    assert "## Warnings" not in b.text
    assert "## Changes since" not in b.text  # not a git repo: nothing to say
    assert b.head is None


# --- budget -----------------------------------------------------------------------


def test_must_keep_over_the_budget_is_cut_evenly_with_a_marker_and_a_warning(
    tmp_path: Path,
) -> None:
    big = "\n".join(f"line {i} " + "x" * 60 for i in range(400))
    layout = [
        entry("first.md"),
        entry("big.md", title="Big"),
        entry("last.md", title="Last"),
        entry("log", kind="decision-log"),
        entry("s.md", keep="free"),
    ]
    b = boot(
        tmp_path,
        {
            "first.md": "FIRST",
            "big.md": big,
            "last.md": "LAST",
            "log": GOOD_LINE + "\n",
            "s.md": "scratch",
        },
        layout,
        budget_tokens=1200,
    )
    assert "FIRST" in b.text and "LAST" in b.text  # the short ones keep every line
    assert "line 0 " in b.text and "line 399" not in b.text  # the long one is cut, from its end
    assert "[... cut for the token budget: read .agent/big.md for the rest]" in b.text
    assert "one cache_manager" not in b.text and "scratch" not in b.text  # nothing below must
    assert "[left out for the token budget: read .agent/log, .agent/s.md]" in b.text
    assert b.cut == [".agent/big.md", ".agent/log", ".agent/s.md"]
    assert any("the must-keep state needs about" in w for w in b.warnings)
    assert b.tokens == estimate_tokens(b.text) <= 1200
    kept = [ln for ln in b.text.splitlines() if ln.startswith("line ")]
    assert all(ln.endswith("x" * 60) for ln in kept)  # cut at a line boundary


def test_max_tokens_caps_one_file(tmp_path: Path) -> None:
    body = "\n".join(f"row {i}" for i in range(500))
    layout = [entry("a.md", max_tokens=60), entry("b.md")]
    b = boot(tmp_path, {"a.md": body, "b.md": "BEE"}, layout)
    section = b.text[b.text.index("## a.md") : b.text.index("## b.md")]
    assert estimate_tokens(section) <= 61
    assert "read .agent/a.md for the rest" in section
    assert "BEE" in b.text


@pytest.mark.parametrize(("char", "fits"), [("字", False), ("a", True)])
def test_cjk_counts_one_token_per_char(tmp_path: Path, char: str, fits: bool) -> None:
    # 2000 chars: 2000 tokens of CJK, but only 500 of latin, against a budget of 1000.
    text = "\n".join(char * 20 for _ in range(100))
    b = boot(tmp_path, {"n.md": text}, [entry("n.md")], budget_tokens=1000)
    shown = sum(ln.count(char) for ln in b.text.splitlines() if set(ln) == {char})
    assert b.tokens == estimate_tokens(b.text) <= 1000
    if fits:
        assert shown == 2000 and b.cut == []
    else:
        assert 500 < shown < 1000 and b.cut == [".agent/n.md"]


def test_a_record_cut_keeps_its_newest_items(tmp_path: Path) -> None:
    log = "\n".join(GOOD_LINE.replace("one cache_manager", f"choice {i}") for i in range(10))
    layout = [entry("decisions.log", kind="decision-log", tail=10, max_tokens=150)]
    b = boot(tmp_path, {"decisions.log": log}, layout)
    assert "choice 9 " in b.text and "choice 0 " not in b.text
    caption = b.text.index("_(the newest ")
    assert "of 10 decisions; read .agent/decisions.log for the rest)_" in b.text[caption:]
    assert caption < b.text.index("choice 9 ")


# --- task state -------------------------------------------------------------------------


def test_task_state_rendering(tmp_path: Path) -> None:
    state = dict(STATE, completed_steps=[*(f"step {i}" for i in range(12)), "last"], extra=[1])
    b = boot(tmp_path, {"state.json": json.dumps(state)})
    t = b.text
    assert "**Mission:** Refactor the cart cache layer" in t
    assert "> **Next action:** replace the 5 calls in order_service" in t
    assert t.index("Mission") < t.index("Next action") < t.index("Completed steps")
    assert "**Task:** replace redis calls · **Phase:** 2/3" in t
    assert "the newest" not in t and "- step 0 (pending verification)" in t  # room for all
    assert "- one cache_manager - because one place to monitor" in t
    assert "**Extra:**\n- 1" in t  # the agent's own list: a record of its own
    assert "## Handoff from the last session\n\norder_service.py is half done" in t
    assert b.warnings == []
    tight = boot(tmp_path, {"state.json": json.dumps(state)}, budget_tokens=400)
    t = tight.text
    newest = r"\*\*Completed steps:\*\* the newest \d of 13 \(the rest: .agent/state.json\)"
    assert re.search(newest, t)
    assert "- last (pending verification)" in t and "step 0 " not in t  # the newest first
    assert "do not change controller" in t and "half done" in t  # facts before records
    notes = [n for row in tight.account for n in row.notes]
    assert any(
        n.startswith("completed steps: the newest ")
        and "(10 guaranteed): the budget went to must-keep facts first" in n
        for n in notes
    )


@pytest.mark.parametrize(
    ("step", "shown"),
    [
        ({"text": "a", "at": "t1", "verified": "pytest -q"}, "- a (t1) - verified: pytest -q"),
        ({"text": "a", "verified": True}, "- a - verified"),
        ({"text": "a", "at": "t1"}, "- a (t1) (pending verification)"),
        ({"text": "a", "verified": False}, "- a (pending verification)"),
        ("plain string as seed 003 writes it", "- plain string as seed 003 writes it (pending"),
    ],
)
def test_unverified_steps_are_pending(tmp_path: Path, step: object, shown: str) -> None:
    b = boot(tmp_path, {"state.json": json.dumps(dict(STATE, completed_steps=[step]))})
    assert shown in b.text


@pytest.mark.parametrize(
    ("content", "warning", "shown"),
    [
        (
            '{\n  "mission": "m",\n  "next_action": oops\n}',
            "is not valid JSON (line 3, col 18",
            '"next_action": oops',
        ),
        ("", "is not valid JSON (line 1, col 1", "(empty file)"),
        ("[1, 2]", "should hold a JSON object", "[1, 2]"),
        (
            '{"mission": "m", "next_action": "n", "constraints": {"a": 1}}',
            "field `constraints` should be a list",
            '{"a": 1}',
        ),
        ('{"mission": ["m"], "next_action": "n"}', "field `mission` should be a string", '["m"]'),
        ('{"mission": "m", "next_action": "n", "key_decisions": [7]}', "`key_decisions[0]`", "- 7"),
        (
            '{"mission": "m", "next_action": "n", "completed_steps": [{"at": 1}]}',
            "`completed_steps[0]` is not in the expected form",
            '{"at": 1}',
        ),
        ('{"mission": "m"}', "`next_action` is not set", "(not set)"),
        ('{"schema_version": 2, "mission": "m", "next_action": "n"}', "schema_version is 2", "m"),
    ],
)
def test_malformed_state_warns_and_still_shows(
    tmp_path: Path, content: str, warning: str, shown: str
) -> None:
    b = boot(tmp_path, {"state.json": content})  # must not raise
    assert any(warning in w for w in b.warnings), b.warnings
    assert warning in b.text[b.text.index("## Warnings") :]
    assert shown in b.text[: b.text.index("## Warnings")]


def test_bad_json_warned_once_for_state_and_handoff(tmp_path: Path) -> None:
    b = boot(tmp_path, {"state.json": "{nope"})
    assert len([w for w in b.warnings if "not valid JSON" in w]) == 1
    assert "## Handoff" not in b.text


def test_empty_handoff_is_skipped(tmp_path: Path) -> None:
    b = boot(tmp_path, {"state.json": json.dumps(dict(STATE, handoff=""))})
    assert "## Handoff" not in b.text


# --- files: missing, sections, decision log --------------------------------------------


def test_missing_files(tmp_path: Path) -> None:
    layout = [entry("opt.md", optional=True, title="Opt"), entry("req.md", title="Req")]
    b = boot(tmp_path, {}, layout)
    assert "## Opt" not in b.text
    assert "## Req\n\n_(missing: `.agent/req.md`)_" in b.text
    assert b.warnings == [".agent/req.md is missing: create it (the layout lists it as required)"]


def test_missing_state_dir_does_not_raise(tmp_path: Path) -> None:
    ctx = BootstrapContext("u", 1, None, tmp_path / "nope", tmp_path, resolve("agentd"), 3000, NOW)
    b = render(ctx)
    assert "nope/state.json is missing" in b.warnings[0]


@pytest.mark.parametrize(
    ("section", "expected", "absent"),
    [
        ("SUMMARY", "the summary\nsecond", "the details"),
        ("summary", "the summary", "the details"),
        ("DETAILS", "the details", "the summary"),
    ],
)
def test_section(tmp_path: Path, section: str, expected: str, absent: str) -> None:
    doc = "# Contract\n\nintro\n\n## SUMMARY\n\nthe summary\nsecond\n\n## DETAILS\nthe details\n"
    b = boot(tmp_path, {"C.md": doc}, [entry("C.md", section=section)])
    assert expected in b.text and absent not in b.text and "intro" not in b.text


def test_missing_section_warns(tmp_path: Path) -> None:
    b = boot(tmp_path, {"C.md": "## OTHER\nx\n"}, [entry("C.md", section="SUMMARY")])
    assert b.warnings == [".agent/C.md has no `## SUMMARY` section"]


@pytest.mark.parametrize(
    ("line", "ok"),
    [
        (GOOD_LINE, True),
        ("[2026-11-30 14:32] decision: d | why: w | files: f | snapshot: s", True),
        ("[2026-11-30 14:32] [] decision: d | why: w | files: - | snapshot: - | alternatives:", 1),
        ("[2026-11-30 14:32] [坑] decision: 用适配器 | why: 因为 | files: a.ts | snapshot: -", 1),
        ("[2026-11-30 14:32] decision: d | why: w | files: f", False),  # no snapshot
        ("[2026-11-30] decision: d | why: w | files: f | snapshot: s", False),  # no time
        ("[2026-11-30 14:32] decision: d | why:  | files: f | snapshot: s", False),  # empty why
        ("2026-11-30 14:32 decision: d | why: w | files: f | snapshot: s", False),
        ("just a note", False),
        ("[2026-11-30 14:32] decision: a | b | why: w | files: f | snapshot: s", True),
        ("[2026-11-30 14:32] decision: d | files: f | why: w | snapshot: s", False),  # order
        ("[2026-11-30 14:32] 决策：d | 理由：w | 影响文件：f | 状态快照：s | 替代方案：", True),
    ],
)
def test_decision_line_grammar(line: str, ok: bool) -> None:
    assert (DECISION_LINE.match(line) is not None) is bool(ok)


def test_decision_log_bad_lines_warn_with_line_numbers(tmp_path: Path) -> None:
    log = "\n".join([GOOD_LINE] * 20 + ["oops", GOOD_LINE, "", "[2026-13-45 99:99] " + "x"])
    layout = [entry("decisions.log", kind="decision-log", tail=5)]
    b = boot(tmp_path, {"decisions.log": log + "\n"}, layout)
    assert len(b.warnings) == 1
    assert b.warnings[0].startswith(".agent/decisions.log: lines 21, 24 are not in the six-field")
    assert "oops" in b.text  # shown as it is, so the agent can fix it


def test_tail_of_a_50mb_log_reads_only_the_end(tmp_path: Path) -> None:
    state = make_dir(tmp_path, {})
    path = state / "decisions.log"
    filler = (GOOD_LINE.replace("one cache_manager", "old") + "\n").encode()
    with path.open("wb") as f:
        f.write(filler * (50_000_000 // len(filler)))
        f.write(b"broken line\n")
        for i in range(3):
            f.write((GOOD_LINE.replace("one cache_manager", f"newest {i}") + "\n").encode())
    assert path.stat().st_size > 50_000_000
    layout = [entry("decisions.log", kind="decision-log", tail=3, keep="must")]
    b = boot(tmp_path, {}, layout)
    shown = [ln for ln in b.text.splitlines() if ln.startswith("[2026")]
    assert len(shown) == 3
    assert all(f"use newest {i} |" in line for i, line in enumerate(shown))
    b = boot(tmp_path, {}, [entry("decisions.log", kind="decision-log", tail=3)])  # a record
    shown = [ln for ln in b.text.splitlines() if ln.startswith("[2026")]
    assert len(shown) > 10 and all(f"use newest {i} |" in shown[i - 3] for i in range(3))
    assert "line 4 (counted from the end) is not" in b.warnings[0]  # too big to count lines
    assert re.search(r"_\(the newest \d+ of \d+\+ decisions; read .agent/decisions.log", b.text)

    class Counting(io.FileIO):
        read_bytes = 0

        def read(self, size: int = -1) -> bytes:
            data = super().read(size)
            Counting.read_bytes += len(data)
            return data

    with Counting(path, "rb") as f:
        lines, start = tail_lines(f, 3)
    assert len(lines) == 3 and start == path.stat().st_size - sum(len(x) + 1 for x in lines)
    assert Counting.read_bytes < 64 * 1024


@pytest.mark.parametrize(
    ("data", "n", "lines"),
    [
        (b"", 3, []),
        (b"a\nb\nc\n", 2, ["b", "c"]),
        (b"a\nb\nc", 2, ["b", "c"]),
        (b"a\nb\nc\n", 10, ["a", "b", "c"]),
        (b"\n\n", 5, ["", ""]),
        (b"x\r\ny\r\n", 1, ["y"]),
        (b"a\n" + b"z" * 20000 + b"\nend\n", 2, ["z" * 20000, "end"]),
        ("中文\n日本語\n".encode(), 1, ["日本語"]),
        (b"a\nb\n", 0, []),
    ],
)
def test_tail_lines_table(data: bytes, n: int, lines: list[str], tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(data)
    assert read_tail_lines(path, n) == lines
    _, start = tail_lines(io.BytesIO(data), n)
    if lines:
        assert data[start:].decode().replace("\r", "").startswith("\n".join(lines))


def test_text_tail_and_latest_in_directory(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {"notes.md": "\n".join(f"n{i}" for i in range(100))}
    files |= {"snapshots/snapshot-001.json": "{old}", "snapshots/snapshot-002.json": "{new}"}
    layout = [entry("notes.md", tail=2, keep="must"), entry("snapshots", title="Latest snapshot")]
    b = boot(tmp_path, files, layout)
    assert "n98\nn99" in b.text and "n97" not in b.text
    assert "latest of 2 files: `.agent/snapshots/snapshot-002.json`" in b.text
    assert "{new}" in b.text and "{old}" not in b.text


# --- readonly, git ------------------------------------------------------------------------


def test_readonly_change_warns(tmp_path: Path) -> None:
    layout = [entry("constraints.md", readonly=True)]
    first = boot(tmp_path, {"constraints.md": "no new deps"}, layout)
    assert first.warnings == [] and set(first.readonly_hashes) == {"constraints.md"}
    same = boot(tmp_path, {}, layout, readonly_hashes=first.readonly_hashes)
    assert same.warnings == []
    changed = boot(
        tmp_path, {"constraints.md": "anything goes"}, layout, readonly_hashes=first.readonly_hashes
    )
    assert len(changed.warnings) == 1
    assert changed.warnings[0].startswith("readonly file .agent/constraints.md changed")
    (tmp_path / ".agent" / "constraints.md").unlink()
    gone = boot(
        tmp_path,
        {},
        [entry("constraints.md", readonly=True, optional=True)],
        readonly_hashes=first.readonly_hashes,
    )
    assert gone.warnings == ["readonly file .agent/constraints.md was removed"]


def test_git_changes_since_last_session(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    start = commit(tmp_path, "a.py", "a", "first")
    make_dir(tmp_path, {"state.json": json.dumps(STATE)})
    assert git_head(tmp_path) == start
    same = boot(tmp_path, since_commit=start)
    assert "## Changes since" not in same.text and same.head == start
    for i in range(12):
        commit(tmp_path, f"f{i}.py", "x", f"change number {i}")
    b = boot(tmp_path, since_commit=start)
    assert b.head == git_head(tmp_path) != start
    section = b.text[b.text.index("## Changes since the last session") : b.text.index("## Rules")]
    assert "Commits: 12" in section
    assert "change number 11" in section and "change number 1\n" not in section
    assert "... and 2 earlier" in section
    assert "12 files changed" in section and "f0.py" in section and "and 2 more" in section
    garbage = boot(tmp_path, since_commit="0" * 40)
    assert "## Changes since" not in garbage.text


def test_state_older_than_last_commit_warns(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    start = commit(tmp_path, "README", "r", "start")
    state = make_dir(tmp_path, {"state.json": json.dumps(STATE)})
    old = time.time() - 3600
    os.utime(state / "state.json", (old, old))
    commit(tmp_path, "code.py", "x", "work without a state update")
    b = boot(tmp_path, since_commit=start)
    assert any("older than the last commit" in w for w in b.warnings), b.warnings
    order = ["## Task state", "## Warnings", "## Changes since the last session", "## Rules"]
    assert [b.text.index(s) for s in order] == sorted(b.text.index(s) for s in order)
    # The state committed together with the work is not stale.
    git(tmp_path, "add", ".agent")
    git(tmp_path, "commit", "-q", "-m", "state too")
    os.utime(state / "state.json", (old, old))
    assert not any("older than" in w for w in boot(tmp_path).warnings)


def test_git_head_outside_a_repo(tmp_path: Path) -> None:
    assert git_head(tmp_path) is None
    assert not might_be_a_repo(tmp_path)  # so no git process is started at all


def test_git_is_asked_from_below_a_work_tree_and_for_git_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    below = repo / "src" / "pkg"
    below.mkdir(parents=True)
    elsewhere.mkdir()
    git(repo, "init", "-q")
    git(repo, "commit", "-q", "--allow-empty", "-m", "first")
    head = git(repo, "rev-parse", "HEAD")
    assert might_be_a_repo(below) and git_head(below) == head
    assert not might_be_a_repo(elsewhere)
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    assert might_be_a_repo(elsewhere) and git_head(elsewhere) == head


# --- statedir ------------------------------------------------------------------------------


def test_fingerprint_tracks_changes_only(tmp_path: Path) -> None:
    state = make_dir(tmp_path, {"state.json": "{}", "sub/notes.md": "n"})
    fp = fingerprint(state)
    assert fingerprint(state) == fp
    (state / "BOOTSTRAP.md").write_text("agentd writes this every session")
    assert fingerprint(state) == fp
    (state / "sub" / "notes.md").write_text("changed")
    changed = fingerprint(state)
    assert changed != fp
    (state / "new.md").write_text("")
    assert fingerprint(state) != changed
    assert fingerprint(tmp_path / "missing") == fingerprint(tmp_path / "also-missing")
    assert fingerprint(tmp_path / "missing") != fingerprint(state)


def test_write_atomic(tmp_path: Path) -> None:
    target = tmp_path / "out.md"
    write_atomic(target, "héllo", mode=0o600)
    assert target.read_text(encoding="utf-8") == "héllo"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    write_atomic(target, b"bytes")
    assert target.read_bytes() == b"bytes"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.md"]  # no temp left


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
state_keys = st.sampled_from([*sorted(STATE), "other"])


@pytest.mark.slow
# tmp_path is shared by the examples on purpose: each one overwrites state.json.
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(state=st.dictionaries(state_keys, json_values, max_size=8) | json_values)
def test_any_json_state_renders(tmp_path: Path, state: object) -> None:
    b = boot(tmp_path, {"state.json": json.dumps(state)}, budget_tokens=400)
    assert b.text.startswith("# agentd bootstrap") and "## Rules" in b.text


@pytest.mark.parametrize("raw", ["1" * 5000, "[" * 5000 + "]" * 5000, "\xff\xfe{", "{}" * 3])
def test_pathological_json_is_a_warning(tmp_path: Path, raw: str) -> None:
    b = boot(tmp_path, {"state.json": raw})
    assert b.warnings


def test_tiny_budget_keeps_the_fixed_parts(tmp_path: Path) -> None:
    b = boot(tmp_path, {"state.json": json.dumps(STATE)}, budget_tokens=10)
    assert b.text.startswith("# agentd bootstrap") and "## Rules" in b.text
    assert "[left out for the token budget: read .agent/state.json]" in b.text
    assert b.cut == [".agent/state.json"]
