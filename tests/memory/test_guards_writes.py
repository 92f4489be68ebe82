"""What the state dir's writes promise, tested as a reader of the files sees them.

A file agentd or ``agentctl state`` rewrites is replaced whole: a reader
that holds the old one keeps reading the old one; a symlink put where the
file was is replaced, not written through; a write that fails leaves the old
content and no temp file. ``decisions.log`` only grows, one decision a line,
even after a crash tore its last line; a line with an impossible date is
not a decision. A handoff that only says "nothing here" is not retired into
``handoffs.md`` at every start. A ``tail:`` file is a record unless ``keep:``
says otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agentd import fileio
from agentd.cli.agentctl.group import main
from agentd.memory.formats.decisions import is_decision, parse_line
from agentd.memory.layout import LayoutFile, load_layout
from agentd.memory.verbs import handoffs
from tests.support import boot, entry

OLD = "old content, whole\n" * 200
NEW = "new content\n" * 300


def state(tmp: Path, *args: str) -> Result:
    """``agentctl state --dir tmp/.agent ARGS`` in-process, run from ``tmp``."""
    old = Path.cwd()
    os.chdir(tmp)
    try:
        return CliRunner().invoke(main, ["state", "--dir", ".agent", *args], catch_exceptions=False)
    finally:
        os.chdir(old)


# --- write_atomic -------------------------------------------------------------------------


def test_a_reader_holding_the_file_keeps_reading_the_old_content(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(OLD)
    with path.open() as reader:
        first = reader.read(10)
        fileio.write_atomic(path, NEW)
        rest = reader.read()  # the file it opened: the old one, whole, not torn
    assert first + rest == OLD
    assert path.read_text() == NEW


def test_a_symlink_put_at_the_path_is_replaced_not_written_through(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("not yours\n")
    path = tmp_path / "state.json"
    path.symlink_to(elsewhere)
    fileio.write_atomic(path, NEW)
    assert elsewhere.read_text() == "not yours\n"
    assert not path.is_symlink() and path.read_text() == NEW


def test_the_mode_asked_for_even_where_an_older_file_had_another(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text(OLD)
    path.chmod(0o666)
    fileio.write_atomic(path, NEW, mode=0o600)
    assert path.stat().st_mode & 0o777 == 0o600
    fileio.write_atomic(tmp_path / "g", b"\x00raw bytes")
    assert (tmp_path / "g").read_bytes() == b"\x00raw bytes"
    assert (tmp_path / "g").stat().st_mode & 0o777 == 0o644


# A write the kernel refuses half-way (the file-size limit, as a full disk would):
# in a process of its own, so the limit binds only it.
FAILED_WRITE = textwrap.dedent(
    """
    import resource, signal, sys
    from pathlib import Path
    from agentd import fileio
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    try:
        fileio.write_atomic(Path(sys.argv[1]), "x" * 100_000)
    except OSError as exc:
        print(exc.errno)
        sys.exit(3)
    """
)


def test_a_write_that_fails_keeps_the_old_content_and_leaves_no_temp_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "TASK_STATE.md"
    path.write_text(OLD)  # 3800 bytes: under the limit, so only the new write fails
    done = subprocess.run(
        [sys.executable, "-c", FAILED_WRITE, str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 3, done.stderr  # the caller hears of it
    assert path.read_text() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["TASK_STATE.md"]


# --- decisions.log -------------------------------------------------------------------------


def test_a_torn_last_line_does_not_swallow_the_next_decision(tmp_path: Path) -> None:
    assert state(tmp_path, "init", "--layout", "decision-log").exit_code == 0
    log = tmp_path / ".agent" / "decisions.log"
    log.write_text("[2026-12-01 10:00] decision: one | why: w | files: - | snapshot: -\n[2026-12")
    r = state(tmp_path, "decide", "use sqlite", "--why", "one file, no server")
    assert r.exit_code == 0, r.output
    lines = log.read_text().splitlines()
    assert lines[:2] == [
        "[2026-12-01 10:00] decision: one | why: w | files: - | snapshot: -",
        "[2026-12",
    ]
    d = parse_line(lines[2])
    assert d is not None and (d.decision, d.why) == ("use sqlite", "one file, no server")
    checked = state(tmp_path, "check")  # the torn line is reported, by its number
    assert checked.exit_code == 1
    assert "decisions.log:2" in checked.stdout and "'[2026-12'" in checked.stdout


@pytest.mark.parametrize(
    "at",
    [
        "2026-02-30 10:00",
        "2026-12-01 25:00",
        "2026-12-01 10:61",
        "2026-13-01 10:00",
        "2026-00-10 10:00",
    ],
)
def test_a_line_with_an_impossible_date_is_not_a_decision(tmp_path: Path, at: str) -> None:
    line = f"[{at}] decision: d | why: w | files: - | snapshot: -"
    assert not is_decision(line) and parse_line(line) is None
    assert is_decision(line.replace(at, "2028-02-29 23:59"))  # a leap day is real
    assert state(tmp_path, "init", "--layout", "decision-log").exit_code == 0
    (tmp_path / ".agent" / "decisions.log").write_text(line + "\n")
    checked = state(tmp_path, "check")
    assert checked.exit_code == 1 and "decisions.log:1" in checked.stdout


# --- handoffs: shown once, then history; a placeholder is no handoff ----------------------


def _handoff_section(tmp: Path, body: str) -> Path:
    path = tmp / ".agent" / "TASK_STATE.md"
    text = path.read_text()
    head, _, _ = text.partition("## HANDOFF")
    path.write_text(f"{head}## HANDOFF\n\n{body}\n")
    return path


@pytest.mark.parametrize(
    "body",
    [
        None,  # the template as `init` wrote it: an HTML comment
        "- none",
        "<!-- nothing yet -->",
        "(none)",
    ],
)
def test_a_placeholder_handoff_stays_and_is_not_kept_as_history(
    tmp_path: Path, body: str | None
) -> None:
    assert state(tmp_path, "init", "--layout", "contract").exit_code == 0
    path = tmp_path / ".agent" / "TASK_STATE.md"
    if body is not None:
        _handoff_section(tmp_path, body)
    before = path.read_text()
    for session in (1, 2, 3):  # every session start
        assert handoffs.retire(tmp_path / ".agent", "contract", session, 1.8e9) is None
    assert path.read_text() == before
    assert not (tmp_path / ".agent" / handoffs.HISTORY).exists()


def test_a_real_handoff_is_retired_once(tmp_path: Path) -> None:
    assert state(tmp_path, "init", "--layout", "contract").exit_code == 0
    path = _handoff_section(tmp_path, "- cache_manager half done; tests next")
    moved = handoffs.retire(tmp_path / ".agent", "contract", 4, 1.8e9)
    assert moved == "- cache_manager half done; tests next"
    assert "cache_manager" not in path.read_text()
    assert handoffs.retire(tmp_path / ".agent", "contract", 5, 1.8e9) is None
    history = (tmp_path / ".agent" / handoffs.HISTORY).read_text()
    assert history.count("## Shown to session") == 1 and "Shown to session 4" in history


# --- a tail file without keep: is a record -------------------------------------------------


def test_a_tail_file_without_keep_is_a_record_and_keep_wins() -> None:
    assert LayoutFile(path="progress.log", tail=20).priority == "record"
    assert LayoutFile(path="progress.log", tail=20, keep="free").priority == "free"
    assert LayoutFile(path="notes.md").priority == "must"
    assert LayoutFile(path="log", kind="decision-log").priority == "record"
    assert LayoutFile(path="d", kind="latest").priority == "free"
    # the presets' tail files are records too
    for name in ("decision-log", "four-file", "contract"):
        for f in load_layout(name).files:
            if f.kind == "text" and f.tail and f.keep is None:
                assert f.priority == "record", (name, f.path)


def test_a_tail_file_gives_way_before_a_must_keep_file(tmp_path: Path) -> None:
    """Under a tight budget a ``tail:`` file (a record: only its newest lines are
    promised) gives way before a must-keep file is cut, whatever the file order."""
    facts = "\n".join(f"fact {i:03d} " + "z" * 40 for i in range(30))
    progress = "\n".join(
        f"step {i:03d}: moved invoice helper {i} to the ledger" for i in range(400)
    )
    layout = [entry("progress.log", tail=3), entry("facts.md")]
    b = boot(tmp_path, {"facts.md": facts, "progress.log": progress}, layout, budget_tokens=700)
    assert "fact 000 " in b.text and "fact 029 " in b.text  # the must-keep file, whole
    assert "step 399:" in b.text and "step 397:" in b.text  # the record's promised tail
    assert "step 000:" not in b.text and ".agent/facts.md" not in b.cut
