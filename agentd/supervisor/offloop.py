"""Blocking work on the state dir, run beside the event loop and bounded in time.

The state dir belongs to the agent: it may hold huge files, hang on a network
file system or be locked by a writer for seconds. Reading it, rendering from
it and writing the bootstrap into it happen on a thread of their own, so
that the loop (every other unit, every request) never waits for them; the
caller waits at most ``timeout`` seconds and then goes on without the result
(``TimeoutError``). The threads are daemon threads: one that never returns
(a dead NFS server) cannot keep agentd from exiting.

Each piece of work has a thread to itself, as long as it runs; a thread that
finished waits (blocked, no wake-ups) for the next piece, so a respawn does
not pay for starting one (``Thread.start`` waits until the new thread runs:
milliseconds on a busy machine, twice per session). One that hangs keeps its
thread; the next piece of work gets another.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
Job = Callable[[], None]

_idle: list[queue.SimpleQueue[Job]] = []  # the inboxes of the threads waiting for work
_idle_lock = threading.Lock()


async def off_loop(work: Callable[[], T], timeout: float) -> T:
    """``work()`` on a thread of its own; its result, or TimeoutError after ``timeout`` s."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], Any]) -> None:
        if not done.done():  # the caller may have given up on it
            outcome()

    def run() -> None:
        try:
            result = work()
        except BaseException as exc:  # handed to the awaiting task
            error = exc
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(settle, lambda: done.set_exception(error))
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, lambda: done.set_result(result))

    _hand_over(run)
    try:
        return await asyncio.wait_for(asyncio.shield(done), timeout)
    except TimeoutError:
        done.cancel()  # a late result is dropped
        raise


def _hand_over(job: Job) -> None:
    """Give ``job`` to a waiting thread, or to a new one if none waits."""
    with _idle_lock:
        inbox = _idle.pop() if _idle else None
    if inbox is None:
        inbox = queue.SimpleQueue()
        threading.Thread(target=_serve, args=(inbox,), name="agentd-state", daemon=True).start()
    inbox.put(job)


def _serve(inbox: queue.SimpleQueue[Job]) -> None:
    while True:
        inbox.get()()
        with _idle_lock:
            _idle.append(inbox)
