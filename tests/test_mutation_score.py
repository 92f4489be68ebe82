"""scripts/mutation_score.py: what it says when it has nothing to read, and its
table of equivalent mutants stays true to its groups."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "mutation_score.py"


def test_no_run_without_a_kept_run_says_what_to_do_and_prints_no_score(tmp_path: Path) -> None:
    argv = [sys.executable, str(SCRIPT), "--only", "matcher-echo", "--no-run"]
    done = subprocess.run(
        [*argv, "--work", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done
    assert "matcher-echo: no kept run in " + str(tmp_path / "matcher-echo") in done.stderr
    assert "agentd/terminal/matcher.py, agentd/terminal/echo.py" in done.stderr
    assert f"run the group first with --work {tmp_path}" in done.stderr
    assert "Traceback" not in done.stderr and "killed" not in done.stdout


def test_each_equivalent_mutant_is_of_a_module_some_group_mutates() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import mutation_score
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    mutated = {module for group in mutation_score.GROUPS for module in group.modules}
    assert {module for module, _, _ in mutation_score.EQUIVALENT} - mutated == set()
    for group in mutation_score.GROUPS:
        assert all((ROOT / t.split("::")[0]).exists() for t in group.tests), group.name
