#!/usr/bin/env python3
"""The demo agent: behaves like a coding-agent CLI that forgets.

It works through a small mission, recording every step with
``agentctl state done/next/decide/handoff`` the way its bootstrap's rules
tell an agent to (the commands write ``$AGENTD_STATE_DIR``). Session 1 "fills
its context" and prints Claude Code's compaction line, then keeps going as a
real CLI would (agentd must stop it). Session 2 reads its next action from the
bootstrap it was given, does one step and hands over with exit 42. Session 3
finishes and exits 0. No agentd imports: it runs ``agentctl`` as a command,
as any agent would, with the Python that has agentd installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

MISSION = "Put a cache layer in front of the cart module without changing its API"
STEPS = [
    "Map the 23 Redis call sites in cart/",
    "Extract cache_manager with get/set/invalidate",
    "Replace the calls in order_service with cache_manager",
    "Run the test suite and record the result",
]
PAUSE = float(os.environ.get("AGENTD_DEMO_PAUSE", "0.3"))


def say(text: str) -> None:
    print(f"demo-agent: {text}", flush=True)


def agentctl_state(*args: str) -> None:
    """Run ``agentctl state ARGS``; -P keeps the workdir off the import path."""
    subprocess.run(
        [sys.executable, "-P", "-m", "agentd.cli.agentctl", "state", *args],
        check=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )


def load_state(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        state: dict[str, Any] = json.load(f)
    return state


def do_step(state: dict[str, Any]) -> None:
    step = state["next_action"]
    say(f"working on: {step}")
    time.sleep(PAUSE)
    state["completed_steps"].append(step)
    done = len(state["completed_steps"])
    state["next_action"] = STEPS[done] if done < len(STEPS) else "Nothing left: mission complete"
    agentctl_state("done", step, "--verified", "demo check")
    agentctl_state("next", state["next_action"])
    agentctl_state(
        "decide",
        step,
        "--why",
        "it is the next step of the mission, so it comes now",
        "--files",
        "cart/cache.py",
        "--tag",
        "demo",
    )
    say(f"done: {step} (recorded with agentctl state)")


def log_progress(workdir: str, record: dict[str, Any]) -> None:
    with open(os.path.join(workdir, "demo-progress.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def read_bootstrap(args: list[str]) -> str:
    """The bootstrap, from the file its path names (``{bootstrap_file}``: the state
    stays out of ``ps``, as a real CLI's prompt "Read FILE and follow it" does)."""
    if not args:
        return ""
    with open(args[0], encoding="utf-8") as f:
        return f.read()


def main() -> int:
    session = int(os.environ.get("AGENTD_SESSION", "1"))
    state = load_state(os.path.join(os.environ["AGENTD_STATE_DIR"], "state.json"))
    bootstrap = read_bootstrap(sys.argv[1:])
    resumed = state["next_action"]
    picked_up = bool(state["completed_steps"]) and resumed in bootstrap
    if state["completed_steps"]:
        say(
            f"session {session}: the bootstrap says my next action is: {resumed}"
            if picked_up
            else f"session {session}: no next action in my bootstrap!"
        )
    else:
        say(f"session {session}: fresh start, mission: {MISSION}")
    log_progress(os.getcwd(), {"session": session, "resumed_at": resumed, "picked_up": picked_up})
    if session == 1:
        do_step(state)
        do_step(state)
        say("context window is nearly full")
        print("\x1b[97m✻\x1b[3GCompacting conversation…\x1b[39m", flush=True)
        time.sleep(120)  # a real CLI would go on, forgetting; agentd stops it first
        return 1
    if session == 2:
        do_step(state)
        agentctl_state(
            "handoff", "Step 3 done; order_service uses cache_manager. Run the tests next."
        )
        say("handing over to a fresh session (exit 42)")
        return 42
    while len(state["completed_steps"]) < len(STEPS):
        do_step(state)
    agentctl_state("handoff", "Mission complete: nothing to hand over.")
    say("mission complete")
    return 0


if __name__ == "__main__":
    sys.exit(main())
