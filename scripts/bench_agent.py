"""The fake agent of ``scripts/bench.py``: times what a supervisor does to it.

usage: python -I -S bench_agent.py MODE key=value...

It runs the same way under agentd (in a pty), under the seeds' shell loop
(output appended to a file) and under a bare ``while`` loop, and appends one
line per event to ``rec=FILE``: ``EVENT SESSION MONOTONIC [EXTRA]``.
CLOCK_MONOTONIC is one clock for every process on the machine, so the bench
subtracts times recorded here from times recorded by other processes.

The session number is counted in ``count=FILE`` (incremented at each start),
so every loop numbers sessions the same way, with or without AGENTD_SESSION.

Modes:
  sentinel plan=B1,B2,...  session i writes Bi lines of tool output, then the
      sentinel line, and waits for SIGTERM (``sentinel``, ``term`` events);
      after ``settle=S`` seconds of quiet first. No SIGTERM within
      ``timeout=S``: a ``miss`` event. Either way it exits 42; after the plan, 0.
  respawn n=N  exits 42 at once (``start``, ``exit`` events) until session N
      exits 0. ``hold=I,J`` sessions write ``hold`` and wait for ``DIR/go-I``
      (``dir=DIR``) first, so the bench can sample the supervisor then.
  flood bytes=N  writes ``ready``, waits for ``dir/go``, writes N bytes of
      tool output (``begin``, ``end``), waits for ``dir/quit``, exits 0.
  idle  writes ``start`` and waits for SIGTERM.
"""

import time

T0 = time.monotonic()  # the first instruction: respawn times end here

import os  # noqa: E402  (after T0 on purpose: imports are part of the next session)
import signal  # noqa: E402
import sys  # noqa: E402

SENTINEL = "\u273b Compacting conversation\u2026 (esc to interrupt)\n".encode()


def _args(argv):
    return dict(a.split("=", 1) for a in argv if "=" in a)


def _record(path, event, session, at, extra=""):
    line = f"{event} {session} {at:.9f} {extra}".rstrip() + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _next_session(path):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        n = int(os.read(fd, 32) or b"0") + 1
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, str(n).encode())
    finally:
        os.close(fd)
    return n


def _write(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def tool_output(lines, start=0):
    """Lines that look like an agent's tool output: paths, some colour, some Unicode."""
    out = []
    for i in range(start, start + lines):
        if i % 7 == 0:
            ok = "\x1b[32m\u2713\x1b[0m"
            out.append(f"  {ok} src/module_{i % 97}.py:{i % 400} passed ({i} ms)\n")
        elif i % 11 == 0:
            out.append(f"\x1b[2K\r  \u280b running tests {i}/{lines}\n")
        else:
            out.append(f"  tool output line {i}: reading src/module_{i % 97}.py ... ok\n")
    return "".join(out).encode()


def _wait_file(path, poll=0.002):
    while not os.path.exists(path):
        time.sleep(poll)


def _wait_term(timeout):
    """Block until SIGTERM (True, at its arrival time) or ``timeout`` (False)."""
    if timeout is None:
        signal.sigwait([signal.SIGTERM])
        return True, time.monotonic()
    got = signal.sigtimedwait([signal.SIGTERM], timeout)
    return got is not None, time.monotonic()


def sentinel(opts, session):
    plan = [int(b) for b in opts["plan"].split(",")]
    if session > len(plan):
        os._exit(0)
    rec = opts["rec"]
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])  # sigtimedwait takes it
    time.sleep(float(opts.get("settle", "0.3")))
    burst = plan[session - 1]
    block = tool_output(1000)
    for i in range(0, burst, 1000):
        _write(block if burst - i >= 1000 else tool_output(burst - i))
    at = time.monotonic()
    _write(SENTINEL)
    _record(rec, "sentinel", session, at, str(burst))
    got, when = _wait_term(float(opts.get("timeout", "10")))
    _record(rec, "term" if got else "miss", session, when, str(burst))
    os._exit(42)


def respawn(opts, session):
    rec = opts["rec"]
    _record(rec, "start", session, T0)
    if str(session) in opts.get("hold", "").split(","):
        _record(rec, "hold", session, time.monotonic())
        _wait_file(os.path.join(opts["dir"], f"go-{session}"))
    if session >= int(opts["n"]):
        os._exit(0)
    _record(rec, "exit", session, time.monotonic())
    os._exit(42)


def flood(opts, session):
    rec, total = opts["rec"], int(opts["bytes"])
    block = tool_output(1000)
    _record(rec, "ready", session, time.monotonic())
    _wait_file(os.path.join(opts["dir"], "go"))
    _record(rec, "begin", session, time.monotonic())
    sent = 0
    while sent < total:
        chunk = block[: total - sent]
        _write(chunk)
        sent += len(chunk)
    _record(rec, "end", session, time.monotonic(), str(sent))
    _wait_file(os.path.join(opts["dir"], "quit"))
    os._exit(0)


def idle(opts, session):
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
    _record(opts["rec"], "start", session, T0, str(os.getpid()))
    _wait_term(None)
    os._exit(0)


def main():
    mode, opts = sys.argv[1], _args(sys.argv[2:])
    session = _next_session(opts["count"])
    {"sentinel": sentinel, "respawn": respawn, "flood": flood, "idle": idle}[mode](opts, session)


if __name__ == "__main__":
    main()
