"""The control server: ``agentctl``'s requests over a Unix socket.

It runs on the daemon's loop (no thread), speaks ``agentd.daemon.control.requests`` and acts
only through the ``Supervisor``'s public API. Each connection is one task:
read a line, check it, hand it to its handler (``commands``) or stream
(``streams``), write the reply. A bad request gets an error reply; a line
over ``MAX_REQUEST`` gets one and the connection is closed; an exception in a
command becomes an error reply and a ``control.error`` event. None of it
reaches the supervisor. Requests wait until the owner ``opens`` the server
(the daemon: once its units are loaded), so no client sees a half-loaded
daemon, and none is refused meanwhile.

Greedy clients (``clients``): connections are capped per uid and in all, an
idle one is closed after ``REQUEST_IDLE``, one that does not read its reply
is dropped after ``WRITE_DEADLINE``.

Safety: the socket is created with mode 0600 (umask while binding, then
chmod) in a 0700 directory, and each peer's uid is checked (SO_PEERCRED on
Linux, LOCAL_PEERCRED on macOS): only the daemon's own user is served. A
socket file left by a dead daemon is replaced only when nobody listens on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
import struct
import sys
from pathlib import Path
from typing import Any

from agentd import events as ev
from agentd.daemon.control.client import listening
from agentd.daemon.control.commands import HANDLERS, Context, Reload
from agentd.daemon.control.connections import REQUEST_IDLE, Clients, drain
from agentd.daemon.control.protocol import MAX_REQUEST, Code, error, ok
from agentd.daemon.control.requests import EventsArgs, ProtocolError, UnitArgs, parse_request
from agentd.daemon.control.streams import Streams
from agentd.errors import AgentdError, PathError
from agentd.paths import Paths, ensure_private_dir
from agentd.supervisor.api import Supervisor
from agentd.supervisor.unitrefs import UnknownUnit

LISTEN_BACKLOG = 64  # connections the kernel holds until accepted
BULKY = frozenset({"logs", "events"})  # replies that may be megabytes
CLOSE_GRACE = 0.5  # closing waits this long for the replies under way and streams' goodbyes


class ControlServer:
    def __init__(
        self,
        sup: Supervisor,
        *,
        reload: Reload,
        uid: int | None = None,
        dashboard: str | None = None,
        clients: Clients | None = None,
    ) -> None:
        self.sup = sup
        self.paths: Paths = sup.paths
        self._uid = os.geteuid() if uid is None else uid
        self._server: asyncio.AbstractServer | None = None
        self._bound: tuple[int, int] | None = None
        self._clients: set[asyncio.Task[Any]] = set()
        self._busy = 0  # requests being served: closing lets them reply (`agentctl stop` of
        self._idle = asyncio.Event()  # the unit an `agentd run` ends with)
        self._idle.set()
        self._context = Context(sup, reload, dashboard)
        self._streams = Streams(sup)
        self._open = asyncio.Event()
        self.clients = clients or Clients(sup.events.emit)  # the dashboard's too, if shared

    # -- lifecycle -------------------------------------------------------------------
    async def listen(self, *, open_now: bool = True) -> None:
        """Bind the socket; requests are served from ``open()`` on (at once by default)."""
        if open_now:
            self.open()
        sock = bind_socket(self.paths)
        st = os.stat(self.paths.socket)
        self._bound = (st.st_dev, st.st_ino)
        # limit: readuntil fails past it, so a huge line is never buffered whole
        self._server = await asyncio.start_unix_server(
            self._serve, sock=sock, limit=MAX_REQUEST + 1
        )

    def open(self) -> None:
        """Serve requests from now on (those already waiting first)."""
        self._open.set()

    async def close(self) -> None:
        """Stop listening, end streams and connections, remove the socket file."""
        if self._server is not None:
            self._server.close()
            self._server = None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), CLOSE_GRACE)
        if self._streams.end_all() and self._clients:
            await asyncio.wait(list(self._clients), timeout=CLOSE_GRACE)  # streams say goodbye
        for task in list(self._clients):
            task.cancel()
        await asyncio.gather(*self._clients, return_exceptions=True)
        with contextlib.suppress(OSError):
            st = os.lstat(self.paths.socket)
            if (st.st_dev, st.st_ino) == self._bound:  # still ours, not a successor's
                os.unlink(self.paths.socket)

    # -- one connection ------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._clients.add(task)
        try:
            uid = peer_uid(writer.get_extra_info("socket"))
            if uid is not None and uid != self._uid:
                writer.write(
                    error(
                        f"refused: uid {uid} may not control this agentd "
                        f"(run agentctl as uid {self._uid})",
                        Code.FAILURE,
                    )
                )
                return
            if not self.clients.admit(reader, writer, uid):
                writer.write(
                    error("refused: too many connections to this agentd; try again", Code.FAILURE)
                )
                return
            await self._open.wait()
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._clients.discard(task)
            self.clients.release(writer)
            with contextlib.suppress(Exception):
                if not writer.is_closing():  # an evicted one is closed already
                    await drain(writer)
                writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; False when the connection is to be closed."""
        more = True
        self.clients.waiting(writer)
        try:
            async with asyncio.timeout(REQUEST_IDLE):  # a timer, not a task per request
                line = await reader.readuntil(b"\n")
        except TimeoutError:  # idle too long: the slot goes to someone who asks
            return False
        except asyncio.IncompleteReadError as exc:  # the end: serve an unterminated last line
            line, more = exc.partial, False
        except asyncio.LimitOverrunError:
            writer.write(
                error(f"request too large (over {MAX_REQUEST} bytes); closing", Code.BAD_REQUEST)
            )
            return False
        if not line.strip():
            return more
        self.clients.busy(writer)
        try:
            cmd, args = parse_request(line)
            if isinstance(args, EventsArgs) and args.follow:
                await self._streams.follow(args, reader, writer)
                return False
            if cmd == "attach":
                assert isinstance(args, UnitArgs)
                await self._streams.attach(args, reader, writer)
                return False
            result = await self._handle(cmd, args)
            degraded = self.sup.degraded()
            extra = {"degraded": degraded} if degraded else {}
            # a transcript or the event log can be megabytes of JSON: encoded off the loop
            reply = (
                await asyncio.to_thread(ok, result, **extra)
                if cmd in BULKY
                else ok(result, **extra)
            )
        except ProtocolError as exc:
            reply = error(str(exc), exc.code)
        except UnknownUnit as exc:
            reply = error(f"unknown unit: {exc.args[0]}", Code.UNKNOWN_UNIT)
        except AgentdError as exc:
            reply = error(str(exc), Code.FAILURE)
        except ConnectionError:  # the client is gone or was dropped (a stream it stopped reading)
            raise
        except Exception as exc:  # a bug in a command must not take the daemon down
            self.sup.events.emit(
                ev.CONTROL_ERROR, level="error", error=f"{type(exc).__name__}: {exc}"
            )
            reply = error(f"internal error: {type(exc).__name__}: {exc}", Code.FAILURE)
        writer.write(reply)
        await drain(writer)
        return more

    async def _handle(self, cmd: str, args: Any) -> Any:
        self._busy += 1
        self._idle.clear()
        try:
            return await HANDLERS[cmd](self._context, args)
        finally:
            self._busy -= 1
            if not self._busy:
                self._idle.set()


# --- the socket ------------------------------------------------------------------------


def bind_socket(paths: Paths) -> socket.socket:
    """A listening socket at ``paths.socket``, mode 0600 in a private directory."""
    paths.check_socket()
    path = paths.socket
    ours = path.parent in (paths.run, paths.run / "units") or path.parent.name == "agentd"
    _private_dir(path.parent, ours=ours)
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise PathError(
                f"{path} exists and is not a socket; move it away or set "
                "AGENTD_SOCKET to another path"
            )
        if listening(path):
            raise PathError(f"another agentd already listens on {path}")
        os.unlink(path)  # stale: its daemon died
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # born 0600: no window where others could connect
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise PathError(f"cannot create the control socket {path}: {exc.strerror}") from None
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(LISTEN_BACKLOG)
    sock.setblocking(False)
    return sock


def _private_dir(directory: Path, *, ours: bool) -> None:
    """Create it 0700; an existing directory of agentd's own is tightened to 0700."""
    ensure_private_dir(directory)
    st = os.stat(directory)
    if ours and st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(directory, 0o700)


def peer_uid(sock: Any) -> int | None:
    """The uid of the process at the other end of a Unix socket (None: cannot tell)."""
    if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", creds)[1])
    if sys.platform == "darwin":  # LOCAL_PEERCRED at SOL_LOCAL: struct xucred {version, uid, ...}
        creds = sock.getsockopt(0, 0x001, 76)
        return int(struct.unpack_from("Ii", creds)[1])
    # Elsewhere (BSDs have getpeereid, which Python does not expose) the 0600
    # socket in a 0700 directory is the only guard.
    return None
