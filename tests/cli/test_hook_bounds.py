"""`agentctl hook pre-compact` never holds the CLI past its bound (issue 27): it waited
for stdin to close even for a manual compaction, hung for ever (deaf to SIGTERM) on a
socket that drips a byte a second, and closed stdin or deeply nested JSON gave an
internal error."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentd.cli.agentctl import hooks

HOOK = [sys.executable, "-m", "agentd.cli.agentctl", "hook", "pre-compact"]


def env(sock: Path | None) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("AGENTD_")}
    out["AGENTD_TEST_OWNER"] = os.environ.get("AGENTD_TEST_OWNER", "")
    if sock is not None:
        out.update(AGENTD_UNIT="u", AGENTD_SESSION="3", AGENTD_SOCKET=str(sock))
    return out


@pytest.fixture
def dripping(tmp_path: Path) -> Iterator[Path]:
    """A socket that accepts, then answers one byte a second, for ever."""
    path = tmp_path / "drip.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                while not stop.wait(1.0):
                    try:
                        conn.sendall(b" ")
                    except OSError:
                        break

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path
    stop.set()
    thread.join(5)
    server.close()


def test_a_manual_compaction_returns_before_stdin_closes() -> None:
    with subprocess.Popen(HOOK, stdin=subprocess.PIPE, env=env(Path("/nonexistent"))) as hook:
        assert hook.stdin is not None
        hook.stdin.write(b'{"hook_event_name": "PreCompact", "trigger": "manual"}')
        hook.stdin.flush()  # and the CLI keeps its end open
        try:
            assert hook.wait(timeout=hooks.STDIN_WAIT + 10) == 0
        finally:
            hook.kill()
            hook.stdin.close()


@pytest.mark.slow
def test_a_socket_that_drips_cannot_hold_it(dripping: Path) -> None:
    started = time.monotonic()
    with subprocess.Popen(HOOK, stdin=subprocess.PIPE, env=env(dripping)) as hook:
        assert hook.stdin is not None
        hook.stdin.write(b'{"trigger": "auto"}')
        hook.stdin.close()
        try:
            assert hook.wait(timeout=hooks.ASK_WAIT + 20) == 0
        finally:
            hook.kill()
    assert time.monotonic() - started < hooks.ASK_WAIT + 20


@pytest.mark.parametrize(
    "stdin",
    [
        b"[" * 200_000,  # nested deeper than the recursion limit
        b'{"a":' * 100_000,
        b"\xff\xfe not json",
        b"x" * (3 << 20),  # bigger than anything it reads
    ],
)
def test_bad_input_is_no_internal_error(stdin: bytes) -> None:
    done = subprocess.run(
        HOOK, input=stdin, env=env(Path("/nonexistent")), capture_output=True, timeout=60
    )
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr[-2000:]


def test_a_closed_stdin_is_no_internal_error() -> None:
    done = subprocess.run(
        HOOK,
        env=env(Path("/nonexistent")),
        capture_output=True,
        timeout=60,
        preexec_fn=lambda: os.close(0),
    )
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr[-2000:]
