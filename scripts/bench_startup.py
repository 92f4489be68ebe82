"""The ``startup`` phase of ``scripts/bench.py``: ``agentd --version`` and ``agentd
check`` (one small unit), start to exit, beside ``python -c pass``.

``check`` is what people run in a loop while editing a unit, so its time from
exec to exit is what they wait. Rounds interleave as in ``bench_ctl`` (the
floor, then each command through the console script ``<venv>/bin/agentd`` and
as ``python -m agentd.cli``); a first round warms the caches and is not
counted. Per command: wall-clock median and p90 (ms) and the median CPU time.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench_ctl import FLOOR, console_script, summary, timed
from bench_util import child_env, write_unit

if TYPE_CHECKING:
    from bench_phases import Config

VERBS: dict[str, list[str]] = {"--version": ["--version"], "check": ["check"]}


def commands(unit: Path) -> dict[str, list[str]]:
    """Label -> argv, the floor first."""
    entries = {"module": [sys.executable, "-m", "agentd.cli"]}
    script = console_script("agentd")
    if script is not None:
        entries = {"script": [str(script)], **entries}
    out = {FLOOR: [sys.executable, "-c", "pass"]}
    for entry, prefix in entries.items():
        for verb, args in VERBS.items():
            out[f"{verb} ({entry})"] = [*prefix, *args, *([str(unit)] if verb == "check" else [])]
    return out


def phase_startup(cfg: Config, root: Path, baseline: Path | None) -> dict[str, Any]:
    home = root / "startup-home"
    unit = write_unit(home, "small", [sys.executable, "-c", "pass"])
    env = child_env(AGENTD_HOME=str(home))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as bench_ctl: an install has its .pyc files
    times = timed(commands(unit), env, home, cfg.ctl_runs)
    return summary(times, cfg.ctl_runs, console_script("agentd"))
