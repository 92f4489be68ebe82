"""One session: the agent's pty read and written on the event loop.

A ``Session`` drains the pty continuously (so the agent never blocks on a
full terminal), feeds the transcript, its screen ring and the line matcher, types injected
text when the pty has room, and detects the leader's exit from a pidfd (or
SIGCHLD where there is none) — never from pty EOF, which a grandchild holding
the slave can postpone forever. Ending the session ends its whole process
tree (``agentd.process.ending``). What the hits *mean* is decided by the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from agentd.process.ending import EndResult, end_session_tree, kill_now
from agentd.process.tree import find_session_processes
from agentd.session.child import Child
from agentd.session.screen import ScreenRing
from agentd.session.transcript import Transcript
from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Hit

# Per readable callback at most this many reads, so one chatty session cannot
# starve the others on the loop.
READS_PER_WAKEUP = 16
# After the leader exits, read what is still buffered (bounded: a grandchild
# may keep writing).
FINAL_DRAIN_BYTES = 4 * 1024 * 1024
# Once the tree is gone, the pty reports EOF after the kernel has handed over
# the last output (it flushes the slave->master buffer asynchronously, so a
# read right after the exit can say EAGAIN with output still on the way).
EOF_WAIT = 2.0
# Between typed text and its submit key: TUIs take keys that arrive with a
# paste, or in one fast burst, as part of it (an Enter sent at once is lost).
SUBMIT_PAUSE = 0.3
# A synchronized update (a frame) the program opened and did not end within this
# long is shown anyway, as terminals do (their timeouts are 0.15-1 s): a stuck
# frame must not hide a sentinel.
FRAME_TIMEOUT = 1.0
BRACKETED_ON = b"\x1b[?2004h"
BRACKETED_OFF = b"\x1b[?2004l"
_PASTE_MODE = BRACKETED_ON[:-1]  # either of them

OutputHandler = Callable[[list[Hit]], None]


class Session:
    def __init__(
        self,
        *,
        number: int,
        child: Child,
        marker: str,
        matcher: LineMatcher,
        transcript: Transcript,
        on_output: OutputHandler,
        clock: Callable[[], float] = time.monotonic,
        on_raw: Callable[[bytes], None] | None = None,
        screen: ScreenRing | None = None,
        cgroup: Path | None = None,
    ) -> None:
        self.number = number
        self.cgroup = cgroup  # the session's own (``agentd.process.cgroup``), if it has one
        self.child = child
        self.pid = child.pid
        self.marker = marker
        self.matcher = matcher
        self.transcript = transcript
        self._on_output = on_output
        self._on_raw = on_raw  # the raw bytes, for `agentctl attach`
        self.screen = screen if screen is not None else ScreenRing(120, 40, number)
        self.clock = clock
        self.started_at = clock()
        self.last_output_at = self.started_at
        self.bytes_out = 0
        self.bracketed_paste = False
        self._tail = b""  # last bytes of output, to see a mode switch split across reads
        self._pending_write = bytearray()
        self._writing = False
        self._after_write: list[tuple[float, bytes]] = []  # keys to type once it is written
        self._timers: list[asyncio.TimerHandle] = []
        self._frame_timer: asyncio.TimerHandle | None = None
        self._reading = False
        self._pidfd: int | None = None
        self._loop = asyncio.get_running_loop()
        self.exited: asyncio.Future[None] = self._loop.create_future()
        self._eof = asyncio.Event()

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> None:
        self._loop.add_reader(self.child.fd, self._on_readable)
        self._reading = True
        try:
            self._pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            self._pidfd = None  # no pidfd here: the supervisor's SIGCHLD calls check_exit()
        if self._pidfd is not None:
            self._loop.add_reader(self._pidfd, self.check_exit)
        self.check_exit()  # it may have exited before we watched

    def check_exit(self) -> None:
        """Reap the leader if it exited; resolves ``exited`` once."""
        if self.exited.done() or not self.child.poll_exit():
            return
        self._close_pidfd()
        self._drain(FINAL_DRAIN_BYTES)
        self.exited.set_result(None)

    async def end(
        self, sig: int, grace: float, on_signal: Callable[[int, list[int]], None] | None = None
    ) -> EndResult:
        """Stop every process of the session (``sig``, then SIGKILL after ``grace``)."""
        result = await end_session_tree(
            leader=self._leader,
            marker=self.marker,
            sid=self.pid,
            sig=sig,
            grace=grace,
            on_signal=on_signal,
            cgroup=self.cgroup,
        )
        # The leader is dead now; its pidfd callback may not have run yet.
        deadline = self.clock() + 2.0
        while not self.exited.done() and self.clock() < deadline:
            self.check_exit()
            if not self.exited.done():
                await asyncio.sleep(0.01)
        # Read the output still in flight: nothing holds the slave any more.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._eof.wait(), EOF_WAIT)
        return result

    def kill_now(self) -> list[int]:
        """SIGKILL every process of the session at once (a second Ctrl-C); their pids."""
        return kill_now(leader=self._leader, marker=self.marker, sid=self.pid, cgroup=self.cgroup)

    def processes(self) -> list[int]:
        """The pids of the session's live processes now (a scan of the process table:
        slow, off the loop), as ``end`` would find them."""
        found = find_session_processes(
            leader=self._leader, marker=self.marker, sid=self.pid, cgroup=self.cgroup
        )
        return [proc.pid for proc in found]

    @property
    def _leader(self) -> int | None:
        """The leader's pid while it may be signalled: once reaped, it may be reused."""
        return None if self.child.reaped else self.pid

    @property
    def eof(self) -> bool:
        return self._eof.is_set()

    def close(self, *, keep_pty: bool = False) -> None:
        """Release the pty and watchers; call after ``end``. ``keep_pty``: the pty's
        master stays open, for the caller to close (``child.close``) off the way to the
        next session: the kernel's close of a pty waits for its buffer's flush work
        (a kernel thread: milliseconds on a busy machine)."""
        self._close_pidfd()
        if self._reading:
            self._drain(FINAL_DRAIN_BYTES)
            self._loop.remove_reader(self.child.fd)
            self._reading = False
        if self._writing:
            self._loop.remove_writer(self.child.fd)
            self._writing = False
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        if self._frame_timer is not None:
            self._frame_timer.cancel()
            self._frame_timer = None
        self._after_write.clear()
        if self.child.reaped and not keep_pty:
            self.child.close()
        hits = self.matcher.flush()
        if hits:
            self._on_output(hits)

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None

    # -- output --------------------------------------------------------------
    def _on_readable(self) -> None:
        batch: list[bytes] = []
        for _ in range(READS_PER_WAKEUP):
            if not self._read_once(batch):
                break
        self._match(batch)
        hits = self.matcher.check_partial()
        if hits:
            self._on_output(hits)
        if self.matcher.in_frame and self._frame_timer is None:
            self._frame_timer = self._loop.call_later(
                FRAME_TIMEOUT, self._frame_timeout, self.matcher.frames
            )

    def _frame_timeout(self, frame: int) -> None:
        """Frame number ``frame`` may still be open: if so, show it (end it)."""
        self._frame_timer = None
        if not self.matcher.in_frame:
            return
        if self.matcher.frames != frame:  # another one: give it its own time
            self._frame_timer = self._loop.call_later(
                FRAME_TIMEOUT, self._frame_timeout, self.matcher.frames
            )
            return
        hits = self.matcher.end_frame()
        if hits:
            self._on_output(hits)

    def _read_once(self, batch: list[bytes]) -> bool:
        data = self.child.read()
        if data is None:
            return False
        if not data:
            self._on_eof()
            return False
        batch.append(data)
        return True

    def _drain(self, limit: int) -> None:
        got = 0
        batch: list[bytes] = []
        while self._reading and got < limit:
            data = self.child.read()
            if not data:
                if data == b"":
                    self._on_eof()
                break
            got += len(data)
            batch.append(data)
            if len(batch) >= READS_PER_WAKEUP:
                self._match(batch)
        self._match(batch)

    def _on_eof(self) -> None:
        # Every slave fd is closed. Not an exit: the pidfd tells that.
        self._eof.set()
        if self._reading:
            self._loop.remove_reader(self.child.fd)
            self._reading = False

    def _match(self, batch: list[bytes]) -> None:
        """Take what was read since as one: the screen ring, the watchers, the
        matcher, then the transcript. One pass of each a wakeup, not one a read
        (each has a fixed cost; the hits are acted on after the wakeup either
        way, as nothing else runs in between). Matched first: a transcript that
        cannot be written (a full disk) loses nothing of what the matcher sees."""
        if not batch:
            return
        data = b"".join(batch) if len(batch) > 1 else batch[0]
        self.bytes_out += len(data)
        self.last_output_at = self.clock()
        self._track_paste_mode(data)
        self.screen.feed(data)
        if self._on_raw is not None:
            self._on_raw(data)
        hits = self.matcher.feed(data)
        self.transcript.write_reads(batch, data)  # never raises: a failed write is counted
        batch.clear()
        self._on_output(hits)

    def _track_paste_mode(self, data: bytes) -> None:
        keep = len(BRACKETED_ON) - 1
        tail = self._tail
        if b"\x1b" not in data and b"\x1b" not in tail:
            return
        # Forward searches first (C's fast one; rfind is the slow kind), and no copy
        # of the read: coloured output has escapes everywhere, the mode switch is rare.
        if _PASTE_MODE in data or (tail and _PASTE_MODE in tail + data[:keep]):
            window = tail + data
            on, off = window.rfind(BRACKETED_ON), window.rfind(BRACKETED_OFF)
            if on != off:  # both -1 means neither appears
                self.bracketed_paste = on > off
        self._tail = (tail + data)[-keep:] if len(data) < keep else data[-keep:]

    def resize(self, cols: int, rows: int) -> None:
        """The terminal is ``cols`` x ``rows`` now: what the agent wrote at the old
        size is read first; then the screen models and the pty follow."""
        if (cols, rows) == (self.screen.cols, self.screen.rows):
            return  # the pty sends no SIGWINCH either: nothing is drawn again
        if self._reading:
            self._on_readable()
        self._on_output(self.matcher.resize(cols, rows))
        self.screen.resize(cols, rows)
        self.child.resize(cols, rows)

    # -- input ---------------------------------------------------------------
    def type(self, data: bytes) -> None:
        """Queue ``data`` for the agent's terminal; written as the pty takes it."""
        self._pending_write += data
        if not self._writing:
            self._loop.add_writer(self.child.fd, self._on_writable)
            self._writing = True

    def submit(self, text: bytes, key: bytes, *, pause: float = SUBMIT_PAUSE) -> None:
        """Type ``text``, then ``key`` (Enter) ``pause`` seconds after the text is
        written: a TUI would take an Enter that comes with the text as part of it."""
        self.type(text)
        self._after_write.append((pause, key))

    def _on_writable(self) -> None:
        n = self.child.write(bytes(self._pending_write[:65536]))
        if n < 0:  # the terminal is gone
            self._pending_write.clear()
            self._after_write.clear()
        elif n:
            del self._pending_write[:n]
        if not self._pending_write:
            with contextlib.suppress(ValueError, OSError):
                self._loop.remove_writer(self.child.fd)
            self._writing = False
            for pause, key in self._after_write:
                self._timers.append(self._loop.call_later(pause, self.type, key))
            self._after_write.clear()

    @property
    def uptime(self) -> float:
        return self.clock() - self.started_at

    @property
    def stopped_by_signal(self) -> bool:
        """The agent is stopped (SIGSTOP, SIGTSTP, a debugger): alive but doing nothing
        until SIGCONT. Its process state, read when asked."""
        try:
            return psutil.Process(self.pid).status() in (
                psutil.STATUS_STOPPED,
                psutil.STATUS_TRACING_STOP,
            )
        except psutil.Error:
            return False
