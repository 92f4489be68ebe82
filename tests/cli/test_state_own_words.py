"""State files an agent wrote with its own editor, read back through the installed
`agentctl`: the three failures of a new user's first try, as they reported them.

Each test runs `agentctl state init --layout L`, then writes the layout's files
as an agent's Write/Edit tool would (its own list style, not the one the state
verbs write), then asks `agentctl state show` (the next session's bootstrap)
and `agentctl state show --explain` (where the tokens went) at the default
budget of 3,000 tokens.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

AGENTCTL = Path(sys.executable).with_name("agentctl")


def agentctl(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(AGENTCTL), "state", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "HOME": str(workdir)},
    )


def init(workdir: Path, layout: str) -> Path:
    done = agentctl(workdir, "init", "--layout", layout)
    assert done.returncode == 0, done.stderr
    return workdir / ".agent"


def show(workdir: Path) -> tuple[str, dict[str, str]]:
    """The bootstrap, and each file's row of `--explain` (KEEP and the notes)."""
    text = agentctl(workdir, "show")
    explain = agentctl(workdir, "show", "--explain")
    assert text.returncode == 0 and explain.returncode == 0, text.stderr + explain.stderr
    rows = {}
    for line in explain.stdout.splitlines()[1:]:
        name, rest = line.split(None, 1)
        rows[name] = rest
    return text.stdout, rows


def newest(text: str, marker: str, count: int) -> int:
    """How many of the ``count`` newest ``marker`` numbers (``[D0299]``) ``text`` shows."""
    shown = {int(n) for n in re.findall(rf"\[{marker}(\d+)\]", text)}
    return len(shown & set(range(count - 10, count)))


WHY = "chose the cache layer over raw redis calls because one place keeps the TTL"
DECISION_STYLES = {
    "dash": "- [D{n:04d}] " + WHY,
    "star": "* [D{n:04d}] " + WHY,
    "numbered": "{k}. [D{n:04d}] " + WHY,
    "day-tag": "- [day {k}] [D{n:04d}] " + WHY,
}


def _decisions(style: str, count: int) -> str:
    form = DECISION_STYLES[style]
    return "# Decisions\n\n" + "".join(form.format(n=n, k=n + 1) + "\n" for n in range(count))


@pytest.mark.parametrize("style", sorted(DECISION_STYLES))
def test_four_file_decisions_kept_as_a_plain_list_are_a_record(tmp_path: Path, style: str) -> None:
    """310 decisions as a list, 262 done items in task_state.md: the decisions
    are a record (not free text), and the 10 newest are shown."""
    state = init(tmp_path, "four-file")
    (state / "decisions.md").write_text(_decisions(style, 310), encoding="utf-8")
    done = "".join(
        f"- [x] [s{n:04d}] replaced redis call {n} in src/order/service.py and ran the tests\n"
        for n in range(262)
    )
    (state / "task_state.md").write_text(
        "# Task state\n\n## Mission\n\n[mission] one cache layer for cart and order\n\n"
        f"## Progress\n\n{done}\n## Next step\n\n[next] replace redis call 262\n",
        encoding="utf-8",
    )
    text, rows = show(tmp_path)
    assert rows[".agent/decisions.md"].split()[0] == "record", rows
    assert newest(text, "D", 310) == 10
    assert newest(text, "s", 262) >= 9
    assert "[mission]" in text and "[next]" in text


def test_checkpoint_decisions_kept_as_a_list_are_a_record(tmp_path: Path) -> None:
    state = init(tmp_path, "checkpoint")
    (state / "state" / "decisions.md").write_text(_decisions("dash", 310), encoding="utf-8")
    steps = [
        {
            "text": f"[s{n:04d}] replaced redis call {n} in src/order/service.py",
            "verified": "pytest",
        }
        for n in range(300)
    ]
    (state / "state" / "state.json").write_text(
        json.dumps(
            {"task": "[mission] one cache layer", "next": "[next] call 300", "completed": steps}
        ),
        encoding="utf-8",
    )
    text, rows = show(tmp_path)
    assert rows[".agent/state/decisions.md"].split()[0] == "record", rows
    assert newest(text, "D", 310) == 10
    assert newest(text, "s", 300) >= 9


def test_contract_done_items_without_checkboxes_leave_next_blockers_and_handoff(
    tmp_path: Path,
) -> None:
    """200 plain `- item` DONE entries: they are budgeted as a record, and the
    sections that say what to do now are all shown."""
    state = init(tmp_path, "contract")
    done = "".join(
        f"- [s{n:04d}] moved module {n} onto the cache layer and ran its tests again\n"
        for n in range(200)
    )
    (state / "TASK_STATE.md").write_text(
        "# TASK STATE\n\n## CURRENT\n\n- mission: [mission] one cache layer\n- task: order\n\n"
        f"## DONE\n\n{done}\n## NEXT\n\n- [ ] [next] move module 200\n\n"
        "## BLOCKERS\n\n- [blocker] staging redis refuses CI\n\n"
        "## HANDOFF\n\n[handoff] module 200 half done: reads moved, writes not yet\n",
        encoding="utf-8",
    )
    text, rows = show(tmp_path)
    for fact in ("[mission]", "[next]", "[blocker]", "[handoff]"):
        assert fact in text, fact
    assert newest(text, "s", 200) >= 9
    assert "must text cut" not in rows[".agent/TASK_STATE.md"], rows


def test_check_warns_where_it_guessed_and_still_passes(tmp_path: Path) -> None:
    """Decisions written as paragraphs: read (a guess), said with file and line
    by `check` and `--explain`, never an error."""
    state = init(tmp_path, "four-file")
    paragraphs = "\n\n".join(
        f"Chose option {n} over the others.\nBecause it keeps the TTL in one place."
        for n in range(5)
    )
    (state / "decisions.md").write_text(f"# Decisions\n\n{paragraphs}\n", encoding="utf-8")
    checked = agentctl(tmp_path, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (
        "warning: .agent/decisions.md:3: read with a guess: no list items: read as 5 paragraphs"
        in (checked.stderr)
    )
    text, rows = show(tmp_path)
    assert "guessed (.agent/decisions.md:3)" in rows[".agent/decisions.md"]
    assert "Chose option 4 over the others.\nBecause it keeps the TTL in one place." in text


def test_archive_moves_the_oldest_of_a_hand_written_done_list(tmp_path: Path) -> None:
    """`agentctl state archive` reads the DONE list as the bootstrap does: plain
    items with their continuation lines, the newest ten kept."""
    state = init(tmp_path, "contract")
    done = "".join(f"1) [s{n:04d}] moved module {n}\n   (tests pass)\n" for n in range(30))
    (state / "TASK_STATE.md").write_text(
        f"# TASK STATE\n\n## DONE\n\n{done}\n## NEXT\n\n- [ ] [next] module 30\n",
        encoding="utf-8",
    )
    done_run = agentctl(tmp_path, "archive")
    assert done_run.returncode == 0, done_run.stderr
    kept = (state / "TASK_STATE.md").read_text(encoding="utf-8")
    moved = (state / "TASK_STATE_archive.md").read_text(encoding="utf-8")
    assert re.findall(r"\[s(\d{4})\]", kept) == [f"{n:04d}" for n in range(20, 30)]
    assert re.findall(r"\[s(\d{4})\]", moved) == [f"{n:04d}" for n in range(20)]
    assert kept.count("(tests pass)") == 10 and moved.count("(tests pass)") == 20
    assert "[next] module 30" in kept
