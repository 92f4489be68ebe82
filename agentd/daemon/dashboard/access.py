"""Who may use the dashboard: the address it binds, the peers it serves, the token.

The dashboard binds loopback addresses only unless ``--http-allow-remote``
is given, and then serves other peers too; every request still needs the
token, which agentd keeps in ``run/http-token`` (0600, kept across daemon
restarts so that open pages and their cookies go on working; delete the
file for a new one). A page's forms carry a CSRF token derived from it:
state changes are POSTs that must bring it back.

The token itself never leaves the machine's owner: a browser that brought it
(``?token=``) gets a session cookie instead, which is not the token but a
signature of who may use it (``session_cookie``: the uid owning the peer's
socket, or a remote peer's address) and until when. Browsers send a
127.0.0.1 cookie to every port of 127.0.0.1, so another local user's server
may receive it; from another uid it opens nothing. ``agentctl dashboard
--open`` gives the browser a one-time login code instead of the token
(``login_code``: valid once, for ``LOGIN_SECONDS``, for the daemon's uid), so
no token is on the browser's command line for ``ps`` to show. A request
whose ``Host`` is not this dashboard's (``host_allowed``) is refused before
anything: a web page whose name was rebound to 127.0.0.1 (DNS rebinding)
cannot talk to it.

Pure but for reading and writing the token file and resolving a host name.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
import secrets
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

from agentd.errors import AgentdError
from agentd.fileio import write_atomic
from agentd.paths import ensure_private_dir

TOKEN_FILE = "http-token"
COOKIE_DAYS = 7
LOGIN_SECONDS = 60  # a one-time login code is good for this long (and once)
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32,128}")
_BIND = re.compile(r"(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:\[\]]*)):(?P<port>\d{1,5})")


class BindRefused(AgentdError):
    """An ``--http`` address that is malformed, or not loopback without ``--http-allow-remote``."""


@dataclass(frozen=True)
class Bind:
    """Where the dashboard listens (``port`` 0: the OS picks one)."""

    host: str
    port: int
    allow_remote: bool = False

    @classmethod
    def parse(cls, text: str, *, allow_remote: bool = False) -> Bind:
        """``HOST:PORT`` or ``[V6]:PORT``; BindRefused says what is wrong with it."""
        match = _BIND.fullmatch(text.strip())
        if match is None or int(match["port"]) > 65535:
            raise BindRefused(
                f"--http {text!r}: give HOST:PORT, e.g. 127.0.0.1:8765 "
                "(an IPv6 host in brackets: [::1]:8765)"
            )
        host = match["v6"] or match["host"]
        bind = cls(host, int(match["port"]), allow_remote)
        if not allow_remote:
            wide = [a for a in resolve(host) if not ipaddress.ip_address(a).is_loopback]
            if not host or wide:
                where = ", ".join(wide) or "every address"
                raise BindRefused(
                    f"--http {text!r} would serve other machines ({where}): the dashboard "
                    "binds loopback addresses only (127.0.0.1, [::1], localhost) unless "
                    "--http-allow-remote is given"
                )
        return bind

    def url(self, port: int | None = None) -> str:
        """The dashboard's base URL (``port``: the one actually bound)."""
        host = self.host or "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port if port is None else port}/"


def resolve(host: str) -> list[str]:
    """The addresses ``host`` names (an unresolvable name is refused, saying so)."""
    if not host:
        return []
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise BindRefused(f"--http: cannot resolve {host!r}: {exc}") from None
    return sorted({str(info[4][0]) for info in infos})


def peer_allowed(remote: str | None, *, allow_remote: bool) -> bool:
    """May a request from address ``remote`` be served? (Loopback always; others
    only with ``--http-allow-remote``; an unknown peer never.)"""
    if allow_remote:
        return True
    if not remote:
        return False
    try:
        address = ipaddress.ip_address(remote.split("%", 1)[0])  # fe80::1%eth0
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1 on a dual-stack socket
    return address.is_loopback


def load_token(run_dir: Path) -> str:
    """The dashboard's token from ``run/http-token``, created (0600) when missing,
    not ours alone, or not a token."""
    path = ensure_private_dir(run_dir) / TOKEN_FILE
    try:
        st = os.lstat(path)
        if (
            stat.S_ISREG(st.st_mode)
            and st.st_uid == os.geteuid()
            and stat.S_IMODE(st.st_mode) == 0o600
        ):
            token = path.read_text(encoding="ascii").strip()
            if _TOKEN.fullmatch(token):
                return token
    except (OSError, UnicodeDecodeError):
        pass
    token = secrets.token_urlsafe(32)
    write_atomic(path, token + "\n", mode=0o600)
    return token


def same_token(given: str | None, token: str) -> bool:
    """Is ``given`` the token? (In constant time.)"""
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def csrf_token(token: str) -> str:
    """The CSRF token of the pages served with ``token`` (so no state is kept per client)."""
    return hmac.new(token.encode(), b"agentd dashboard csrf", hashlib.sha256).hexdigest()


# --- the session cookie and the one-time login ------------------------------------------------


def _sign(token: str, *parts: object) -> str:
    text = "|".join(str(p) for p in parts)
    return hmac.new(token.encode(), text.encode(), hashlib.sha256).hexdigest()


def session_cookie(token: str, peer: object, now: float, days: float = COOKIE_DAYS) -> str:
    """The cookie of a browser at ``peer`` (a uid, or an address) that showed the token:
    good until then, from that peer only."""
    until = int(now + days * 86400)
    return f"s1.{until}.{_sign(token, 'session', peer, until)}"


def valid_session(value: str | None, token: str, peer: object, now: float) -> bool:
    """Is ``value`` a session cookie made for ``peer`` with ``token``, still good?"""
    if not value:
        return False
    version, _, rest = value.partition(".")
    until, _, signature = rest.partition(".")
    if version != "s1" or not until.isdigit() or int(until) < now:
        return False
    return hmac.compare_digest(signature, _sign(token, "session", peer, int(until)))


def login_code(token: str, now: float) -> str:
    """A code that logs a browser in once, within ``LOGIN_SECONDS`` (agentctl makes it
    from the token file it may read)."""
    until = int(now + LOGIN_SECONDS)
    nonce = secrets.token_urlsafe(12)
    return f"l1.{until}.{nonce}.{_sign(token, 'login', until, nonce)}"


def login_nonce(code: str | None, token: str, now: float) -> str | None:
    """The nonce of a good login code (the caller lets each one in once); None if bad."""
    parts = (code or "").split(".")
    if len(parts) != 4 or parts[0] != "l1" or not parts[1].isdigit():
        return None
    until, nonce, signature = int(parts[1]), parts[2], parts[3]
    if not now <= until <= now + LOGIN_SECONDS + 5:
        return None
    good = hmac.compare_digest(signature, _sign(token, "login", until, nonce))
    return f"{until}.{nonce}" if good else None


def host_allowed(host: str | None, bind: Bind, port: int) -> bool:
    """Is ``host`` (a request's Host header) one this dashboard answers to: a loopback
    name or address, the one it was bound to, and with --http-allow-remote any address
    or this machine's name; on its port."""
    if not host:
        return False
    match = re.fullmatch(r"(?:\[(?P<v6>[^\]]+)\]|(?P<name>[^:\[\]]+))(?::(?P<port>\d{1,5}))?", host)
    if match is None or int(match["port"] or 80) != port:
        return False
    name = (match["v6"] or match["name"]).lower().rstrip(".")
    if name in ("localhost", bind.host.lower()) or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return bind.allow_remote and name in _own_names()
    return address.is_loopback or bind.allow_remote


def _own_names() -> set[str]:
    names = {socket.gethostname().lower(), socket.getfqdn().lower()}
    return {n for n in names if n}
