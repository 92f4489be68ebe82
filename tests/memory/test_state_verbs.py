"""``agentctl state``: init, show, check and the write verbs, for every layout.

Most tests call the click command in-process (fast, same code path); the
ones about processes - concurrent writers, the installed entry point - run
the real ``python -m agentd.cli.agentctl`` in subprocesses with bounded waits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agentd import fileio
from agentd.cli.agentctl.group import main
from agentd.fileio import LockTimeout
from agentd.memory.formats.decisions import parse_line
from agentd.memory.layout import load_layout, preset_names
from tests.support import git

CTL = [sys.executable, "-P", "-m", "agentd.cli.agentctl", "state"]


def state(tmp: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    """``agentctl state --dir tmp/.agent ARGS`` in-process, run from ``tmp``."""
    old = Path.cwd()
    os.chdir(tmp)
    try:
        return CliRunner().invoke(
            main, ["state", "--dir", ".agent", *args], env=env, catch_exceptions=False
        )
    finally:
        os.chdir(old)


def real(tmp: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """The real ``agentctl state`` (``python -m agentd.cli.agentctl``) in a process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTD_STATE")}
    argv = [*CTL, "--dir", ".agent", *args]
    return subprocess.run(
        argv,
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


# --- init and show, per layout --------------------------------------------------------


@pytest.mark.parametrize("name", preset_names())
def test_init_creates_the_files_and_show_renders_them(tmp_path: Path, name: str) -> None:
    done = real(tmp_path, "init", "--layout", name)
    assert done.returncode == 0, done.stderr
    agent = tmp_path / ".agent"
    layout = load_layout(name)
    for f in layout.files:
        assert (agent / f.path).exists(), f.path  # every file the layout reads
    assert (agent / ".layout").read_text() == f"{name}\n"
    shown = real(tmp_path, "show", "--budget", "2000")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    titles = [f"## {f.heading}\n" for f in layout.files if not f.optional]
    assert [text.index(t) for t in titles] == sorted(text.index(t) for t in titles)
    assert text.startswith("# agentd bootstrap") and text.rstrip().endswith("exit code.")
    assert "Do not change public function signatures" not in text  # examples are not rules


def test_init_never_overwrites(tmp_path: Path) -> None:
    agent = tmp_path / ".agent"
    agent.mkdir()
    (agent / "TASK_STATE.md").write_text("mine\n")
    r = state(tmp_path, "init", "--layout", "contract")
    assert r.exit_code == 0
    assert "kept    .agent/TASK_STATE.md (exists)" in r.stdout
    assert "created .agent/PROJECT_CONTRACT.md" in r.stdout
    assert (agent / "TASK_STATE.md").read_text() == "mine\n"
    again = state(tmp_path, "init")  # the recorded layout; creates nothing new
    assert again.exit_code == 0 and "created" not in again.stdout
    other = state(tmp_path, "init", "--layout", "memento")
    assert other.exit_code == 1
    assert "already initialised with layout 'contract'" in other.stderr
    assert state(tmp_path, "init", "--layout", "nope").exit_code == 2


def test_init_records_readonly_files_and_show_warns_on_change(tmp_path: Path) -> None:
    agent = tmp_path / ".agent"
    state(tmp_path, "init", "--layout", "four-file")
    assert json.loads((agent / ".readonly.json").read_text()) == {"constraints.md": None}
    (agent / "constraints.md").write_text("- never touch tests/legacy/\n")  # the person fills it
    assert "readonly file" not in state(tmp_path, "show").stdout
    state(tmp_path, "init")  # records the filled-in file
    (agent / "constraints.md").write_text("- anything goes\n")  # the agent edits it
    shown = state(tmp_path, "show").stdout
    assert "readonly file .agent/constraints.md changed since it was recorded" in shown
    checked = state(tmp_path, "check")
    assert checked.exit_code == 1 and "constraints.md changed" in checked.stdout


# --- the write verbs, per layout ---------------------------------------------------------


def record_a_session(tmp: Path) -> None:
    for args in (
        ("task", "refactor the cart cache"),
        ("next", "map the redis calls"),
        ("done", "map the redis calls", "--verified", "grep -c: 23"),
        ("next", "extract cache_manager"),
        ("block", "CI has no redis 7"),
        ("handoff", "cache_manager half done; tests next"),
    ):
        r = state(tmp, *args)
        assert r.exit_code == 0, (args, r.output)


@pytest.mark.parametrize("name", preset_names())
def test_done_next_handoff_appear_in_the_next_bootstrap(tmp_path: Path, name: str) -> None:
    assert state(tmp_path, "init", "--layout", name).exit_code == 0
    record_a_session(tmp_path)
    text = state(tmp_path, "show").stdout
    for shown in ("extract cache_manager", "cache_manager half done; tests next"):
        assert shown in text, text
    if name not in ("contract", "decision-log"):  # their bootstrap shows no done list
        assert "map the redis calls" in text and "grep -c: 23" in text
    if name != "checkpoint":  # its blockers live in state.json, shown too
        assert "CI has no redis 7" in text
    body = text[: text.index("## Rules")]
    if "## Warnings" in body:  # the one warning may be the unwritten mission, no other
        section = body.split("## Warnings", 1)[1].split("\n## ", 1)[0]
        warned = [line for line in section.splitlines() if line.startswith("- ")]
        assert warned and all("`mission` is not set" in w for w in warned), section
    assert state(tmp_path, "check").exit_code == 0


def test_contract_verbs_edit_the_right_sections(tmp_path: Path) -> None:
    state(tmp_path, "init", "--layout", "contract")
    record_a_session(tmp_path)
    state(tmp_path, "next", "add unit tests")
    state(tmp_path, "done", "extract cache_manager")
    doc = (tmp_path / ".agent" / "TASK_STATE.md").read_text()
    assert "- task: refactor the cart cache\n" in doc
    assert (
        "## DONE\n\n- [x] map the redis calls (verified: grep -c: 23)\n"
        "- [x] extract cache_manager\n" in doc
    )
    assert "## NEXT\n\n- [ ] add unit tests\n\n## BLOCKERS\n\n- CI has no redis 7\n" in doc
    assert doc.count("cache_manager half done") == 1
    state(tmp_path, "block", "two\nlines")  # an item stays one line
    assert "- two lines\n" in (tmp_path / ".agent" / "TASK_STATE.md").read_text()


def test_json_verbs(tmp_path: Path) -> None:
    state(tmp_path, "init")
    record_a_session(tmp_path)
    data = json.loads((tmp_path / ".agent" / "state.json").read_text())
    assert data["task"] == "refactor the cart cache"
    assert data["next_action"] == "extract cache_manager"
    (step,) = data["completed_steps"]
    assert step["text"] == "map the redis calls" and step["verified"] == "grep -c: 23"
    assert data["blockers"] == ["CI has no redis 7"] and data["updated_at"]
    state(tmp_path, "done", "extract cache_manager")  # the next action, done: cleared
    data = json.loads((tmp_path / ".agent" / "state.json").read_text())
    assert data["next_action"] == "" and data["completed_steps"][-1]["verified"] is None
    assert "(pending verification)" in state(tmp_path, "show").stdout


def test_checkpoint_handoff_writes_the_checkpoint(tmp_path: Path) -> None:
    state(tmp_path, "init", "--layout", "checkpoint")
    record_a_session(tmp_path)
    r = state(tmp_path, "handoff", "auth split done", env={"AGENTD_SESSION": "7"})
    assert r.exit_code == 0
    text = (tmp_path / ".agent" / "checkpoints" / "latest.md").read_text()
    assert text.startswith("[CHECKPOINT round=7 time=") and text.rstrip().endswith("[/CHECKPOINT]")
    assert "## Current state\n\nauth split done" in text
    assert "## Next\n\n- extract cache_manager" in text
    assert "## Verification\n\n- map the redis calls (verified: grep -c: 23)" in text


# --- decide, snapshots ---------------------------------------------------------------------


def test_decide_writes_the_six_field_line_and_a_snapshot(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "cache.py").write_text("cache = {}\n")
    git(tmp_path, "add", "cache.py")
    git(tmp_path, "commit", "-q", "-m", "start")
    state(tmp_path, "init", "--layout", "four-file")
    state(tmp_path, "task", "cache layer")
    r = state(
        tmp_path,
        "decide",
        "one cache_manager",
        "--why",
        "because 23 call sites so one place to monitor",
        "--files",
        "cache.py",
        "--files",
        "gone.py",
        "--alt",
        "raw redis calls",
        "--tag",
        "arch",
    )
    assert r.exit_code == 0 and "snapshot-001" in r.stdout
    agent = tmp_path / ".agent"
    (line,) = (agent / "decisions.log").read_text().splitlines()
    d = parse_line(line)
    assert d is not None and (d.tag, d.decision, d.snapshot) == (
        "arch",
        "one cache_manager",
        "snapshot-001",
    )
    assert d.files == "cache.py, gone.py" and d.alternatives == "raw redis calls"
    snap = json.loads((agent / "snapshots" / "snapshot-001.json").read_text())
    assert snap["git_head"] == git(tmp_path, "rev-parse", "HEAD")
    assert snap["files"] == {"cache.py": git(tmp_path, "hash-object", "cache.py"), "gone.py": None}
    assert snap["task"] == "cache layer" and snap["decision"] == "one cache_manager"
    decisions_md = (agent / "decisions.md").read_text()
    assert "## 1. [arch] one cache_manager\n\n- date: " in decisions_md
    assert "- snapshot: snapshot-001\n- status: active" in decisions_md
    state(tmp_path, "decide", "second", "--why", "w")
    assert "## 2. second" in (agent / "decisions.md").read_text()
    assert (agent / "snapshots" / "snapshot-002.json").exists()


def test_decision_log_layout_logs_task_switches(tmp_path: Path) -> None:
    state(tmp_path, "init", "--layout", "decision-log")
    state(tmp_path, "task", "optimise transformBatch in src/core/pipeline.ts")
    (line,) = (tmp_path / ".agent" / "decisions.log").read_text().splitlines()
    d = parse_line(line)
    assert d is not None and d.tag == "task" and "transformBatch" in d.decision


def test_memento_decide_keeps_key_decisions(tmp_path: Path) -> None:
    state(tmp_path, "init", "--layout", "memento")
    state(tmp_path, "decide", "unified cache_manager", "--why", "one place to monitor")
    data = json.loads((tmp_path / ".agent" / "state.json").read_text())
    assert data["key_decisions"] == [
        {"decision": "unified cache_manager", "reason": "one place to monitor"}
    ]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["decide", "x"], 2, "Missing option '--why'"),
        (["decide", "x", "--why", "a | files: b"], 2, "does not fit the six-field form"),
        (["decide", "  ", "--why", "w"], 2, "must not be empty"),
        (["done"], 2, "Missing argument"),
        (["frobnicate"], 2, "No such command"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str], code: int, message: str) -> None:
    state(tmp_path, "init")
    r = state(tmp_path, *args)
    assert r.exit_code == code and message in r.stderr, r.stderr
    assert (tmp_path / ".agent" / "decisions.log").read_text() == ""  # nothing written


def test_failures_exit_1_and_say_what_to_do(tmp_path: Path) -> None:
    r = state(tmp_path, "next", "x")
    assert r.exit_code == 1 and "no state dir at .agent" in r.stderr
    assert "agentctl state init" in r.stderr
    state(tmp_path, "init")
    (tmp_path / ".agent" / "state.json").write_text("{oops")
    r = state(tmp_path, "done", "x")
    assert r.exit_code == 1 and "not valid JSON" in r.stderr and "nothing was written" in r.stderr
    assert (tmp_path / ".agent" / "state.json").read_text() == "{oops"


def test_layout_without_a_record_comes_from_env_or_the_files(tmp_path: Path) -> None:
    state(tmp_path, "init", "--layout", "contract")
    (tmp_path / ".agent" / ".layout").unlink()
    assert state(tmp_path, "next", "from the files").exit_code == 0
    assert "- [ ] from the files" in (tmp_path / ".agent" / "TASK_STATE.md").read_text()
    assert not (tmp_path / ".agent" / "state.json").exists()  # not the default layout's
    r = state(tmp_path, "check")
    assert r.exit_code == 0 and "using layout 'contract' (detected)" in r.stderr
    r = state(tmp_path, "next", "x", env={"AGENTD_LAYOUT": "memento"})
    assert r.exit_code == 0 and (tmp_path / ".agent" / "state.json").exists()
    r = state(tmp_path, "next", "x", env={"AGENTD_LAYOUT": "nope"})
    assert r.exit_code == 1 and "$AGENTD_LAYOUT: unknown layout 'nope'" in r.stderr


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux /proc/self/io")
def test_show_on_a_300k_line_log_reads_only_its_end(tmp_path: Path) -> None:
    state(tmp_path, "init")
    good = (
        "[2026-11-30 14:32] [arch] decision: d | why: because x so y | files: a.py | "
        "snapshot: snapshot-001 | alternatives: none\n"
    )
    log = tmp_path / ".agent" / "decisions.log"
    log.write_text(good * 300_000 + good.replace(" d |", " the newest |"))
    before = _bytes_read()
    r = state(tmp_path, "show")
    read = _bytes_read() - before
    assert r.exit_code == 0 and "decision: the newest |" in r.stdout
    assert read < 512 * 1024, f"show read {read} bytes of a {log.stat().st_size}-byte log"


def _bytes_read() -> int:
    with open("/proc/self/io", encoding="ascii") as f:  # rchar: bytes read by read() calls
        return next(int(ln.split()[1]) for ln in f if ln.startswith("rchar:"))


def test_state_dir_from_the_environment(tmp_path: Path) -> None:
    elsewhere = tmp_path / "w" / "mem"
    r = CliRunner().invoke(main, ["state", "init"], env={"AGENTD_STATE_DIR": str(elsewhere)})
    assert r.exit_code == 0 and (elsewhere / "state.json").exists()


# --- check -------------------------------------------------------------------------------


def test_check_names_file_and_line_of_every_problem(tmp_path: Path) -> None:
    state(tmp_path, "init")
    for i in range(5):
        state(tmp_path, "decide", f"decision {i}", "--why", "w")
    agent = tmp_path / ".agent"
    lines = (agent / "decisions.log").read_text().splitlines()
    lines[2] = lines[2].replace(" | why:", " why:")  # mangled
    (agent / "decisions.log").write_text("\n".join([*lines, "a note"]) + "\n")
    (agent / "state.json").write_text('{\n  "mission": "m",\n  "constraints": 7\n}\n')
    r = state(tmp_path, "check")
    assert r.exit_code == 1
    out = r.stdout.splitlines()
    assert out[0] == ".agent/state.json:3: field `constraints` should be a list, not a number"
    assert out[1].startswith(".agent/decisions.log:3: not in the six-field form")
    assert out[2].startswith(".agent/decisions.log:6: not in the six-field form")
    assert "3 problem(s) in .agent" in r.stderr
    (agent / "state.json").write_text('{"mission": "m",\n "next_action": oops}')
    assert ".agent/state.json:2: is not valid JSON" in state(tmp_path, "check").stdout


# --- concurrency: real processes ------------------------------------------------------------

WRITER = textwrap.dedent("""
    import sys
    from agentd.cli.agentctl.group import main
    who, n, state_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    for i in range(n):
        args = ["state", "--dir", state_dir, "decide", f"{who} decision {i}",
                "--why", f"because {who} {i}", "--tag", who]
        if i % 6 == 0:  # 5 of the 30 calls record a step: 25 decisions
            args = ["state", "--dir", state_dir, "done", f"{who} step {i}", "--verified", "t"]
        try:
            main(args, standalone_mode=False)
        except SystemExit as e:
            if e.code:
                raise
""")


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    state(tmp_path, "init")
    agent = str(tmp_path / ".agent")
    procs = [
        subprocess.Popen(
            [sys.executable, "-P", "-c", WRITER, who, "30", agent],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for who in ("a", "b")
    ]
    try:
        errors = [p.communicate(timeout=60)[1] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=5)
    assert [p.returncode for p in procs] == [0, 0], errors
    lines = (tmp_path / ".agent" / "decisions.log").read_text().splitlines()
    assert len(lines) == 50  # 2 x 25 decisions
    parsed = [parse_line(line) for line in lines]
    assert all(parsed), lines
    assert sorted(d.snapshot for d in parsed if d) == [f"snapshot-{n:03d}" for n in range(1, 51)]
    assert {d.decision for d in parsed if d} == {
        f"{w} decision {i}" for w in "ab" for i in range(30) if i % 6
    }
    steps = json.loads((tmp_path / ".agent" / "state.json").read_text())["completed_steps"]
    assert len(steps) == 10
    r = real(tmp_path, "check")
    assert r.returncode == 0, r.stdout + r.stderr


def test_lock_waits_are_bounded(tmp_path: Path) -> None:
    with (
        fileio.locked(tmp_path),
        pytest.raises(LockTimeout, match="another writer"),
        fileio.locked(tmp_path, timeout=0.2),
    ):
        pass  # pragma: no cover


# --- archive -------------------------------------------------------------------------------


@pytest.mark.parametrize(("decisions", "epochs", "left"), [(40, 0, 40), (100, 1, 50), (120, 2, 20)])
def test_archive_epochs_of_50(tmp_path: Path, decisions: int, epochs: int, left: int) -> None:
    state(tmp_path, "init")
    agent = tmp_path / ".agent"
    good = "[2026-11-30 14:32] decision: d{} | why: w | files: - | snapshot: snapshot-{:03d}"
    (agent / "decisions.log").write_text(
        "".join(good.format(i, i) + "\n" for i in range(decisions))
    )
    r = state(tmp_path, "archive")
    assert r.exit_code == 0
    kept = (agent / "decisions.log").read_text().splitlines()
    assert len(kept) == left and f"decision: d{decisions - 1} " in kept[-1]
    for n in range(1, epochs + 1):
        epoch = (agent / f"decisions-epoch-{n}.log").read_text().splitlines()
        assert len(epoch) == 50 and f"decision: d{(n - 1) * 50} " in epoch[0]
    assert not (agent / f"decisions-epoch-{epochs + 1}.log").exists()


def test_archive_moves_old_steps_and_snapshots(tmp_path: Path) -> None:
    state(tmp_path, "init", "--layout", "contract")
    agent = tmp_path / ".agent"
    for i in range(14):
        state(tmp_path, "done", f"step {i}")
    (agent / "snapshots").mkdir()
    for n in range(1, 26):
        (agent / "snapshots" / f"snapshot-{n:03d}.json").write_text("{}")
    r = state(tmp_path, "archive")
    assert "moved 4 of TASK_STATE.md (DONE) to .agent/TASK_STATE_archive.md" in r.stdout
    assert "moved 5 older snapshots" in r.stdout
    archived = (agent / "TASK_STATE_archive.md").read_text().splitlines()
    assert archived == [f"- [x] step {i}" for i in range(4)]
    doc = (agent / "TASK_STATE.md").read_text()
    assert "step 3\n" not in doc and "- [x] step 4\n" in doc and "- [x] step 13\n" in doc
    assert (
        sorted(p.name for p in (agent / "snapshots" / "archive").iterdir())[0]
        == "snapshot-001.json"
    )
    state(tmp_path, "decide", "after", "--why", "w")  # numbering goes on past the archived
    assert (agent / "snapshots" / "snapshot-026.json").exists()
    assert "moved 1 older snapshots" in state(tmp_path, "archive").stdout  # 21 were left
    assert state(tmp_path, "archive").stdout.strip() == "nothing to archive"


def test_archive_memento_keeps_state_to_one_screen(tmp_path: Path) -> None:
    state(tmp_path, "init", "--layout", "memento")
    agent = tmp_path / ".agent"
    data = json.loads((agent / "state.json").read_text())
    data["completed_steps"] = [f"step {i}" for i in range(30)]
    data["key_decisions"] = [{"decision": f"d{i}", "reason": "r"} for i in range(12)]
    (agent / "state.json").write_text(json.dumps(data, indent=2))
    r = state(tmp_path, "archive")
    assert r.exit_code == 0, r.output
    data = json.loads((agent / "state.json").read_text())
    assert data["completed_steps"] == [f"step {i}" for i in range(20, 30)]
    assert [d["decision"] for d in data["key_decisions"]] == [f"d{i}" for i in range(2, 12)]
    (archive,) = (agent / "logs").iterdir()
    assert archive.name.startswith("archive_") and len(archive.read_text().splitlines()) == 22
    assert len((agent / "state.json").read_text().splitlines()) < 50
