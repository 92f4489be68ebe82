"""The dashboard's pages and what they fetch (README, "Dashboard").

==============================================  =========================================
GET  /                                          every unit: state, session, uptime,
                                                restarts, last reason, budget used today
GET  /units/UNIT[?span=1h|6h|1d|1w|all]          one unit: its timeline, current screen,
                                                sessions and their bootstraps, events
GET  /units/UNIT/timeline.svg[?span=...]        the session timeline alone
GET  /units/UNIT/screen                         the current screen (``agentctl screen --json``)
GET  /units/UNIT/bootstraps/N, .../next         the bootstrap session N was given; the next's
GET  /events, /units/UNIT/events                new events as server-sent events
POST /units/UNIT/start|stop|restart             the ``agentctl`` verb; then back to the page
==============================================  =========================================

Every answer comes from the control server's own handlers
(``agentd.daemon.control.commands``) or the ``Supervisor`` methods they call: the
pages show what ``agentctl`` would say. Live events use the socket's bounded
feeds (``agentd.daemon.control.streams``): a browser that falls behind is dropped
(its ``EventSource`` reconnects), and at most ``MAX_STREAMS`` are open.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable
from importlib import resources
from typing import Any

from aiohttp import web
from jinja2 import Environment, PackageLoader, select_autoescape

from agentd.daemon.control.commands import HANDLERS, Context
from agentd.daemon.control.protocol import Code, check_unit_name
from agentd.daemon.control.requests import (
    EventsArgs,
    ProtocolError,
    RestartArgs,
    StatusArgs,
    TailArgs,
    UnitArgs,
    UnitsArgs,
)
from agentd.daemon.control.streams import FeedEnded, Streams
from agentd.daemon.dashboard.timeline import COLOURS, DEFAULT_SPAN, SPANS, layout
from agentd.daemon.dashboard.views import summary, when
from agentd.errors import AgentdError
from agentd.supervisor.budget import usage_today
from agentd.supervisor.unitrefs import UnknownUnit
from agentd.times import span

MAX_STREAMS = 64  # live event streams open at once, over all browsers
RECENT_EVENTS = 50
SHOWN_SESSIONS = 200  # rows in a unit page's sessions table (the timeline shows them all)
ACTIONS = ("start", "stop", "restart")
STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".png": "image/png"}


class Pages:
    """The request handlers, over the daemon's command context."""

    def __init__(self, ctx: Context, csrf: str, host: str) -> None:
        self.ctx = ctx
        self.csrf = csrf
        self.streams = Streams(ctx.sup)
        self._open_streams = 0
        self.templates = Environment(
            loader=PackageLoader("agentd.daemon.dashboard", "templates"),
            autoescape=select_autoescape(["html", "svg"]),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.globals.update(csrf=csrf, colours=COLOURS, spans=list(SPANS), host=host)
        self.templates.filters.update(span=span, when=when)
        folder = resources.files("agentd.daemon.dashboard") / "static"
        self.static = {
            f.name: f.read_bytes() for f in folder.iterdir() if f.name.endswith(tuple(STATIC_TYPES))
        }

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/", self.index),
            web.get("/events", self.events),
            web.get("/static/{name}", self.static_file),
            web.get("/units/{unit}", self.unit),
            web.get("/units/{unit}/timeline.svg", self.timeline),
            web.get("/units/{unit}/screen", self.screen),
            web.get("/units/{unit}/bootstraps/{session}", self.bootstrap),
            web.get("/units/{unit}/events", self.events),
            web.post("/units/{unit}/{action}", self.act),
        ]

    # -- pages ------------------------------------------------------------------------------
    async def index(self, request: web.Request) -> web.Response:
        now = time.time()
        statuses = await HANDLERS["status"](self.ctx, StatusArgs())
        units = [self._summary(s, now) for s in statuses]
        return self._page("units.html", units=units, units_dir=self.ctx.sup.paths.units)

    async def unit(self, request: web.Request) -> web.Response:
        name, span_name = _unit(request), _span(request)
        now = time.time()
        status = await self._status(name)
        rows = await HANDLERS["history"](self.ctx, TailArgs(unit=name, lines=100_000))
        screen = await HANDLERS["screen"](self.ctx, UnitArgs(unit=name))
        recent = await HANDLERS["events"](self.ctx, EventsArgs(unit=name, lines=RECENT_EVENTS))
        shown = rows[::-1][:SHOWN_SESSIONS]
        for row in shown:
            row["kept"] = self.ctx.sup.given_bootstrap(name, row["session"]).is_file()
        return self._page(
            "unit.html",
            u=self._summary(status, now),
            sessions=shown,
            hidden=len(rows) - len(shown),
            screen=screen,
            recent=recent,
            timeline=self._timeline(status, rows, now, span_name),
        )

    async def timeline(self, request: web.Request) -> web.Response:
        name, span_name = _unit(request), _span(request)
        status = await self._status(name)
        rows = await HANDLERS["history"](self.ctx, TailArgs(unit=name, lines=100_000))
        svg = self.templates.get_template("timeline.svg").render(
            u=status, timeline=self._timeline(status, rows, time.time(), span_name)
        )
        return web.Response(text=svg, content_type="image/svg+xml")

    async def screen(self, request: web.Request) -> web.Response:
        return web.json_response(
            await _known(HANDLERS["screen"](self.ctx, UnitArgs(unit=_unit(request))))
        )

    async def bootstrap(self, request: web.Request) -> web.Response:
        name, which = _unit(request), request.match_info["session"]
        if which == "next":
            preview = await _known(HANDLERS["bootstrap"](self.ctx, UnitArgs(unit=name)))
            return web.Response(text=preview["text"])
        if not which.isdigit():
            raise web.HTTPNotFound(text="a session number, or next")
        try:
            text = self.ctx.sup.given_bootstrap(name, int(which)).read_text(
                encoding="utf-8", errors="replace"
            )
        except UnknownUnit:
            raise web.HTTPNotFound(text=f"unknown unit: {name}") from None
        except OSError:
            raise web.HTTPNotFound(
                text=f"{name}: no bootstrap kept for session {which} (never given, or pruned)"
            ) from None
        return web.Response(text=text)

    async def act(self, request: web.Request) -> web.Response:
        """Start, stop or restart the unit (the guard checked the CSRF token); back to its page."""
        name, action = _unit(request), request.match_info["action"]
        if action not in ACTIONS:
            raise web.HTTPNotFound(text=f"no such action: {action}")
        args = RestartArgs(units=[name]) if action == "restart" else UnitsArgs(units=[name])
        try:  # shielded: a browser that leaves must not cancel a stop half-way
            await _known(asyncio.shield(HANDLERS[action](self.ctx, args)))
        except (ProtocolError, AgentdError) as exc:
            raise web.HTTPConflict(text=f"{action} {name}: {exc}") from None
        raise web.HTTPSeeOther(f"/units/{name}")

    async def events(self, request: web.Request) -> web.StreamResponse:
        """New events (of the unit, on its page) as server-sent events, until the
        browser leaves, falls too far behind or the daemon stops (``event: end``)."""
        name = _unit(request) if "unit" in request.match_info else None
        if name is not None:
            await self._status(name)
        if self._open_streams >= MAX_STREAMS:
            raise web.HTTPServiceUnavailable(text=f"over {MAX_STREAMS} live streams are open")
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
        )
        self._open_streams += 1
        try:
            with self.streams.event_feed(name) as feed:
                await response.prepare(request)
                await response.write(b"retry: 3000\n\n")
                while True:
                    try:
                        event = await feed.next()
                    except FeedEnded as end:
                        await response.write(
                            f"event: end\ndata: {json.dumps(str(end))}\n\n".encode()
                        )
                        break
                    await response.write(f"data: {json.dumps(event, default=str)}\n\n".encode())
        except ConnectionError:
            pass  # the browser left
        finally:
            self._open_streams -= 1
        return response

    async def static_file(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in self.static:
            raise web.HTTPNotFound()
        kind = STATIC_TYPES[name[name.rfind(".") :]]
        return web.Response(
            body=self.static[name], content_type=kind, headers={"Cache-Control": "no-cache"}
        )

    # -- helpers ----------------------------------------------------------------------------
    def _page(self, template: str, **values: Any) -> web.Response:
        html = self.templates.get_template(template).render(**values)
        return web.Response(
            text=html, content_type="text/html", headers={"Cache-Control": "no-store"}
        )

    async def _status(self, name: str) -> dict[str, Any]:
        statuses = await _known(HANDLERS["status"](self.ctx, StatusArgs(units=[name])))
        return dict(statuses[0])

    def _summary(self, status: dict[str, Any], now: float) -> dict[str, Any]:
        name = status["unit"]
        usage = usage_today(self.ctx.sup.history(name), now)
        return summary(status, usage, self.ctx.sup.definition(name).budget, now)

    def _timeline(
        self, status: dict[str, Any], rows: list[dict[str, Any]], now: float, span_name: str
    ) -> Any:
        running = status["session"] if status.get("pid") is not None else None
        return layout(
            rows,
            now,
            span_name,
            running=running,
            paused=status if status["state"] == "paused" else None,
        )


def _unit(request: web.Request) -> str:
    name = request.match_info["unit"]
    try:
        return check_unit_name(name)
    except ValueError as exc:
        raise web.HTTPNotFound(text=str(exc)) from None


def _span(request: web.Request) -> str:
    value = request.query.get("span", DEFAULT_SPAN)
    if value not in SPANS:
        raise web.HTTPBadRequest(text=f"span must be one of {', '.join(SPANS)}")
    return value


async def _known(call: Awaitable[Any]) -> Any:
    """The handler's result; an unknown unit is a 404."""
    try:
        return await call
    except UnknownUnit as exc:
        raise web.HTTPNotFound(text=f"unknown unit: {exc.args[0]}") from None
    except ProtocolError as exc:
        if exc.code != Code.UNKNOWN_UNIT:
            raise
        raise web.HTTPNotFound(text=str(exc)) from None
