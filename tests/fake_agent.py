#!/usr/bin/env python3
"""A scriptable fake agent CLI for tests: real process, real pty, real signals.

usage: fake_agent.py STEP [STEP...] [-- ARG...]

Steps run in order; arguments after ``--`` are only recorded/printed. TEXT is
decoded with Python escapes, so ``out:\\x1b[31mred`` writes a colour code.

  out:TEXT        write TEXT and a newline          raw:TEXT    write TEXT, no newline
  soon:S:TEXT     write TEXT and a newline, <epoch> in it the Unix time S seconds from now
                  (a reset time that is ahead when agentd reads it, however late we started)
  split:TEXT      write TEXT one byte at a time, flushing between bytes
  sleep:S         sleep S seconds                   exit:N      exit with code N
  until:PATH      wait until PATH exists (the test's go-ahead; exit 124 after 60 s)
  wait            sleep until signalled             ignore-term ignore SIGTERM and SIGHUP
  child           fork a child (same group) that ignores SIGTERM and sleeps
  orphan          double-fork + setsid a grandchild that ignores SIGTERM/SIGHUP
  env:NAME        print NAME=<value>                args        print the args after --
  bootstrap       print the file $AGENTD_BOOTSTRAP_FILE
  prompt:TEXT     write TEXT (no newline), read one line, print GOT:<line>
  paste           enable bracketed paste, read one paste + submit, print PASTE:<n>
  spam:N          write N lines of tool-like output
  bigline:N       write one line of N bytes (in 64 KiB writes)
  record:PATH     append a JSON line {session, reason, args, bootstrap_file, ...}
  if-session:N:STEP   run STEP only when AGENTD_SESSION == N
  state:JSON      write JSON to $AGENTD_STATE_DIR/state.json
  replay:PATH     write the raw bytes of PATH (a TUI capture) in 512-byte writes
  binary:N        write N random bytes (invalid UTF-8, NULs, stray escapes), then a newline
  hook:EVENT      run `agentctl hook EVENT` as a CLI's hook would (stdin JSON), print its output
  compact:PATH    compact as Claude Code 2.1.197 does, running the PreCompact hook of
                  ./.claude/settings.json; each step is a JSON line appended to PATH
  ctl:ARGS        run `agentctl ARGS` (split on spaces; $AGENTD_UNIT expanded), print
                  CTL:<exit code>:<its stdout and stderr, one line>
  size            print SIZE:<cols>x<rows> of its terminal
  winch           wait for a SIGWINCH (one that came since the start counts), then print
                  WINCH:<cols>x<rows> of its terminal

Pids of started helpers are appended to $FAKE_PIDS (one per line) if set.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time


def _text(arg: str) -> str:
    # Python escapes (\x1b, \r, \u2026) in an argument that may also hold non-ASCII text
    return arg.encode("latin-1", "backslashreplace").decode("unicode_escape")


def _write(data: str | bytes) -> None:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    while raw:
        n = os.write(1, raw)
        raw = raw[n:]


def _note_pid(pid: int) -> None:
    path = os.environ.get("FAKE_PIDS")
    if path:
        with open(path, "a") as f:
            f.write(f"{pid}\n")


def _sleep_forever() -> None:
    while True:
        time.sleep(3600)


def _ignore_term() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def _child() -> None:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _ignore_term()
        _note_pid(os.getpid())
        os.write(w, b"x")
        os.close(w)
        _sleep_forever()
    os.close(w)
    os.read(r, 1)  # the child ignores SIGTERM and noted its pid
    os.close(r)


def _orphan() -> None:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.setsid()
        if os.fork() == 0:
            _ignore_term()
            for fd in (0, 1, 2):  # let go of the pty, as a daemonising tool would
                os.close(fd)
            _note_pid(os.getpid())
            os.write(w, b"x")
            os.close(w)
            _sleep_forever()
        os._exit(0)
    os.close(w)
    os.read(r, 1)  # the grandchild exists and noted its pid
    os.close(r)
    os.waitpid(pid, 0)


# Claude Code 2.1.197 takes 50-100 ms from SIGTERM to exit (its graceful shutdown);
# a longer window here makes a hook that dies within it show every time.
GRACEFUL_EXIT = 0.5


def _compact(record: str) -> None:
    """Compact as Claude Code 2.1.197 does, as far as agentd can tell: spawn the
    PreCompact command hook with ``/bin/sh -c COMMAND`` in a session of its own
    (Bun's spawn with ``shell: true, detached: true``), the event's JSON on its
    stdin, and wait for it. SIGTERM starts a graceful exit of GRACEFUL_EXIT s in
    which the event loop goes on: a hook that ends then, killed or not, is a
    failed hook, not a blocking one, so the compaction goes on and its summary
    request goes out. A hook that returns by itself lets it go on too."""
    import subprocess

    def note(**fields: object) -> None:
        with open(record, "a") as f:
            f.write(json.dumps(fields) + "\n")

    with open(os.path.join(".claude", "settings.json")) as f:
        command = json.load(f)["hooks"]["PreCompact"][-1]["hooks"][0]["command"]
    hook = subprocess.Popen(
        command,
        shell=True,
        start_new_session=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _note_pid(hook.pid)
    assert hook.stdin is not None
    hook.stdin.write(json.dumps({"hook_event_name": "PreCompact", "trigger": "auto"}).encode())
    hook.stdin.close()
    note(step="hook", pid=hook.pid)
    exit_at: list[float] = []
    signal.signal(signal.SIGTERM, lambda *_: exit_at.append(time.monotonic() + GRACEFUL_EXIT))
    while (status := hook.poll()) is None:
        if exit_at and time.monotonic() >= exit_at[0]:
            note(step="exit", hook="running")
            os._exit(143)
        time.sleep(0.005)
    note(step="summary request", hook_status=status, signalled=bool(exit_at))
    if exit_at:
        time.sleep(max(0.0, exit_at[0] - time.monotonic()))
        note(step="exit", hook="ended first")
        os._exit(143)
    _write("COMPACTED\r\n")


def _paste() -> None:
    import termios
    import tty

    # raw mode first, as a TUI does: tty.setraw after the prompt could flush
    # (TCSAFLUSH) a paste that arrived in between
    old = termios.tcgetattr(0)
    tty.setraw(0, termios.TCSANOW)
    _write("\x1b[?2004h> ")
    buf = b""
    try:
        while not (b"\x1b[201~" in buf and buf.endswith((b"\r", b"\n"))):
            chunk = os.read(0, 65536)
            if not chunk:
                break
            buf += chunk
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, old)
    start = buf.find(b"\x1b[200~")
    end = buf.find(b"\x1b[201~")
    text = buf[start + 6 : end] if start >= 0 and end > start else b""
    submits_inside = text.count(b"\r")
    _write(f"\r\nPASTE:{len(text)}:inner_cr={submits_inside}\r\n")
    out = os.environ.get("FAKE_PASTE_FILE")
    if out:
        with open(out, "wb") as f:
            f.write(text)


def run(step: str, extra: list[str]) -> None:
    verb, _, arg = step.partition(":")
    if verb == "out":
        _write(_text(arg) + "\n")
    elif verb == "raw":
        _write(_text(arg))
    elif verb == "soon":
        ahead, _, text = arg.partition(":")
        _write(_text(text).replace("<epoch>", str(int(time.time()) + int(ahead))) + "\n")
    elif verb == "split":
        for b in _text(arg).encode("utf-8"):
            _write(bytes([b]))
            time.sleep(0.002)
    elif verb == "sleep":
        time.sleep(float(arg))
    elif verb == "until":
        deadline = time.monotonic() + 60
        while not os.path.exists(arg):
            if time.monotonic() > deadline:
                _write(f"UNTIL: {arg} never appeared\n")
                os._exit(124)
            time.sleep(0.01)
    elif verb == "exit":
        sys.stdout.flush()
        os._exit(int(arg))
    elif verb == "wait":
        _sleep_forever()
    elif verb == "ignore-term":
        _ignore_term()
    elif verb == "child":
        _child()
    elif verb == "orphan":
        _orphan()
    elif verb == "env":
        _write(f"{arg}={os.environ.get(arg, '')}\n")
    elif verb == "args":
        _write("ARGS:" + json.dumps(extra) + "\n")
    elif verb == "bootstrap":
        with open(os.environ["AGENTD_BOOTSTRAP_FILE"], encoding="utf-8") as f:
            _write(f.read().replace("\n", "\r\n") + "\r\n")
    elif verb == "prompt":
        _write(_text(arg))
        line = sys.stdin.readline()
        _write(f"GOT:{line.rstrip()}\n")
    elif verb == "paste":
        _paste()
    elif verb == "spam":
        for i in range(int(arg)):
            _write(f"  tool output line {i}: reading src/module_{i % 97}.py ... ok\n")
    elif verb == "bigline":
        n = int(arg)
        block = b"x" * 65536
        while n > 0:
            _write(block[: min(n, len(block))])
            n -= len(block)
        _write(b"\n")
    elif verb == "record":
        rec = {
            "session": os.environ.get("AGENTD_SESSION"),
            "reason": os.environ.get("AGENTD_RESTART_REASON"),
            "unit": os.environ.get("AGENTD_UNIT"),
            "state_dir": os.environ.get("AGENTD_STATE_DIR"),
            "bootstrap_file": os.environ.get("AGENTD_BOOTSTRAP_FILE"),
            "socket": os.environ.get("AGENTD_SOCKET"),
            "cwd": os.getcwd(),
            "pid": os.getpid(),
            "args": extra,
        }
        bf = rec["bootstrap_file"]
        if bf and os.path.exists(bf):
            with open(bf, encoding="utf-8") as f:
                rec["bootstrap"] = f.read()
            rec["given_mode"] = oct(os.stat(bf).st_mode & 0o777)
        with open(arg, "a") as f:
            f.write(json.dumps(rec) + "\n")
    elif verb == "if-session":
        n, _, inner = arg.partition(":")
        if os.environ.get("AGENTD_SESSION") == n:
            run(inner, extra)
    elif verb == "replay":
        with open(arg, "rb") as f:
            data = f.read()
        for i in range(0, len(data), 512):
            _write(data[i : i + 512])
            time.sleep(0.001)
    elif verb == "binary":
        import random

        rng = random.Random(42)
        _write(bytes(rng.randrange(256) for _ in range(int(arg))) + b"\r\n")
    elif verb == "hook":
        import subprocess

        out = subprocess.run(
            [sys.executable, "-m", "agentd.cli.agentctl", "hook", arg],
            input=b'{"trigger": "auto"}',
            capture_output=True,
            check=False,
        )
        _write(b"HOOK:" + out.stdout.replace(b"\n", b"\r\n") + b"\r\n")
    elif verb == "compact":
        _compact(arg)
    elif verb == "ctl":
        import subprocess

        args = [a.replace("$AGENTD_UNIT", os.environ.get("AGENTD_UNIT", "")) for a in arg.split()]
        out = subprocess.run(
            [sys.executable, "-m", "agentd.cli.agentctl", *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        said = " ".join((out.stdout + out.stderr).split())
        _write(f"CTL:{out.returncode}:{said}\r\n")
    elif verb == "size":
        size = os.get_terminal_size(1)
        _write(f"SIZE:{size.columns}x{size.lines}\n")
    elif verb == "winch":
        signal.sigwait({signal.SIGWINCH})  # blocked since the start: none is missed
        size = os.get_terminal_size(1)
        _write(f"WINCH:{size.columns}x{size.lines}\n")
    elif verb == "state":
        with open(os.path.join(os.environ["AGENTD_STATE_DIR"], "state.json"), "w") as f:
            f.write(arg)
    else:
        raise SystemExit(f"fake_agent: unknown step {step!r}")


def main(argv: list[str]) -> None:
    steps, extra = argv, []
    if "--" in argv:
        i = argv.index("--")
        steps, extra = argv[:i], argv[i + 1 :]
    if any(step == "winch" or step.endswith(":winch") for step in steps):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGWINCH})  # pending until waited for
    for step in steps:
        run(step, extra)


if __name__ == "__main__":
    main(sys.argv[1:])
