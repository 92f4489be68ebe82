"""The dashboard's HTTP server, on the daemon's own loop (aiohttp).

aiohttp's ``AppRunner`` serves the app as tasks of the running loop: no
thread per client, no second loop, no signal handlers of its own (the daemon
owns SIGTERM, SIGINT and SIGHUP). With no browser connected it keeps no
timer: the daemon's idle figures stay as they are.

Every request passes ``guard``: a peer that is not loopback gets 403 unless
``--http-allow-remote`` was given; a request without the token
(``Authorization: Bearer TOKEN``, ``?token=TOKEN``, or the cookie that
``?token=`` sets) gets 401; a POST without the pages' CSRF token gets 403. A
handler's exception becomes a 500 and a ``control.error`` event, as on the
control socket. Every response forbids framing, referrers and anything not
served from here (Content-Security-Policy).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from http.cookies import SimpleCookie

from aiohttp import web
from aiohttp.typedefs import Middleware

from agentd import events as ev
from agentd.daemon.control.commands import Context
from agentd.daemon.control.server import CLOSE_GRACE
from agentd.daemon.dashboard.access import (
    Bind,
    BindRefused,
    csrf_token,
    load_token,
    peer_allowed,
    same_token,
)
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
COOKIE_DAYS = 30

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Dashboard:
    """``agentd serve --http``: start it on the daemon's loop, close it before the daemon stops."""

    def __init__(self, ctx: Context, bind: Bind) -> None:
        self.ctx = ctx
        self.bind = bind
        self.token = load_token(ctx.sup.paths.run)
        self.url = bind.url()
        self._cookie = f"agentd-{bind.port}"
        self._pages = Pages(ctx, csrf_token(self.token), host=self.url)
        self._runner: web.AppRunner | None = None

    @property
    def link(self) -> str:
        """The URL with the token: opening it once sets the cookie."""
        return f"{self.url}?token={self.token}"

    async def start(self) -> str:
        """Listen; the base URL (with the port the OS chose for port 0)."""
        app = web.Application(middlewares=[self._guard()], client_max_size=MAX_BODY)
        app.add_routes(self._pages.routes())
        app.on_response_prepare.append(self._headers)
        # handler_cancellation: a browser that leaves ends its live stream at once
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=CLOSE_GRACE
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.bind.host or None, self.bind.port)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            self._runner = None
            raise BindRefused(
                f"--http: cannot listen on {self.bind.url()}: {exc.strerror or exc}"
            ) from None
        port = int(self._runner.addresses[0][1])
        self.url = self.bind.url(port)
        self._cookie = f"agentd-{port}"  # cookies ignore ports: one per dashboard
        self._pages.templates.globals["host"] = self.url
        return self.url

    async def close(self) -> None:
        """End the live streams, stop listening, let the answers under way finish."""
        self._pages.streams.end_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- every request -------------------------------------------------------------------
    def _guard(self) -> Middleware:
        @web.middleware
        async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
            if not peer_allowed(request.remote, allow_remote=self.bind.allow_remote):
                raise web.HTTPForbidden(
                    text="agentd's dashboard serves this machine only "
                    "(agentd serve --http-allow-remote serves others)"
                )
            if not same_token(self._given_token(request), self.token):
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

        return guard

    def _given_token(self, request: web.Request) -> str | None:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and value:
            return value.strip()
        return request.query.get("token") or request.cookies.get(self._cookie)

    async def _headers(self, request: web.Request, response: web.StreamResponse) -> None:
        response.headers.update(HEADERS)
        if same_token(request.query.get("token"), self.token):
            # (set_cookie would be too late here: aiohttp has turned cookies into headers)
            cookie: SimpleCookie = SimpleCookie()
            cookie[self._cookie] = self.token
            morsel = cookie[self._cookie]
            morsel["max-age"] = str(COOKIE_DAYS * 86400)
            morsel["path"] = "/"
            morsel["httponly"] = True
            morsel["samesite"] = "Strict"
            response.headers.add("Set-Cookie", cookie[self._cookie].OutputString())
