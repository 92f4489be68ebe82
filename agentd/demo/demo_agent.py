#!/usr/bin/env python3
"""The demo agent: behaves like a coding-agent CLI that forgets.

It works through a small mission, recording every step in the state files
(``$AGENTD_STATE_DIR/state.json`` and ``decisions.log``) the way the seeds
tell an agent to. Session 1 "fills its context" and prints Claude Code's
compaction line, then keeps going as a real CLI would (agentd must stop it).
Session 2 reads its next action from the bootstrap it was given, does one
step and hands over with exit 42. Session 3 finishes and exits 0.
Standalone on purpose (no agentd imports): any Python can run it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime

MISSION = "Put a cache layer in front of the cart module without changing its API"
STEPS = [
    "Map the 23 Redis call sites in cart/",
    "Extract cache_manager with get/set/invalidate",
    "Replace the calls in order_service with cache_manager",
    "Run the test suite and record the result",
]
PAUSE = float(os.environ.get("AGENTD_DEMO_PAUSE", "0.3"))


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def say(text: str) -> None:
    print(f"demo-agent: {text}", flush=True)


def load_state(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {
            "schema_version": 1, "mission": MISSION, "phase": "refactor",
            "next_action": STEPS[0], "completed_steps": [], "constraints": [
                "Do not change the public methods of cart.Cart",
                "All Redis keys use the prefix 'v2:'",
            ], "key_decisions": [], "handoff": "", "updated_at": now(),
        }


def save_state(path: str, state: dict) -> None:
    state["updated_at"] = now()
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state, f, indent=2, ensure_ascii=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def record_decision(state_dir: str, step: str) -> None:
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M")
    line = (f"[{stamp}] [demo] decision: {step} | why: it is the next step of the mission "
            f"| files: cart/cache.py | snapshot: - | alternatives: -\n")
    with open(os.path.join(state_dir, "decisions.log"), "a", encoding="utf-8") as f:
        f.write(line)


def do_step(state_dir: str, state_file: str, state: dict) -> None:
    step = state["next_action"]
    say(f"working on: {step}")
    time.sleep(PAUSE)
    state["completed_steps"].append({"text": step, "at": now(), "verified": "demo check"})
    done = len(state["completed_steps"])
    state["next_action"] = STEPS[done] if done < len(STEPS) else "Nothing left: mission complete"
    save_state(state_file, state)
    record_decision(state_dir, step)
    say(f"done: {step} (recorded in state.json)")


def log_progress(workdir: str, record: dict) -> None:
    with open(os.path.join(workdir, "demo-progress.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def main() -> int:
    session = int(os.environ.get("AGENTD_SESSION", "1"))
    state_dir = os.environ["AGENTD_STATE_DIR"]
    os.makedirs(state_dir, exist_ok=True)
    state_file = os.path.join(state_dir, "state.json")
    state = load_state(state_file)
    bootstrap = sys.argv[1] if len(sys.argv) > 1 else ""
    resumed = state["next_action"]
    picked_up = bool(state["completed_steps"]) and resumed in bootstrap
    if state["completed_steps"]:
        say(f"session {session}: the bootstrap says my next action is: {resumed}"
            if picked_up else f"session {session}: no next action in my bootstrap!")
    else:
        say(f"session {session}: fresh start, mission: {MISSION}")
    log_progress(os.getcwd(), {"session": session, "resumed_at": resumed,
                               "picked_up": picked_up})
    if session == 1:
        do_step(state_dir, state_file, state)
        do_step(state_dir, state_file, state)
        say("context window is nearly full")
        print("\x1b[97m✻\x1b[3GCompacting conversation…\x1b[39m", flush=True)
        time.sleep(120)  # a real CLI would go on, forgetting; agentd stops it first
        return 1
    if session == 2:
        do_step(state_dir, state_file, state)
        state["handoff"] = "Step 3 done; order_service uses cache_manager. Run the tests next."
        save_state(state_file, state)
        say("handing over to a fresh session (exit 42)")
        return 42
    while len(state["completed_steps"]) < len(STEPS):
        do_step(state_dir, state_file, state)
    state["handoff"] = ""
    save_state(state_file, state)
    say("mission complete")
    return 0


if __name__ == "__main__":
    sys.exit(main())
