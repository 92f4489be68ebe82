"""Who may use the dashboard: the address it binds, the peers it serves, the token.

The dashboard binds loopback addresses only unless ``--http-allow-remote``
is given, and then serves other peers too; every request still needs the
token, which agentd keeps in ``run/http-token`` (0600, kept across daemon
restarts so that open pages and their cookies go on working; delete the
file for a new one). A page's forms carry a CSRF token derived from it:
state changes are POSTs that must bring it back.

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
