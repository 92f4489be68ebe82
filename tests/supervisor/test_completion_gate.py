"""The completion gate under the real `agentd run` and `agentd serve`: an agent that
claims completion while the unit's check fails gets a new session told why, and is
`done` only once the check passes; `attempts` refusals end it `failed`; a check that
hangs is ended at its timeout with its whole tree; its output is bounded and its
secrets hidden; `agentctl verify` runs it by hand."""

from __future__ import annotations

import json
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support import Served, agentctl, agentd, events, poll_for, records, write_unit

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

QUICK = {"min_uptime": "0s", "delay": "50ms", "max_delay": "200ms"}
CHECK = "test -s done.txt || { echo 'FAILED: done.txt is missing'; exit 1; }"
AGENTCTL = f"{sys.executable} -m agentd.cli.agentctl"


def agent(tmp: Path, work_from: int, *, then: str = "exit 143") -> list[str]:
    """An agent that keeps its bootstrap, notes whether the completion mark was there
    when it started, does the work from session ``work_from`` on, and always claims
    the mission complete (``agentctl state complete``) before ``then``."""
    script = tmp / "agent.sh"
    script.write_text(
        textwrap.dedent(f"""\
            cp "$AGENTD_BOOTSTRAP_FILE" "boot-$AGENTD_SESSION.md"
            if [ -e "$AGENTD_STATE_DIR/complete.json" ]; then touch "marked-$AGENTD_SESSION"; fi
            if [ "$AGENTD_SESSION" -ge {work_from} ]; then echo "the work" > done.txt; fi
            {AGENTCTL} state complete "all done in session $AGENTD_SESSION"
            touch "claimed-$AGENTD_SESSION"
            {then}
        """)
    )
    return ["sh", str(script)]


def history(home: Path, unit: str) -> list[dict[str, Any]]:
    return records(home / "logs" / unit / "history.jsonl")


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_completion_the_check_refuses_gets_a_session_told_why_then_is_done(
    home: Path, tmp_path: Path
) -> None:
    work = home / "work"
    write_unit(
        home,
        "g",
        {
            "command": agent(tmp_path, work_from=2),  # exit 143: the mark alone says done
            "inject": {"mode": "none"},
            "restart": QUICK,
            "complete": {"verify": CHECK},
        },
    )
    res = agentd(home, "run", "g")
    assert res.returncode == 0, res.stderr
    assert "session 1 check FAILED: `test -s done.txt" in res.stderr
    assert "session 2 check passed" in res.stderr
    rows = history(home, "g")
    assert [r["session"] for r in rows if r["kind"] == "start"] == [1, 2]
    assert [r["reason"] for r in rows if r["kind"] == "start"] == ["start", "verify-failed"]
    outcomes = [(r["outcome"], r["next"]) for r in rows if r["kind"] == "outcome"]
    assert outcomes == [("verify-failed", "start"), ("done", "done")]
    checks = [(r["session"], r["ok"], r["exit_code"]) for r in rows if r["kind"] == "verify"]
    assert checks == [(1, False, 1), (2, True, 0)]
    said = events(home, "unit.verify")
    assert [(e["ok"], e["exit_code"]) for e in said] == [(False, 1), (True, 0)]
    assert all(isinstance(e["duration_s"], float) for e in said)
    assert said[0]["tail"] == "FAILED: done.txt is missing"
    last = events(home, "unit.state")[-1]
    assert (last["to"], last["reason"]) == ("done", "complete")
    # the refusal cleared the mark: session 2 did not start marked complete
    assert not (work / "marked-2").exists()
    boot = (work / "boot-2.md").read_text()
    headings = [line for line in boot.splitlines() if line.startswith("## ")]
    assert headings[0] == "## The claimed completion failed verification", headings
    assert "The previous session ended: `verify-failed`" in boot
    assert f"the check `{CHECK}` exited with code 1" in boot
    assert "FAILED: done.txt is missing" in boot
    assert "refusal 1 of 3" in boot
    assert "failed verification" not in (work / "boot-1.md").read_text()
    assert f"once its check `{CHECK}` passes" in (work / "boot-1.md").read_text()


def test_attempts_refusals_end_the_unit_failed(home: Path, tmp_path: Path) -> None:
    write_unit(
        home,
        "never",
        {
            "command": agent(tmp_path, work_from=99, then="exit 0"),  # exit 0: success code
            "inject": {"mode": "none"},
            "restart": QUICK,
            "complete": {"verify": CHECK, "attempts": 2},
        },
    )
    res = agentd(home, "run", "never")
    assert res.returncode == 1, res.stderr
    rows = history(home, "never")
    assert [r["session"] for r in rows if r["kind"] == "start"] == [1, 2]
    assert [r["ok"] for r in rows if r["kind"] == "verify"] == [False, False]
    last = events(home, "unit.state")[-1]
    assert (last["to"], last["reason"]) == ("failed", "verify-failed")
    assert "refused 2 times (complete.attempts 2)" in last["detail"]
    assert "verify-failed" in res.stderr
    kept = json.loads((home / "lifecycle" / "never.json").read_text())
    assert kept["state"] == "failed"  # kept: it is not run again by itself


def test_a_hanging_check_is_ended_at_its_timeout_with_its_whole_tree(
    home: Path, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    hang = (
        f"echo checking; sleep 300 & echo $! >> {pids}; "
        f"(setsid sh -c 'echo $$ >> {pids}.setsid; trap \"\" TERM; exec sleep 301' &); "
        f"echo $$ >> {pids}; trap '' TERM; sleep 302"
    )
    write_unit(
        home,
        "hang",
        {
            "command": agent(tmp_path, work_from=1, then="exit 0"),
            "inject": {"mode": "none"},
            "restart": QUICK,
            "stop": {"grace": "300ms"},
            "complete": {"verify": hang, "timeout": "1s", "attempts": 1},
        },
    )
    res = agentd(home, "run", "hang")
    assert res.returncode == 1, res.stderr
    started = [int(p) for p in pids.read_text().split()]
    [escaped] = [int(p) for p in Path(f"{pids}.setsid").read_text().split()]
    assert len(started) == 2, started
    assert [p for p in [*started, escaped] if not gone(p)] == []
    [said] = events(home, "unit.verify")
    assert said["ok"] is False and said["timed_out"] is True
    assert said["exit_code"] is None  # it did not end by itself
    assert said["said"] == "ran past its timeout (1s) and was ended"
    assert escaped in said["pids"]  # out of its group, deaf to TERM: found and killed
    assert said["tail"].startswith("checking")  # (a shell may say "Killed" as it goes)
    last = events(home, "unit.state")[-1]
    assert (last["to"], last["reason"]) == ("failed", "verify-failed")


def test_the_check_output_is_bounded_and_its_secrets_hidden(home: Path, tmp_path: Path) -> None:
    secret = "tok-9f8e7d6c5b4a"
    noisy = (
        'i=0; while [ $i -lt 60000 ]; do echo "collecting test_$i"; i=$((i+1)); done; '
        'echo "auth failed with $SHOP_API_TOKEN"; exit 2'
    )
    write_unit(
        home,
        "noisy",
        {
            "command": agent(tmp_path, work_from=99, then="exit 0"),
            "inject": {"mode": "none"},
            "env": {"SHOP_API_TOKEN": secret},
            "restart": QUICK,
            "complete": {"verify": noisy, "attempts": 2},
        },
    )
    res = agentd(home, "run", "noisy")
    assert res.returncode == 1, res.stderr
    logs = home / "logs"
    for path in [
        logs / "agentd.jsonl",
        logs / "noisy" / "transcript.log",
        home / "work" / "boot-2.md",
    ]:
        assert secret not in path.read_text(), path
    first = events(home, "unit.verify")[0]
    assert first["tail"].endswith("auth failed with ***")
    assert len(first["tail"]) <= 1000
    boot = (home / "work" / "boot-2.md").read_text()
    assert "auth failed with ***" in boot and "collecting test_59999" in boot
    assert "collecting test_1000\n" not in boot  # only its end
    printed = sum(len(f"collecting test_{i}\n") for i in range(60000))
    transcript = (logs / "noisy" / "transcript.log").stat().st_size
    assert printed > 1_000_000 and transcript < 2 * 70_000 + 20_000  # two checks, each bounded


def test_the_gate_under_serve_and_agentctl_verify_by_hand(
    dhome: Path,
    serve: list[Served],
    tmp_path: Path,
) -> None:
    work = dhome / "work"
    write_unit(
        dhome,
        "srv",
        {
            "command": agent(tmp_path, work_from=2, then="exec sleep 3600"),
            "inject": {"mode": "none"},
            "restart": QUICK,
            "stop": {"grace": "2s"},
            "complete": {"verify": CHECK},
            "workdir": str(work),
        },
    )
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: (work / "claimed-1").exists(), timeout=30, what="session 1's claim")
    # the agent claimed completion and waits; by hand, the check says not yet
    ctl = agentctl(dhome, "verify", "srv")
    assert ctl.returncode == 1, ctl.stderr
    assert "srv: check FAILED: `test -s done.txt" in ctl.stdout
    assert "FAILED: done.txt is missing" in ctl.stdout
    manual = events(dhome, "unit.verify")[-1]
    assert manual["manual"] is True and manual["ok"] is False
    assert d.status("srv")["state"] == "running"  # a check by hand changes nothing
    # the session ends (a restart): its claim is checked, refused, session 2 does the work
    d.result("restart", units=["srv"])
    poll_for(lambda: (work / "claimed-2").exists(), timeout=30, what="session 2's claim")
    assert "## The claimed completion failed verification" in (work / "boot-2.md").read_text()
    got = d.status("srv")
    assert got["verify"]["ok"] is False and got["verify"]["session"] == 1
    assert got["verify"]["manual"] is False
    d.result("restart", units=["srv"])
    poll_for(lambda: d.status("srv")["state"] == "done", timeout=30, what="srv done")
    done = d.status("srv")
    assert done["verify"]["ok"] is True and done["verify"]["session"] == 2
    assert done["last_reason"] == "manual"
    ok = agentctl(dhome, "verify", "srv", "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["ok"] is True


def test_a_stop_during_the_check_ends_its_tree_and_the_unit_is_stopped(
    dhome: Path,
    serve: list[Served],
    tmp_path: Path,
) -> None:
    pids = tmp_path / "pids"
    hang = f"echo $$ >> {pids}; sleep 300 & echo $! >> {pids}; wait"
    write_unit(
        dhome,
        "st",
        {
            "command": agent(tmp_path, work_from=1, then="exit 0"),
            "inject": {"mode": "none"},
            "restart": QUICK,
            "complete": {"verify": hang, "timeout": "10m"},
        },
    )
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: len(pids.read_text().split()) == 2 if pids.exists() else False, timeout=30)
    checking = d.status("st")
    assert checking["state"] == "stopping" and checking["verifying"]["command"] == hang
    d.result("stop", units=["st"])
    got = d.status("st")
    assert got["state"] == "stopped", got
    assert all(gone(int(p)) for p in pids.read_text().split())
    [said] = events(dhome, "unit.verify")
    assert said["ok"] is False and said["said"] == "was cut short (the unit was stopped)"
    # not refused: the mark stays, and the unit did not fail
    assert (dhome / "work" / ".agent" / "complete.json").exists()
    assert [r for r in records(dhome / "logs" / "st" / "history.jsonl") if r["kind"] == "outcome"][
        -1
    ]["outcome"] == "stopped"


def test_agentctl_verify_without_an_agentd_runs_it_here(home: Path, tmp_path: Path) -> None:
    write_unit(
        home,
        "off",
        {"command": ["true"], "complete": {"verify": "echo here; pwd; exit 3"}},
    )
    res = agentctl(home, "verify", "off")
    assert res.returncode == 1, res.stderr
    assert "no agentd answers; running the check here" in res.stderr
    assert f"here\n{home / 'work'}\n" in res.stdout
    assert "off: check FAILED: `echo here; pwd; exit 3` exited with code 3" in res.stdout
    none = agentctl(home, "verify", "nope")
    assert none.returncode == 1 and "nope" in none.stderr
    write_unit(home, "plain", {"command": ["true"]})
    plain = agentctl(home, "verify", "plain")
    assert plain.returncode == 1 and "has no completion check" in plain.stderr


def test_a_check_left_by_a_killed_agentd_is_ended_by_the_next(
    dhome: Path,
    serve: list[Served],
    tmp_path: Path,
) -> None:
    pids = tmp_path / "pids"
    hang = f"sleep 300 & echo $! >> {pids}; (setsid sleep 301 & echo $! >> {pids}); wait"
    write_unit(
        dhome,
        "lost",
        {
            "command": agent(tmp_path, work_from=1, then="exit 0"),
            "inject": {"mode": "none"},
            "autostart": False,
            "complete": {"verify": hang},
        },
    )
    first = Served(dhome)
    serve.append(first.ready())
    first.result("start", units=["lost"])
    poll_for(lambda: pids.exists() and len(pids.read_text().split()) == 2, timeout=30)
    left = [int(p) for p in pids.read_text().split()]
    first.kill(signal.SIGKILL)
    first.proc.wait(timeout=10)
    assert not any(gone(p) for p in left)  # the check outlived its agentd...
    second = Served(dhome)
    serve.append(second.ready())
    poll_for(lambda: all(gone(p) for p in left), timeout=30, what="the next agentd to end it")
    ended = [e for e in events(dhome, "session.orphan_killed") if e["unit"] == "lost"]
    assert ended and set(left) <= {p for e in ended for p in e["pids"]}
