"""The dashboard's HTTP server, on the daemon's own loop (aiohttp).

aiohttp's ``AppRunner`` serves the app as tasks of the running loop: no
thread per client, no second loop, no signal handlers of its own (the daemon
owns SIGTERM, SIGINT and SIGHUP). Its port is opened here, behind the
``Gate``: connections are capped with the control socket's, per uid and in
all, and one without a complete request within a few seconds is closed.
With no browser connected it keeps no timer: the daemon's idle figures stay
as they are.

Every request passes ``guard``: a peer that is not loopback gets 403 unless
``--http-allow-remote`` was given; a ``Host`` that is not this dashboard's
gets 421 (DNS rebinding); a request without the token
(``Authorization: Bearer TOKEN``, ``?token=TOKEN``, which sets a session
cookie, or that cookie) gets 401; ``/login?code=`` lets a one-time code in
(``agentctl dashboard --open``); a POST without the pages' CSRF token gets
403. A handler's exception becomes a 500 and a ``control.error`` event, as on
the control socket. Every response forbids framing, referrers and anything
not served from here (Content-Security-Policy).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from http.cookies import SimpleCookie

from aiohttp import web
from aiohttp.typedefs import Middleware

from agentd import events as ev
from agentd.daemon.control.commands import Context
from agentd.daemon.control.connections import REQUEST_IDLE, Clients
from agentd.daemon.control.server import CLOSE_GRACE, LISTEN_BACKLOG
from agentd.daemon.dashboard.access import (
    COOKIE_DAYS,
    LOGIN_SECONDS,
    Bind,
    BindRefused,
    csrf_token,
    host_allowed,
    load_token,
    login_nonce,
    peer_allowed,
    same_token,
    session_cookie,
    valid_session,
)
from agentd.daemon.dashboard.gate import Gate
from agentd.daemon.dashboard.pages import Pages

MAX_BODY = 64 * 1024  # the forms post a token and nothing else
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
LOGIN = "/login"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Dashboard:
    """``agentd serve --http``: start it on the daemon's loop, close it before the daemon stops."""

    def __init__(self, ctx: Context, bind: Bind, clients: Clients | None = None) -> None:
        self.ctx = ctx
        self.bind = bind
        self.token = load_token(ctx.sup.paths.run)
        self.url = bind.url()
        self.port = bind.port
        self._cookie = f"agentd-{bind.port}"
        self._pages = Pages(ctx, csrf_token(self.token), host=self.url)
        self._clients = clients or Clients(ctx.sup.events.emit)
        self._runner: web.AppRunner | None = None
        self._listening: asyncio.Server | None = None
        self._gate: Gate | None = None
        self._logins: dict[str, float] = {}  # one-time codes let in, until they expire

    @property
    def link(self) -> str:
        """The URL with the token: opening it once sets the session cookie."""
        return f"{self.url}?token={self.token}"

    async def start(self) -> str:
        """Listen; the base URL (with the port the OS chose for port 0)."""
        app = web.Application(middlewares=[self._guard()], client_max_size=MAX_BODY)
        app.add_routes([web.get(LOGIN, self._login), *self._pages.routes()])
        app.on_response_prepare.append(self._headers)
        # handler_cancellation: a browser that leaves ends its live stream at once
        self._runner = web.AppRunner(
            app,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=CLOSE_GRACE,
            keepalive_timeout=REQUEST_IDLE,
        )
        await self._runner.setup()
        assert self._runner.server is not None
        self._gate = Gate(self._clients, self._runner.server)
        try:
            self._listening = await asyncio.get_running_loop().create_server(
                self._gate.factory(), self.bind.host or None, self.bind.port, backlog=LISTEN_BACKLOG
            )
        except OSError as exc:
            await self._runner.cleanup()
            self._runner = None
            raise BindRefused(
                f"--http: cannot listen on {self.bind.url()}: {exc.strerror or exc}"
            ) from None
        self.port = int(self._listening.sockets[0].getsockname()[1])
        self.url = self.bind.url(self.port)
        self._cookie = f"agentd-{self.port}"  # cookies ignore ports: one per dashboard
        self._pages.templates.globals["host"] = self.url
        return self.url

    async def close(self) -> None:
        """End the live streams, stop listening, let the answers under way finish."""
        self._pages.streams.end_all()
        if self._listening is not None:
            self._listening.close()
            self._listening = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._gate is not None:
            self._gate.close()

    # -- every request -------------------------------------------------------------------
    def _guard(self) -> Middleware:
        @web.middleware
        async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
            gate = self._gate
            if gate is not None:
                gate.begin(request)
            try:
                return await self._checked(request, handler)
            finally:
                if gate is not None:
                    gate.end(request)

        return guard

    async def _checked(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not peer_allowed(request.remote, allow_remote=self.bind.allow_remote):
            raise web.HTTPForbidden(
                text="agentd's dashboard serves this machine only "
                "(agentd serve --http-allow-remote serves others)"
            )
        if not host_allowed(request.headers.get("Host"), self.bind, self.port):
            raise web.HTTPMisdirectedRequest(
                text="agentd's dashboard answers to its own address only (127.0.0.1, "
                "localhost or the address it listens on): this request names another host"
            )
        if request.path == LOGIN:
            return await handler(request)  # the one-time code is the credential
        if not self._authorised(request):
            raise web.HTTPUnauthorized(
                text="agentd's dashboard needs its token: open the link `agentctl "
                "dashboard` prints, or send Authorization: Bearer TOKEN (the token "
                "is in run/http-token)",
                headers={"WWW-Authenticate": 'Bearer realm="agentd"'},
            )
        if request.method == "POST":
            form = await request.post()
            given = form.get("csrf") or request.headers.get("X-CSRF-Token")
            if not isinstance(given, str) or not same_token(given, self._pages.csrf):
                raise web.HTTPForbidden(text="missing or wrong CSRF token: reload the page")
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except Exception as exc:  # a bug in a page must not take the daemon down
            self.ctx.sup.events.emit(
                ev.CONTROL_ERROR,
                level="error",
                path=request.path,
                error=f"{type(exc).__name__}: {exc}",
            )
            raise web.HTTPInternalServerError(
                text=f"internal error: {type(exc).__name__}: {exc}"
            ) from None

    def _authorised(self, request: web.Request) -> bool:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and value:
            return same_token(value.strip(), self.token)
        if "token" in request.query:
            return same_token(request.query["token"], self.token)
        return valid_session(
            request.cookies.get(self._cookie), self.token, self._peer(request), time.time()
        )

    def _peer(self, request: web.Request) -> object:
        """Who a session cookie is made for: the uid owning the peer's socket, or its address."""
        return self._gate.key_of(request) if self._gate is not None else request.remote

    async def _login(self, request: web.Request) -> web.StreamResponse:
        """``/login?code=``: a one-time code (``agentctl dashboard --open``) -> the session
        cookie and the front page."""
        now = time.time()
        self._logins = {n: t for n, t in self._logins.items() if t >= now}
        nonce = login_nonce(request.query.get("code"), self.token, now)
        peer = self._peer(request)
        if (
            nonce is None
            or nonce in self._logins
            or (isinstance(peer, int) and peer != os.geteuid())
        ):
            raise web.HTTPUnauthorized(
                text="this login link is used, expired or not yours: run `agentctl dashboard "
                "--open` again (a link is good once, for a minute)"
            )
        self._logins[nonce] = now + LOGIN_SECONDS + 5
        response = web.HTTPSeeOther("/")
        response.headers.add("Set-Cookie", self._set_cookie(peer, now))
        raise response

    def _set_cookie(self, peer: object, now: float) -> str:
        cookie: SimpleCookie = SimpleCookie()
        cookie[self._cookie] = session_cookie(self.token, peer, now)
        morsel = cookie[self._cookie]
        morsel["max-age"] = str(COOKIE_DAYS * 86400)
        morsel["path"] = "/"
        morsel["httponly"] = True
        morsel["samesite"] = "Strict"
        return cookie[self._cookie].OutputString()

    async def _headers(self, request: web.Request, response: web.StreamResponse) -> None:
        response.headers.update(HEADERS)
        if same_token(request.query.get("token"), self.token):
            # (set_cookie would be too late here: aiohttp has turned cookies into headers)
            response.headers.add("Set-Cookie", self._set_cookie(self._peer(request), time.time()))
