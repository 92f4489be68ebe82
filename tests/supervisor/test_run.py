"""`agentd run` end to end: the real CLI, real ptys, the scriptable fake agent."""

from __future__ import annotations

import itertools
import json
import signal
import sys
import time
from datetime import datetime
from pathlib import Path

import psutil
import pytest

from tests.support import (
    FAKE_AGENT,
    agentd,
    agentd_popen,
    events,
    fake,
    noted_pid,
    poll_for,
    records,
    write_unit,
)

QUICK = {"min_uptime": "0s", "delay": "50ms", "max_delay": "200ms"}


def test_exit_42_restarts_and_session_2_gets_the_state(home: Path, tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    work = home / "work"
    (work / ".agent").mkdir(parents=True)
    (work / ".agent" / "state.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "mission": "Port the billing module",
                "next_action": "Rewrite invoice totals in src/billing.py",
                "completed_steps": [],
            }
        )
    )
    write_unit(
        home,
        "a",
        {
            "command": fake(f"record:{rec}", "if-session:1:exit:42", "exit:0", "--", "{bootstrap}"),
            "restart": QUICK,
        },
    )
    res = agentd(home, "run", "a")
    assert res.returncode == 0, res.stderr
    got = records(rec)
    assert [r["session"] for r in got] == ["1", "2"]
    second = got[1]
    assert second["reason"] == "exit:42"
    assert "Rewrite invoice totals in src/billing.py" in second["args"][0]
    assert "session 2" in second["args"][0] and "exit:42" in second["args"][0]
    # the session environment (README "What a session gets")
    assert second["unit"] == "a"
    assert second["state_dir"] == str(work / ".agent")
    assert second["cwd"] == str(work)
    assert second["bootstrap_file"] == str(home / "logs" / "a" / "bootstrap-2.md")
    assert Path(second["bootstrap_file"]).read_text() == second["args"][0]
    assert "done after 2 session(s)" in res.stderr


@pytest.mark.slow
def test_sentinel_split_by_ansi_gets_sigterm_and_restarts(home: Path, tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    write_unit(
        home,
        "s",
        {
            "command": fake(
                f"record:{rec}",
                "if-session:2:exit:0",
                "out:working...",
                "split:\\x1b[97m*\\x1b[3GCompact\\x1b[1mi\\x1b[0mng\\x1b[1Cconversation\\u2026\\r",
                "wait",
            ),
            "sentinels": [{"name": "compaction", "match": "Compacting conversation"}],
            "restart": QUICK,
            "inject": {"mode": "none"},  # no typed Enter whose echo could land inside the line
        },
    )
    res = agentd(home, "run", "s")
    assert res.returncode == 0, res.stderr
    got = records(rec)
    assert [r["reason"] for r in got] == ["start", "sentinel:compaction"]
    [hit] = events(home, "session.sentinel")
    assert hit["name"] == "compaction" and "Compacting" in hit["line"]
    kill = events(home, "session.kill")[0]
    assert kill["signal"] == "TERM" and got[0]["pid"] in kill["pids"]
    first_exit = events(home, "session.exit")[0]
    assert first_exit["signal"] == "TERM" and first_exit["reason"] == "sentinel:compaction"


@pytest.mark.slow
def test_stdin_injection_after_a_prompt(home: Path) -> None:
    write_unit(
        home,
        "p",
        {
            "command": fake("out:booting", "sleep:0.2", "prompt:ready> ", "exit:0"),
            "inject": {"mode": "stdin", "after": "ready> $"},
            "state": {"budget_tokens": 400},
        },
    )
    res = agentd(home, "run", "p")
    assert res.returncode == 0, res.stderr
    transcript = (home / "logs" / "p" / "transcript.log").read_text()
    assert "GOT:# agentd bootstrap: p, session 1" in transcript
    [inj] = events(home, "session.inject")
    assert inj["mode"] == "stdin" and inj["bytes"] > 100


@pytest.mark.slow
def test_stdin_bracketed_paste_sends_one_paste(home: Path, tmp_path: Path) -> None:
    pasted = tmp_path / "paste.bin"
    write_unit(
        home,
        "bp",
        {
            "command": fake("paste", "exit:0"),
            "env": {"FAKE_PASTE_FILE": str(pasted)},
            "inject": {"mode": "stdin", "after": "> $"},
        },
    )
    res = agentd(home, "run", "bp")
    assert res.returncode == 0, res.stderr
    text = pasted.read_text()
    boot = (home / "logs" / "bp" / "bootstrap-1.md").read_text()
    assert text == boot and text.count("\n") > 3  # the newlines arrived inside one paste
    [inj] = events(home, "session.inject")
    assert inj["bracketed_paste"] is True


@pytest.mark.slow
def test_crash_loop_backs_off_then_fails(home: Path) -> None:
    write_unit(
        home,
        "c",
        {
            "command": fake("exit:3"),
            "restart": {"delay": "100ms", "max_delay": "1s", "burst": 3, "window": "1m"},
        },
    )
    res = agentd(home, "run", "c")
    assert res.returncode == 1
    states = [(e["to"], e.get("reason", "")) for e in events(home, "unit.state")]
    backoffs = [r for to, r in states if to == "backoff"]
    assert len(backoffs) == 3 and all(r.startswith("exit:3") for r in backoffs)
    assert states[-1] == ("failed", "exit:3")
    assert "4 failures" in events(home, "unit.state")[-1]["detail"]
    assert "failed after 4 session(s)" in res.stderr
    # the delays doubled: at least 100ms, 200ms, 400ms between the session starts
    # (lower bounds only: a loaded machine makes a gap longer, never shorter)
    starts = [datetime.fromisoformat(e["timestamp"]) for e in events(home, "session.start")]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(starts)]
    assert len(starts) == 4
    assert [g >= want for g, want in zip(gaps, [0.1, 0.2, 0.4], strict=True)] == [True] * 3, gaps


@pytest.mark.slow
def test_setsid_grandchild_ignoring_sigterm_is_gone(home: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    write_unit(
        home,
        "o",
        {
            "command": fake("orphan", "child", "exit:0"),
            "env": {"FAKE_PIDS": str(pids)},
            "stop": {"grace": "300ms"},
        },
    )
    res = agentd(home, "run", "o")
    assert res.returncode == 0, res.stderr
    left = [int(p) for p in pids.read_text().split()]
    assert len(left) == 2
    for pid in left:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
    killed = events(home, "session.orphan_killed")
    assert {p for e in killed for p in e["pids"]} >= set(left)


@pytest.mark.slow
def test_stop_signal_then_sigkill_after_grace(home: Path, tmp_path: Path) -> None:
    write_unit(
        home,
        "k",
        {
            "command": fake("ignore-term", "out:Compacting conversation", "wait"),
            "sentinels": [{"name": "c", "match": "Compacting conversation", "action": "stop"}],
            "stop": {"grace": "200ms"},
        },
    )
    res = agentd(home, "run", "k")
    assert res.returncode == 1  # stopped by a sentinel is not "done"
    sigs = [e["signal"] for e in events(home, "session.kill")]
    assert sigs[0] == "TERM" and "KILL" in sigs
    assert events(home, "session.exit")[0]["signal"] == "KILL"
    assert events(home, "unit.state")[-1]["to"] == "stopped"


@pytest.mark.slow
def test_20mb_line_keeps_supervisor_memory_bounded(home: Path) -> None:
    write_unit(
        home,
        "big",
        {
            "command": fake("bigline:20000000", "out:Compacting conversation", "wait"),
            "sentinels": [{"name": "c", "match": "Compacting conversation", "action": "stop"}],
            "logs": {"max_bytes": "1MB", "backups": 1},
        },
    )
    proc = agentd_popen(home, "run", "big")
    peak_kib = 0
    try:
        # VmHWM: the peak resident size of agentd's own image. (ru_maxrss of a
        # child would also count the test process it was forked from.)
        deadline = time.monotonic() + 45
        while proc.poll() is None:
            peak_kib = max(peak_kib, _vm_hwm_kib(proc.pid))
            if time.monotonic() > deadline:
                pytest.fail(
                    f"agentd run did not end within 45 s (peak {peak_kib} KiB so far); "
                    f"sentinels seen: {events(home, 'session.sentinel')}"
                )
            time.sleep(0.01)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, err  # stopped by the sentinel
    assert 0 < peak_kib < 200 * 1024, f"agentd peaked at {peak_kib} KiB"
    assert [e["name"] for e in events(home, "session.sentinel")] == ["c"], events(home)
    logs = home / "logs" / "big"
    sizes = {p.name: p.stat().st_size for p in logs.glob("transcript.log*")}
    assert len(sizes) <= 2 and max(sizes.values()) <= 1_000_000 + 70_000, sizes


def _vm_hwm_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


@pytest.mark.slow
def test_secret_env_value_never_reaches_the_transcript(home: Path) -> None:
    secret = "sk-test-5f1c0ffee5ecret"
    write_unit(
        home,
        "sec",
        {
            "command": fake("env:MY_API_KEY", f"split:{secret}\\n", "exit:0"),
            "env": {"MY_API_KEY": secret},
            # No bootstrap typed: the tty's echo of its Enter, typed a moment later,
            # could land inside the secret written byte by byte (then no redactor
            # sees it whole; reported).
            "inject": {"mode": "none"},
        },
    )
    res = agentd(home, "run", "sec")
    assert res.returncode == 0, res.stderr
    transcript = (home / "logs" / "sec" / "transcript.log").read_text()
    assert "MY_API_KEY=***" in transcript and transcript.count("***") >= 2
    assert secret not in transcript
    assert secret not in (home / "logs" / "agentd.jsonl").read_text()


@pytest.mark.slow
def test_malformed_state_json_still_restarts_with_a_warning(home: Path, tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    work = home / "work"
    (work / ".agent").mkdir(parents=True)
    (work / ".agent" / "state.json").write_text('{"mission": "x", "next_action": ')
    write_unit(
        home,
        "m",
        {
            "command": fake(f"record:{rec}", "if-session:1:exit:42", "exit:0"),
            "restart": QUICK,
            "inject": {"mode": "file"},
        },
    )
    res = agentd(home, "run", "m")
    assert res.returncode == 0, res.stderr
    got = records(rec)
    assert len(got) == 2
    assert got[1]["bootstrap_file"] == str(work / ".agent" / "BOOTSTRAP.md")
    boot = got[1]["bootstrap"]
    assert "## Warnings" in boot and "state.json is not valid JSON" in boot
    warns = events(home, "session.bootstrap")[1]["warnings"]
    assert any("not valid JSON" in w for w in warns)


@pytest.mark.slow
def test_echoed_bootstrap_never_triggers_a_sentinel(home: Path, tmp_path: Path) -> None:
    """A mission about compaction, echoed back, must not restart the unit forever."""
    rec = tmp_path / "rec.jsonl"
    work = home / "work"
    (work / ".agent").mkdir(parents=True)
    (work / ".agent" / "state.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "mission": "Make the Compacting conversation banner blue",
                "next_action": "Find where Compacting conversation is printed",
            }
        )
    )
    write_unit(
        home,
        "e",
        {
            # session 1 echoes its bootstrap, then (later) really compacts; session 2 ends
            "command": fake(
                f"record:{rec}",
                "if-session:2:exit:0",
                "bootstrap",
                "sleep:0.1",
                "out:\\u273b Compacting conversation\\u2026",
                "wait",
            ),
            "sentinels": [{"name": "compaction", "match": "Compacting conversation"}],
            "restart": QUICK,
        },
    )
    res = agentd(home, "run", "e")
    assert res.returncode == 0, res.stderr
    assert [r["reason"] for r in records(rec)] == ["start", "sentinel:compaction"]
    hits = events(home, "session.sentinel")
    assert len(hits) == 1 and hits[0]["line"].startswith("\u273b")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("limits", "reason"),
    [
        ({"session_timeout": "300ms"}, "timeout"),  # no idle limit: only the timeout can end it
        ({"idle_timeout": "150ms"}, "idle"),  # no session_timeout: only idleness can
    ],
)
def test_one_time_limit_alone_ends_a_silent_session(
    home: Path,
    limits: dict[str, str],
    reason: str,
) -> None:
    """The session prints a line and waits forever: the one limit set must end
    it. One session only (a second would be held to the same short limit, and
    may not get as far as exiting by itself on a loaded machine)."""
    write_unit(
        home,
        "t",
        {
            "command": fake("out:hi", "wait"),
            "limits": limits,
            "restart": {**QUICK, "max_sessions": 1},
        },
    )
    res = agentd(home, "run", "t")
    assert res.returncode == 1, res.stderr  # failed: max_sessions reached
    assert [e["reason"] for e in events(home, "session.exit")] == [reason]
    assert "max_sessions reached (1)" in events(home, "unit.state")[-1]["detail"]


@pytest.mark.slow
def test_ignore_and_notify_sentinels_leave_the_session_and_inject_none_types_nothing(
    home: Path,
    tmp_path: Path,
) -> None:
    notified = tmp_path / "notified"
    write_unit(
        home,
        "q",
        {
            "command": fake("out:an IGNORED line", "out:a NOTIFIED line", "out:up", "wait"),
            "inject": {"mode": "none"},
            "sentinels": [
                {"name": "ign", "match": "IGNORED", "action": "ignore"},
                {"name": "note", "match": "NOTIFIED", "action": "notify"},
                {"name": "up", "match": "^up$", "action": "stop"},
            ],
            "notify": {
                "command": [
                    sys.executable,
                    "-c",
                    f"open({str(notified)!r}, 'w').write('{{event}}')",
                ]
            },
        },
    )
    res = agentd(home, "run", "q")
    assert res.returncode == 1, res.stderr  # stopped by the `up` sentinel
    assert [e["name"] for e in events(home, "session.sentinel")] == ["ign", "note", "up"]
    # neither `ignore` nor `notify` ended the session: only `up` did
    assert len(events(home, "session.start")) == 1
    assert [e["reason"] for e in events(home, "session.exit")] == ["sentinel:up"]
    # `notify` ran the notify command (detached: waited for here)
    assert poll_for(lambda: notified.exists() and notified.read_text()) == "sentinel:note"
    [inject] = events(home, "session.inject")
    assert inject["mode"] == "none"
    assert "agentd bootstrap" not in (home / "logs" / "q" / "transcript.log").read_text()


@pytest.mark.slow
def test_context_limit_restarts(home: Path, tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    write_unit(
        home,
        "ctx",
        {
            "command": fake(f"record:{rec}", "if-session:2:exit:0", "spam:200", "wait"),
            "limits": {"context_tokens": 1000},
            "restart": QUICK,
        },
    )
    res = agentd(home, "run", "ctx")
    assert res.returncode == 0, res.stderr
    assert [r["reason"] for r in records(rec)] == ["start", "context"]


@pytest.mark.slow
def test_ctrl_c_stops_the_whole_tree(home: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    write_unit(
        home,
        "i",
        {
            "command": fake("child", "out:started", "wait"),
            "env": {"FAKE_PIDS": str(pids)},
            "stop": {"grace": "5s"},
        },
    )
    proc = agentd_popen(home, "run", "i")
    try:
        child = poll_for(lambda: noted_pid(pids), what="the child pid")
        proc.send_signal(signal.SIGINT)
        # the child ignores SIGTERM: a second Ctrl-C kills at once instead of waiting 5 s
        poll_for(lambda: events(home, "session.kill"), what="the stop signal")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 75, err  # interrupted, the state saved: EX_TEMPFAIL
    assert "interrupted by SIGINT" in err
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == "zombie"
    assert "i interrupted after 1 session(s)" in err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "says"),
    [
        (["/nonexistent/agent-cli", "--flag"], "[Errno 2] No such file or directory"),
        (["agent-cli-that-is-not-installed"], "command not found (searched PATH="),
        (["./notes.txt"], "[Errno 13] Permission denied (not executable: chmod +x)"),
        (["./garbage.bin"], "[Errno 8] Exec format error"),
    ],
)
def test_a_command_that_cannot_be_executed_fails_at_once(
    home: Path, command: list[str], says: str
) -> None:
    work = home / "work"
    work.mkdir()
    (work / "notes.txt").write_text("not a program\n")
    (work / "garbage.bin").write_bytes(b"\x00\x01garbage")
    (work / "garbage.bin").chmod(0o755)
    write_unit(home, "x", {"command": command, "restart": {"delay": "10s", "burst": 5}})
    res = agentd(home, "run", "x")
    assert res.returncode == 78  # EX_CONFIG
    assert [e["to"] for e in events(home, "unit.state")] == ["starting", "stopping", "failed"]
    [exited] = events(home, "session.exit")  # one attempt, no backoff (of 10 s) before a next
    assert exited["reason"] == "spawn-error" and says in exited["error"]
    [failed] = [e for e in events(home, "unit.state") if e["to"] == "failed"]
    assert says in failed["detail"]
    ended = [r for r in records(home / "logs" / "x" / "history.jsonl") if r["kind"] == "end"]
    assert says in ended[0]["error"]
    assert "failed after 1 session(s)" in res.stderr and says in res.stderr


@pytest.mark.slow
def test_check_names_file_line_and_key(home: Path) -> None:
    good = write_unit(home, "good", {"command": fake("exit:0")})
    bad = home / "units" / "bad.yaml"
    bad.write_text(
        f"command: [{sys.executable}, {FAKE_AGENT}]\nworkdir: {home}\n"
        "restart:\n  delay: 1s\n  dealy: 2s\n"
    )
    bad.chmod(0o600)
    res = agentd(home, "check")
    assert res.returncode == 1
    assert f"{bad}:5: restart.dealy: unknown key" in res.stderr
    assert f"{good}: ok" in res.stdout
    assert agentd(home, "check", str(good)).returncode == 0


@pytest.mark.slow
def test_check_refuses_a_world_writable_unit(home: Path) -> None:
    path = write_unit(home, "ww", {"command": fake("exit:0")})
    path.chmod(0o666)
    res = agentd(home, "check", str(path))
    assert res.returncode == 1 and "writable" in res.stderr and str(path) in res.stderr
    assert agentd(home, "run", "ww").returncode == 78  # EX_CONFIG: the file must change


def test_run_unknown_unit_is_a_clear_error(home: Path) -> None:
    res = agentd(home, "run", "nope")
    assert res.returncode != 0 and "nope" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_first_session_env(home: Path) -> None:
    write_unit(
        home,
        "f",
        {
            "command": fake(
                "env:AGENTD_RESTART_REASON", "env:AGENTD_LAYOUT", "env:NOTIFY_SOCKET", "exit:0"
            ),
            "state": {"layout": "memento"},
        },
    )
    res = agentd(home, "run", "f", env={"NOTIFY_SOCKET": "/run/systemd/notify"})
    assert res.returncode == 0
    transcript = (home / "logs" / "f" / "transcript.log").read_text()
    assert "AGENTD_RESTART_REASON=start" in transcript
    assert "AGENTD_LAYOUT=memento" in transcript
    assert "NOTIFY_SOCKET=" in transcript and "/run/systemd/notify" not in transcript


@pytest.mark.slow
@pytest.mark.parametrize(
    ("capture", "sentinel"),
    [
        ("claude-code-2.1.197-autocompact.raw", "compacting"),
        ("claude-code-2.1.332-autocompact.raw", "compacting"),
        ("claude-code-2.1.197-context-limit.raw", "context-limit"),
    ],
)
def test_real_claude_code_output_restarts_with_the_preset(
    home: Path, tmp_path: Path, capture: str, sentinel: str
) -> None:
    """Raw bytes a real Claude Code wrote while compacting, through a real pty."""
    from tests.support import FIXTURES

    rec = tmp_path / "rec.jsonl"
    write_unit(
        home,
        "cc",
        {
            "preset": "claude-code",
            "command": fake(
                f"record:{rec}",
                "if-session:2:exit:0",
                f"replay:{FIXTURES / capture}",
                "wait",
                "--",
                "{bootstrap}",
            ),
            "restart": QUICK,
        },
    )
    res = agentd(home, "run", "cc")
    assert res.returncode == 0, res.stderr
    assert [r["reason"] for r in records(rec)] == ["start", f"sentinel:{sentinel}"]
    assert events(home, "session.sentinel")[0]["name"] == sentinel


@pytest.mark.slow
def test_output_written_just_before_exit_is_not_lost(home: Path) -> None:
    """The kernel hands the last pty output over after the exit is visible."""
    write_unit(
        home,
        "last",
        {
            "command": fake("spam:3000", "out:FINAL LINE of the agent", "exit:0"),
            "sentinels": [{"name": "final", "match": "FINAL LINE", "action": "notify"}],
            # No bootstrap typed: the tty's echo of its Enter (typed 0.3 s after the
            # text) could land inside the last line, and the sentinel miss it.
            "inject": {"mode": "none"},
        },
    )
    res = agentd(home, "run", "last")
    assert res.returncode == 0, res.stderr
    transcript = (home / "logs" / "last" / "transcript.log").read_text()
    assert "tool output line 2999" in transcript and "FINAL LINE of the agent" in transcript
    assert [e["name"] for e in events(home, "session.sentinel")] == ["final"]


@pytest.mark.slow
def test_a_unit_is_supervised_by_one_agentd_only(home: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    write_unit(
        home,
        "one",
        {
            "command": fake("child", "wait"),
            "env": {"FAKE_PIDS": str(pids)},
            "stop": {"grace": "2s"},
        },
    )
    first = agentd_popen(home, "run", "one")
    try:
        child = poll_for(lambda: noted_pid(pids), what="the first session")
        second = agentd(home, "run", "one")
        assert second.returncode == 1
        assert "already supervised by another agentd" in second.stderr
        assert psutil.pid_exists(child)  # the second one did not touch the live session
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=20)
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == "zombie"


@pytest.mark.slow
def test_precompact_hook_restarts_with_fresh_state(home: Path, tmp_path: Path) -> None:
    """The hook `agentctl hooks claude-code` installs, run from inside a session."""
    rec = tmp_path / "rec.jsonl"
    write_unit(
        home,
        "hk",
        {
            "command": fake(
                f"record:{rec}",
                "if-session:2:hook:session-start",
                "if-session:2:exit:0",
                "sleep:0.2",
                "hook:pre-compact",
                "wait",
            ),
            "restart": QUICK,
        },
    )
    res = agentd(home, "run", "hk")
    assert res.returncode == 0, res.stderr
    assert [r["reason"] for r in records(rec)] == ["start", "sentinel:precompact"]
    transcript = (home / "logs" / "hk" / "transcript.log").read_text()
    assert "HOOK:# agentd bootstrap: hk, session 2" in transcript  # SessionStart re-injects


@pytest.mark.slow
def test_precompact_hook_outlives_a_cli_that_takes_its_time_to_exit(
    home: Path, tmp_path: Path
) -> None:
    """Claude Code exits some 100 ms after SIGTERM and, should its PreCompact hook
    end first, goes on compacting in that time (a killed hook is a failed hook, not
    a blocking one): the hook `agentctl hooks` installs outlives the CLI, and the
    session still ends as soon as the CLI has exited, not after the stop grace."""
    from agentd.cli.agentctl import hooks

    rec = tmp_path / "compact.jsonl"
    work = home / "work"
    work.mkdir()
    hooks.write_settings("claude-code", work)
    write_unit(
        home,
        "cc",
        {
            "command": fake("if-session:2:exit:0", f"compact:{rec}", "wait"),
            "restart": QUICK,
            "stop": {"signal": "TERM", "grace": "20s"},
        },
    )
    res = agentd(home, "run", "cc", timeout=60)
    assert res.returncode == 0, res.stderr
    steps = records(rec)
    assert [s["step"] for s in steps] == ["hook", "exit"], steps  # no summary request
    assert steps[-1]["hook"] == "running"
    # The CLI ended itself (143, GRACEFUL_EXIT s after the SIGTERM) and its hook with
    # it: agentd sent nothing more. Had it waited out the 20 s grace for the hook, it
    # would have sent SIGKILL, and the session would have ended by that signal.
    assert [k["signal"] for k in events(home, "session.kill")] == ["TERM"]
    ended = events(home, "session.exit")[0]  # session 1's
    assert (ended["code"], ended.get("signal")) == (143, None), ended


def test_hooks_settings_merge_and_replace(tmp_path: Path) -> None:
    from agentd.cli.agentctl import hooks

    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps(
            {
                "model": "x",
                "hooks": {
                    "PreCompact": [
                        {"matcher": "auto", "hooks": [{"type": "command", "command": "backup.sh"}]}
                    ]
                },
            }
        )
    )
    hooks.write_settings("claude-code", tmp_path)
    hooks.write_settings("claude-code", tmp_path)  # idempotent: ours replaced, not doubled
    data = json.loads(settings.read_text())
    assert data["model"] == "x"
    commands = [h["command"] for e in data["hooks"]["PreCompact"] for h in e["hooks"]]
    assert commands[0] == "backup.sh" and len(commands) == 2
    assert commands[1].endswith("-m agentd.cli.agentctl hook pre-compact")
    assert commands[1].startswith("exec ")  # the CLI's shell must not stay between them
    assert data["hooks"]["SessionStart"][0]["matcher"] == "compact|clear|resume"
    codex = hooks.write_settings("codex", tmp_path)
    assert codex == tmp_path / ".codex" / "hooks.json" and "PreCompact" in codex.read_text()


def test_precompact_hook_lets_the_cli_compact_when_agentd_will_not_end_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Outside agentd, for /compact typed by a person, or with no agentd answering,
    the hook returns at once (it would otherwise hold the CLI for its timeout)."""
    from agentd.cli.agentctl import hooks

    waits: list[tuple[int, float]] = []
    monkeypatch.setattr(hooks, "wait_for_exit_of_parent", lambda *a: waits.append(a) or True)
    monkeypatch.delenv("AGENTD_UNIT", raising=False)
    hooks.pre_compact({"trigger": "auto"})  # not under agentd
    monkeypatch.setenv("AGENTD_UNIT", "u")
    monkeypatch.setenv("AGENTD_SESSION", "3")
    monkeypatch.setenv("AGENTD_SOCKET", str(tmp_path / "nobody.sock"))
    hooks.pre_compact({"trigger": "manual"})  # a person asked for it
    hooks.pre_compact({"trigger": "auto"})  # nobody listens
    assert waits == []  # none of the three waited for the CLI to exit
    monkeypatch.delenv("AGENTD_BOOTSTRAP_FILE", raising=False)
    assert hooks.session_start() == ""


@pytest.mark.slow
def test_binary_output_is_drained_and_matching_goes_on(home: Path) -> None:
    write_unit(
        home,
        "bin",
        {
            "command": fake("binary:300000", "out:\\x1b[0m", "out:Compacting conversation", "wait"),
            "sentinels": [{"name": "c", "match": "Compacting conversation", "action": "stop"}],
        },
    )
    res = agentd(home, "run", "bin")
    assert res.returncode == 1, res.stderr  # stopped by the sentinel, not crashed
    assert [e["name"] for e in events(home, "session.sentinel")] == ["c"]
    assert not events(home, "unit.error")
    assert (home / "logs" / "bin" / "transcript.log").stat().st_size > 300_000


@pytest.mark.slow
def test_the_restart_brake_holds_with_min_uptime_0(home: Path) -> None:
    """An agent that exits 42 at once, and one whose sentinel matches at once, do not
    loop: the third quick end in a row backs off, and the burst fails the unit."""
    quick = {"min_uptime": 0, "delay": "10ms", "max_delay": "50ms", "burst": 3}
    # Shells, not the fake agent: each ends (or says GO) in milliseconds however busy the
    # cores, where a Python agent's start alone may take a second on a loaded machine.
    write_unit(home, "exits", {"command": ["/bin/sh", "-c", "exit 42"], "restart": quick})
    write_unit(
        home,
        "matches",
        {
            "command": ["/bin/sh", "-c", "echo GO; exec sleep 3600"],
            "restart": quick,
            "sentinels": [{"name": "go", "match": "GO"}],
            "stop": {"grace": "300ms"},
        },
    )
    for name in ("exits", "matches"):
        res = agentd(home, "run", name)
        assert res.returncode == 1 and "failed after 6 session(s)" in res.stderr, res.stderr
        assert "failures within" in res.stderr
