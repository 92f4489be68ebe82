"""The fork server of ``agentd.session.forkserver``: a program, not a module of the daemon.

Run once per agentd as ``python -I -S zygote.py`` (it imports nothing of agentd),
with fd 3 bringing requests and fd 4 taking replies, each a ``marshal``ed value
after its length (8 bytes, little-endian). For each request ``(cgroup, slave,
workdir, argv, environment)`` (paths and strings as bytes, ``cgroup`` None or
the cgroup's directory) it:

1. clones a child with ``clone3(CLONE_PARENT | CLONE_INTO_CGROUP)``: the
   child's parent is agentd (it reaps it, it gets its SIGCHLD), and it is born
   in the session's cgroup, where a move would wait for an RCU grace period;
   replies ``("pid", [PID, JOINED])`` (JOINED false: the cgroup could not be
   opened or joined, the child is outside it), or ``("error", "clone:...")``
   when it cannot clone at all;
2. lets the child go on at once: it leads a new session (``setsid``), opens
   the pty's slave as its controlling terminal and fds 0-2, changes into the
   workdir, gives SIGPIPE, SIGXFSZ and SIGINT their default actions back,
   closes every other fd and execs; replies ``("exec", "")`` once the exec
   worked, or ``("error", "STEP:ERRNO:TEXT")`` (STEP ``chdir`` or ``exec``)
   with what failed. (agentd leaves its unknown children unreaped while a
   request is under way: the agent may exit before agentd read its pid.)

Until its exec the child runs nothing but this file. The server is small
and single-threaded, so its clone is cheap and the child can run Python until
its exec. EOF on fd 3 (agentd ended) ends it.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # builtin; signal would import enum
import ctypes
import marshal
import os
import struct
from typing import Any

REQUESTS, REPLIES = 3, 4
CLONE_PARENT = 0x00008000
CLONE_INTO_CGROUP = 0x200000000
SYS_CLONE3 = 435  # the same on every architecture (a syscall of the unified table)
FAILED = 127
_ARGS = struct.Struct("=11Q")  # struct clone_args up to its cgroup field (CLONE_ARGS_SIZE_VER2)


def _read_exact(fd: int, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def receive() -> Any:
    (size,) = struct.unpack("<Q", _read_exact(REQUESTS, 8))
    return marshal.loads(_read_exact(REQUESTS, size))


def reply(value: Any) -> None:
    data = marshal.dumps(value)
    data = struct.pack("<Q", len(data)) + data
    while data:
        data = data[os.write(REPLIES, data) :]


def _error_text(step: str, exc: BaseException) -> str:
    number = exc.errno if isinstance(exc, OSError) and exc.errno is not None else 0
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"{step}:{number}:{text or type(exc).__name__}"


class Cloner:
    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)

    def clone(self, cgroup: bytes | None) -> int:
        """0 in the child, its pid in this process; OSError if it cannot be cloned."""
        flags, group_fd = CLONE_PARENT, 0
        if cgroup is not None:
            group_fd = os.open(cgroup, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            flags |= CLONE_INTO_CGROUP
        args = ctypes.create_string_buffer(
            _ARGS.pack(flags, 0, 0, 0, 0, 0, 0, 0, 0, 0, group_fd), _ARGS.size
        )
        pid: int = self._libc.syscall(ctypes.c_long(SYS_CLONE3), args, ctypes.c_size_t(_ARGS.size))
        number = ctypes.get_errno()
        if group_fd:
            os.close(group_fd)  # (in the child too: it closes everything anyway)
        if pid < 0:
            raise OSError(number, os.strerror(number))
        return pid


def child(slave: bytes, workdir: bytes, argv: list[bytes], env: dict[bytes, bytes]) -> None:
    """In the clone: wait to be let go, set up the session's terminal, exec. Never returns."""
    errors_w = ERRORS_W
    try:
        os.setsid()
        fd = os.open(slave, os.O_RDWR)  # no O_NOCTTY: the session's controlling terminal
        for target in (0, 1, 2):
            os.dup2(fd, target)
        if fd > 2:
            os.close(fd)
        try:
            os.chdir(workdir)
        except BaseException as exc:
            os.write(errors_w, _error_text("chdir", exc).encode(errors="replace"))
            os._exit(FAILED)
        # Python ignores SIGPIPE and SIGXFSZ, and this server SIGINT (agentd's Ctrl-C
        # is not its); an ignored signal stays ignored across exec.
        for sig in (_signal.SIGPIPE, _signal.SIGXFSZ, _signal.SIGINT):
            _signal.signal(sig, _signal.SIG_DFL)
        os.set_inheritable(errors_w, False)
        os.closerange(3, errors_w)
        os.closerange(errors_w + 1, os.sysconf("SC_OPEN_MAX"))
        os.execve(argv[0], argv, env)
    except BaseException as exc:
        os.write(errors_w, _error_text("exec", exc).encode(errors="replace"))
    os._exit(FAILED)


ERRORS_W = -1  # the error pipe of the child being cloned (set before each clone)


def _clone(cloner: Cloner, cgroup: bytes | None) -> tuple[int, bool]:
    """Clone into ``cgroup``, or outside it when it cannot be opened or joined (then
    the session goes without one); whether the child is in it."""
    if cgroup is not None:
        try:
            return cloner.clone(cgroup), True
        except OSError:
            pass
    return cloner.clone(None), False


def serve() -> None:
    global ERRORS_W
    cloner = Cloner()
    while True:
        try:
            cgroup, slave, workdir, argv, env = receive()
        except EOFError:
            os._exit(0)
        errors_r, errors_w = os.pipe()
        ERRORS_W = errors_w
        try:
            pid, joined = _clone(cloner, cgroup)
        except OSError as exc:
            os.close(errors_r)
            os.close(errors_w)
            reply(("error", _error_text("clone", exc)))
            continue
        if pid == 0:
            os.close(errors_r)
            os.close(REQUESTS)
            os.close(REPLIES)
            child(slave, workdir, argv, env)
        os.close(errors_w)
        reply(("pid", [pid, joined]))
        said = b""
        while chunk := os.read(errors_r, 4096):  # EOF: the exec worked, or it exited
            said += chunk
        os.close(errors_r)
        reply(("error", said.decode(errors="replace")) if said else ("exec", ""))


def main() -> None:
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # a Ctrl-C of agentd's terminal
    for fd in (REQUESTS, REPLIES):
        os.set_inheritable(fd, False)
    serve()


if __name__ == "__main__":
    main()
