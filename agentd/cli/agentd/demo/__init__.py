"""``agentd demo``: the whole loop on a bundled demo agent, in a temp dir."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

from agentd.config.unitfile import load_unit
from agentd.console import Console
from agentd.memory.verbs.init import init
from agentd.paths import Paths
from agentd.supervisor.records.history import History

NEXT = {
    "sentinel:compaction": "restart, state injected",
    "exit:42": "restart, state injected",
    "exit:0": "done",
}


def run_demo(*, keep: bool = False, quiet: bool = False) -> int:
    from agentd.cli.agentd.run import run_unit

    root = Path(tempfile.mkdtemp(prefix="agentd-demo-"))
    work, home = root / "work", root / "home"
    work.mkdir()
    paths = Paths.resolve(home)
    paths.units.mkdir(parents=True, mode=0o700)
    pkg = resources.files("agentd.cli.agentd") / "demo"
    agent = root / "demo_agent.py"
    agent.write_text((pkg / "demo_agent.py").read_text(encoding="utf-8"), encoding="utf-8")
    unit_file = paths.units / "demo.yaml"
    unit_file.write_text((pkg / "demo.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    unit_file.chmod(0o600)
    os.environ.update(
        AGENTD_DEMO_PYTHON=sys.executable,
        AGENTD_DEMO_AGENT=str(agent),
        AGENTD_DEMO_WORKDIR=str(work),
    )
    seed_state(work / ".agent")
    print(f"agentd demo: workdir {work}", file=sys.stderr)
    try:
        unit = load_unit(unit_file)
        code = run_unit(unit, paths, console=Console(quiet=quiet))
        print(summary(paths, work))
    finally:
        if keep:
            print(f"agentd demo: kept {root} (logs in {paths.logs})", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return code


def seed_state(state_dir: Path) -> None:
    """What a person does before leaving an agent alone: `agentctl state init`,
    then write who the agent is and the mission."""
    init(state_dir, "agentd")
    (state_dir / "identity.md").write_text(
        "You are the demo agent: a careful refactoring assistant for the shop codebase.\n",
        encoding="utf-8",
    )
    (state_dir / "constraints.md").write_text(
        "- Do not change the public methods of cart.Cart\n- All Redis keys use the prefix 'v2:'\n",
        encoding="utf-8",
    )
    init(state_dir, None)  # records the readonly constraints as the person wrote them
    path = state_dir / "state.json"
    state = json.loads(path.read_text(encoding="utf-8"))
    state.update(
        {
            "mission": "Put a cache layer in front of the cart module without changing its API",
            "phase": "refactor",
            "next_action": "Map the 23 Redis call sites in cart/",
        }
    )
    path.write_text(json.dumps(state, indent=2), encoding="utf-8")


def summary(paths: Paths, work: Path) -> str:
    """A table of the demo's sessions: how each ended and where the next resumed."""
    ends = [
        r
        for r in History(paths.unit_logs("demo") / "history.jsonl").recent()
        if r.get("kind") == "end"
    ]
    progress: dict[int, dict[str, object]] = {}
    with open(work / "demo-progress.jsonl", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            progress[int(rec["session"])] = rec
    rows = [("session", "ran", "ended by", "then", "started from its state at")]
    for end in ends:
        n = int(end["session"])
        rec = progress.get(n, {})
        start = str(rec.get("resumed_at", "-"))
        if n > 1:
            start += " (picked up)" if rec.get("picked_up") else " (NOT picked up)"
        rows.append(
            (
                str(n),
                f"{end.get('duration_s', 0):.1f}s",
                str(end.get("reason")),
                NEXT.get(str(end.get("reason")), "-"),
                start,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=False)) + "  " + r[-1]
        for r in rows
    ]
    return "\n".join(lines)
