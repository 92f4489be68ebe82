"""The streaming replies of the control server: ``events -f`` and ``attach`` (SPEC 9)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agentd.daemon.protocol import encode

STREAM_BACKLOG = 10_000  # events queued for a slow follower before it is dropped
_END = object()


class _Feed:
    """A bounded queue from a listener to one streaming client: a client that
    falls behind is told so and dropped, never buffered without bound."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue(STREAM_BACKLOG)
        self.lagged = False

    def put(self, item: Any) -> None:
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            self.lagged = True


async def _pump(feed: _Feed, until: asyncio.Future[Any], writer: asyncio.StreamWriter,
                wrap: Callable[[Any], dict[str, Any]]) -> None:
    """Send the feed's items until ``until`` completes (the client left) or it ends."""
    while True:
        item = asyncio.ensure_future(feed.queue.get())
        await asyncio.wait([item, until], return_when=asyncio.FIRST_COMPLETED)
        if not item.done():
            item.cancel()
            return
        if item.result() is _END or feed.lagged:
            writer.write(encode({"end": "client too slow" if feed.lagged else "daemon stopping"}))
            return
        writer.write(encode(wrap(item.result())))
        await writer.drain()
