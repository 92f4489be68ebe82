"""Blocking work on the state dir, run beside the event loop and bounded in time.

The state dir belongs to the agent: it may hold huge files, hang on a network
file system or be locked by a writer for seconds. Reading it, rendering from
it and writing the bootstrap into it happen on a thread of their own, so
that the loop (every other unit, every request) never waits for them; the
caller waits at most ``timeout`` seconds and then goes on without the result
(``TimeoutError``). The thread is a daemon thread: one that never returns
(a dead NFS server) cannot keep agentd from exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


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

    threading.Thread(target=run, name="agentd-state", daemon=True).start()
    try:
        return await asyncio.wait_for(asyncio.shield(done), timeout)
    except TimeoutError:
        done.cancel()  # a late result is dropped
        raise
