"""The exec stub that ``agentd.session.launch`` starts: a program, not a module of the daemon.

Run as ``python -I -S execstub.py`` (no site, no environment: it starts in
about 10 ms and imports nothing but builtins), already the leader of its own
session with the pty's slave as its controlling terminal on fds 0-2. fd 3
brings its command, fd 4 takes its failure:

- it reads fd 3 to its end: ``marshal`` of ``(workdir, argv, environment)``
  as bytes. Nothing there (EOF at once) means agentd gave the launch up, or
  died: it exits 0 without running anything;
- it changes into the workdir, gives SIGPIPE and SIGXFSZ back their default
  action (Python ignores them, and an ignored signal stays ignored across
  exec), closes every fd but 0-2 and execs ``argv`` with that environment;
- what fails is written to fd 4 (close-on-exec: for agentd, its end without a
  word is a successful exec) as ``STEP:ERRNO:TEXT`` (STEP ``chdir`` or
  ``exec``), and it exits 127, as a shell does when it cannot run a command.

Until its command arrives it runs nothing but this file and forks nothing,
so agentd can move it into the session's cgroup meanwhile: the agent is in
its cgroup from its first instruction on.
"""

from __future__ import annotations

import marshal
import os

COMMAND_FD = 3
ERROR_FD = 4
FAILED = 127


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def _fail(step: str, exc: BaseException) -> None:
    number = exc.errno if isinstance(exc, OSError) and exc.errno is not None else 0
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    os.write(ERROR_FD, f"{step}:{number}:{text or type(exc).__name__}".encode(errors="replace"))


def main() -> None:
    os.set_inheritable(ERROR_FD, False)  # exec closes it: the sign that exec worked
    data = _read_all(COMMAND_FD)
    os.close(COMMAND_FD)
    if not data:
        os._exit(0)
    workdir, argv, env = marshal.loads(data)
    try:
        os.chdir(workdir)
    except BaseException as exc:
        _fail("chdir", exc)
        os._exit(FAILED)
    try:
        import _signal  # type: ignore[import-not-found]  # builtin; signal would import enum

        for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):
            _signal.signal(sig, _signal.SIG_DFL)
        os.closerange(ERROR_FD + 1, os.sysconf("SC_OPEN_MAX"))
        os.execve(argv[0], argv, env)
    except BaseException as exc:
        _fail("exec", exc)
    os._exit(FAILED)


if __name__ == "__main__":
    main()
