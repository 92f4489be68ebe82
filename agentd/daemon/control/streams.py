"""The streaming replies of the control server: ``events -f`` and ``attach``.

Each stream is fed through a bounded queue by a listener (the event log's, or
the unit's terminal) and pumped to its client until the client leaves, falls
too far behind, does not read what was sent within ``WRITE_DEADLINE``
(``clients.drain``), or the daemon stops (``end_all``). The dashboard's live
events (``agentd.daemon.dashboard``) use the same feeds (``event_feed``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from agentd.daemon.control.commands import recent_events
from agentd.daemon.control.connections import drain
from agentd.daemon.control.protocol import encode, ok
from agentd.daemon.control.requests import EventsArgs, UnitArgs
from agentd.supervisor.api import Supervisor

STREAM_BACKLOG = 10_000  # events queued for a slow follower before it is dropped
_END = object()


class Streams:
    """The open streams of one control server, so that closing it can end them."""

    def __init__(self, sup: Supervisor) -> None:
        self.sup = sup
        self._queues: set[asyncio.Queue[Any]] = set()

    def end_all(self) -> bool:
        """Tell every open stream that the daemon stops; False when there is none."""
        for queue in list(self._queues):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(_END)
        return bool(self._queues)

    @contextlib.contextmanager
    def event_feed(self, unit: str | None, backlog: int = STREAM_BACKLOG) -> Iterator[Feed]:
        """A feed of the events emitted from now on (of ``unit`` only, when named); a
        client more than ``backlog`` events behind is dropped."""
        feed = Feed(backlog)

        def listener(event: dict[str, Any]) -> None:
            if unit is None or event.get("unit") == unit:
                feed.put(event)

        unsubscribe = self.sup.events.subscribe(listener)
        self._queues.add(feed.queue)
        try:
            yield feed
        finally:
            self._queues.discard(feed.queue)
            with contextlib.suppress(ValueError):  # already dropped
                unsubscribe()

    async def follow(
        self, args: EventsArgs, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Recent events, then each new one as it is emitted (see the protocol)."""
        with self.event_feed(args.unit) as feed:
            gone = asyncio.ensure_future(reader.read(1))  # the client closing ends the stream
            try:  # an unknown unit: UnknownUnit, an error reply
                recent = await asyncio.to_thread(recent_events, self.sup, args)  # off the loop
                writer.write(await asyncio.to_thread(ok, recent, stream=True))
                await drain(writer)
                await _pump(feed, gone, writer, lambda event: {"event": event})
            finally:
                gone.cancel()

    async def attach(
        self, args: UnitArgs, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Repaint the unit's current screen, then relay its terminal both ways until
        either side closes (see the protocol)."""
        status = self.sup.status([args.unit])[0]  # UnknownUnit: an error reply
        feed = Feed()
        unwatch = self.sup.watch_terminal(args.unit, feed.put)
        screen = self.sup.screen(args.unit)  # at once: the feed has all output after it
        self._queues.add(feed.queue)
        typing = asyncio.ensure_future(self._relay_input(args.unit, reader))
        try:
            writer.write(ok({k: status[k] for k in ("unit", "session", "state")}, stream=True))
            drawn = await asyncio.to_thread(screen.draw, redraw=True)
            writer.write(encode({"data": base64.b64encode(drawn.redraw).decode()}))
            await drain(writer)
            await _pump(
                feed, typing, writer, lambda data: {"data": base64.b64encode(data).decode()}
            )
        finally:
            typing.cancel()
            self._queues.discard(feed.queue)
            unwatch()

    async def _relay_input(self, unit: str, reader: asyncio.StreamReader) -> None:
        """Type what the attached client sends; returns when it closes its side."""
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            try:
                data = base64.b64decode(json.loads(line)["input"], validate=True)
            except (ValueError, KeyError, TypeError):
                continue  # not an input line: ignore it, keep the terminal
            if data:
                self.sup.type_input(unit, data)


class FeedEnded(Exception):
    """A feed ended: ``str()`` says why (the daemon stops, or the client was too slow)."""


class Feed:
    """A bounded queue from a listener to one streaming client: a client that
    falls behind is told so and dropped, never buffered without bound."""

    def __init__(self, backlog: int = STREAM_BACKLOG) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue(backlog)
        self.lagged = False

    def put(self, item: Any) -> None:
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            self.lagged = True

    async def next(self) -> Any:
        """The next item; FeedEnded when the daemon stops or the client fell behind."""
        item = await self.queue.get()
        if item is _END or self.lagged:
            raise FeedEnded("client too slow" if self.lagged else "daemon stopping")
        return item


async def _pump(
    feed: Feed,
    until: asyncio.Future[Any],
    writer: asyncio.StreamWriter,
    wrap: Callable[[Any], dict[str, Any]],
) -> None:
    """Send the feed's items until ``until`` completes (the client left) or it ends."""
    while True:
        item = asyncio.ensure_future(feed.next())
        await asyncio.wait([item, until], return_when=asyncio.FIRST_COMPLETED)
        if not item.done():
            item.cancel()
            return
        try:
            value = item.result()
        except FeedEnded as end:
            writer.write(encode({"end": str(end)}))
            return
        writer.write(encode(wrap(value)))
        await drain(writer)
