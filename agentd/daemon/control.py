"""The control server: ``agentctl``'s requests over a Unix socket (SPEC 9).

It runs on the daemon's loop (no thread), speaks ``agentd.daemon.protocol`` and acts
only through the ``Supervisor``'s public API. Each connection is one task:
read a line, check and run the command, write the reply. A bad request gets
an error reply; a line over ``MAX_REQUEST`` gets one and the connection is
closed; an exception in a command becomes an error reply and a
``control.error`` event. None of it reaches the supervisor.

Safety: the socket is created with mode 0600 (umask while binding, then
chmod) in a 0700 directory, and each peer's uid is checked (SO_PEERCRED on
Linux, LOCAL_PEERCRED on macOS): only the daemon's own user is served. A
socket file left by a dead daemon is replaced only when nobody listens on it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
import stat
import struct
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agentd import __version__
from agentd.daemon.commands import sessions
from agentd.daemon.protocol import (
    MAX_REQUEST,
    Code,
    EventsArgs,
    LogsArgs,
    NoArgs,
    ProtocolError,
    RestartArgs,
    StatusArgs,
    TailArgs,
    UnitArgs,
    UnitsArgs,
    error,
    ok,
    parse_request,
)
from agentd.daemon.streams import _END, _Feed, _pump
from agentd.errors import AgentdError, PathError
from agentd.memory.statedir import tail_lines
from agentd.paths import Paths, ensure_private_dir
from agentd.supervisor.api import Supervisor, UnknownUnit
from agentd.supervisor.history import History

CONTROL_ERROR = "control.error"
START_WAIT = 60.0  # start/restart reply once the new session runs, or after this

Reload = Callable[[str], Awaitable[dict[str, Any]]]


class ControlServer:
    def __init__(self, sup: Supervisor, *, reload: Reload, uid: int | None = None) -> None:
        self.sup = sup
        self.paths: Paths = sup.paths
        self._reload = reload
        self._uid = os.geteuid() if uid is None else uid
        self._server: asyncio.AbstractServer | None = None
        self._bound: tuple[int, int] | None = None
        self._clients: set[asyncio.Task[Any]] = set()
        self._streams: set[asyncio.Queue[Any]] = set()
        self._commands: dict[str, Callable[[Any], Awaitable[Any]]] = {
            "ping": self.ping, "status": self.status, "start": self.start, "stop": self.stop,
            "restart": self.restart, "reload": self.reload, "logs": self.logs,
            "events": self.events, "history": self.history, "bootstrap": self.bootstrap,
        }

    # -- lifecycle -------------------------------------------------------------------
    async def listen(self) -> None:
        sock = bind_socket(self.paths)
        st = os.stat(self.paths.socket)
        self._bound = (st.st_dev, st.st_ino)
        # limit: readuntil fails past it, so a huge line is never buffered whole
        self._server = await asyncio.start_unix_server(self._serve, sock=sock,
                                                       limit=MAX_REQUEST + 1)

    async def close(self) -> None:
        """Stop listening, end streams and connections, remove the socket file."""
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._streams:
            for queue in list(self._streams):
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait(_END)
            if self._clients:
                await asyncio.wait(list(self._clients), timeout=0.5)  # streams say goodbye
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
                writer.write(error(f"refused: uid {uid} may not control this agentd "
                                   f"(run agentctl as uid {self._uid})", Code.FAILURE))
                return
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._clients.discard(task)
            with contextlib.suppress(Exception):
                await writer.drain()
                writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; False when the connection is to be closed."""
        more = True
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # the end: serve an unterminated last line
            line, more = exc.partial, False
        except asyncio.LimitOverrunError:
            writer.write(error(f"request too large (over {MAX_REQUEST} bytes); closing",
                               Code.BAD_REQUEST))
            return False
        if not line.strip():
            return more
        try:
            cmd, args = parse_request(line)
            if isinstance(args, EventsArgs) and args.follow:
                await self._follow(args, reader, writer)
                return False
            if cmd == "attach":
                assert isinstance(args, UnitArgs)
                await self._attach(args, reader, writer)
                return False
            reply = ok(await self._commands[cmd](args))
        except ProtocolError as exc:
            reply = error(str(exc), exc.code)
        except UnknownUnit as exc:
            reply = error(f"unknown unit: {exc.args[0]}", Code.UNKNOWN_UNIT)
        except AgentdError as exc:
            reply = error(str(exc), Code.FAILURE)
        except Exception as exc:  # a bug in a command must not take the daemon down
            self.sup.events.emit(CONTROL_ERROR, level="error", error=f"{type(exc).__name__}: {exc}")
            reply = error(f"internal error: {type(exc).__name__}: {exc}", Code.FAILURE)
        writer.write(reply)
        await writer.drain()
        return more

    async def _follow(self, args: EventsArgs, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        """Recent events, then each new one as it is emitted (see the protocol)."""
        feed = _Feed()

        def listener(event: dict[str, Any]) -> None:
            if args.unit is None or event.get("unit") == args.unit:
                feed.put(event)

        unsubscribe = self.sup.events.subscribe(listener)
        self._streams.add(feed.queue)
        gone = asyncio.ensure_future(reader.read(1))  # the client closing ends the stream
        try:
            writer.write(ok(await self.events(args), stream=True))
            await writer.drain()
            await _pump(feed, gone, writer, lambda event: {"event": event})
        finally:
            gone.cancel()
            self._streams.discard(feed.queue)
            with contextlib.suppress(ValueError):  # already dropped
                unsubscribe()

    async def _attach(self, args: UnitArgs, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        """Relay the unit's terminal both ways until either side closes (see the protocol)."""
        status = self.sup.status([args.unit])[0]  # UnknownUnit: an error reply
        feed = _Feed()
        unwatch = self.sup.watch_terminal(args.unit, feed.put)
        self._streams.add(feed.queue)
        typing = asyncio.ensure_future(self._relay_input(args.unit, reader))
        try:
            writer.write(ok({k: status[k] for k in ("unit", "session", "state")}, stream=True))
            await writer.drain()
            await _pump(feed, typing, writer,
                        lambda data: {"data": base64.b64encode(data).decode()})
        finally:
            typing.cancel()
            self._streams.discard(feed.queue)
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

    # -- commands: each gets its validated args and returns the result ----------------------
    async def ping(self, _args: NoArgs) -> dict[str, Any]:
        """Is the daemon there, and which one."""
        return {"pid": os.getpid(), "version": __version__, "units": len(self.sup.names()),
                "socket": str(self.paths.socket)}

    async def status(self, args: StatusArgs) -> list[dict[str, Any]]:
        """The status of the named units (all when none are named)."""
        return self.sup.status(self._known(args.units))

    async def start(self, args: UnitsArgs) -> list[dict[str, Any]]:
        """Start units now; reply once each has left ``starting`` (or after START_WAIT)."""
        names = self._targets(args)
        for name in names:
            self.sup.start(name)
        return await self._wait(names, lambda before, now: now["state"] != "starting")

    async def stop(self, args: UnitsArgs) -> list[dict[str, Any]]:
        """Stop units and wait until their processes are gone."""
        names = self._targets(args)
        await asyncio.gather(*(self.sup.stop(name) for name in names))
        return self.sup.status(names)

    async def restart(self, args: RestartArgs) -> list[dict[str, Any]]:
        """End the running sessions and start fresh ones; reply once they run."""
        names = self._targets(args)
        for name in names:
            self.sup.restart(name, args.reason)
        # Done once a new session runs, or the unit settled without one
        # (paused by a budget, backoff, failed...): never wait out START_WAIT for it.
        return await self._wait(names, lambda before, now: (
            now["state"] not in ("starting", "stopping")
            and (now["session"] > before["session"] or now["state"] != "running")))

    async def reload(self, _args: NoArgs) -> dict[str, Any]:
        """Read the units dir again (like SIGHUP) and say what changed."""
        return await self._reload("agentctl")

    async def logs(self, args: LogsArgs) -> dict[str, Any]:
        """The last lines of the unit's transcript, raw, and where to follow it."""
        path = self.sup.transcript(args.unit)
        try:
            with path.open("rb") as f:
                size = os.fstat(f.fileno()).st_size
                lines, _ = tail_lines(f, args.lines)
        except FileNotFoundError:
            lines, size = [], 0
        return {"path": str(path), "text": "".join(f"{line}\n" for line in lines), "size": size}

    async def events(self, args: EventsArgs) -> list[dict[str, Any]]:
        """The last events (of one unit, if named) from ``logs/agentd.jsonl``."""
        if not args.lines:
            return []
        found = History(self.paths.events_file).recent(limit=1_000_000)
        if args.unit is not None:
            found = [e for e in found if e.get("unit") == args.unit]
        return found[-args.lines:]

    async def history(self, args: TailArgs) -> list[dict[str, Any]]:
        """The unit's sessions: start, duration, outcome, reason, bootstrap."""
        rows = sessions(self.sup.history(args.unit))
        return rows[-args.lines:] if args.lines else []

    async def bootstrap(self, args: UnitArgs) -> dict[str, Any]:
        """What the unit's next session would be given, rendered now."""
        number, boot = self.sup.preview_bootstrap(args.unit)
        return {"unit": args.unit, "session": number, "text": boot.text, "tokens": boot.tokens,
                "warnings": boot.warnings, "cut": boot.cut}

    # -- helpers -----------------------------------------------------------------------------
    def _known(self, names: list[str]) -> list[str]:
        unknown = [n for n in names if n not in self.sup.services]
        if unknown:
            raise ProtocolError(f"unknown unit{'s' if len(unknown) > 1 else ''}: "
                                f"{', '.join(unknown)} (agentctl status lists the loaded units)",
                                Code.UNKNOWN_UNIT)
        return list(dict.fromkeys(names))

    def _targets(self, args: UnitsArgs) -> list[str]:
        if args.all and args.units:
            raise ProtocolError("give unit names or all, not both")
        if not args.all and not args.units:
            raise ProtocolError("name at least one unit (or all)")
        return self.sup.names() if args.all else self._known(args.units)

    async def _wait(self, names: list[str],
                    done: Callable[[dict[str, Any], dict[str, Any]], bool]) -> list[dict[str, Any]]:
        before = {s["unit"]: s for s in self.sup.status(names)}
        await asyncio.gather(*(self.sup.wait(n, lambda now, b=before[n]: done(b, now), START_WAIT)
                               for n in names))
        return self.sup.status(names)


# --- the socket ------------------------------------------------------------------------


def bind_socket(paths: Paths) -> socket.socket:
    """A listening socket at ``paths.socket``, mode 0600 in a private directory."""
    paths.check_socket()
    path = paths.socket
    _private_dir(path.parent, ours=path.parent == paths.run or path.parent.name == "agentd")
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise PathError(f"{path} exists and is not a socket; move it away or set "
                            "AGENTD_SOCKET to another path")
        if _listening(path):
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
    sock.listen(64)
    sock.setblocking(False)
    return sock


def _private_dir(directory: Path, *, ours: bool) -> None:
    """Create it 0700; an existing directory of agentd's own is tightened to 0700."""
    ensure_private_dir(directory)
    st = os.stat(directory)
    if ours and st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(directory, 0o700)


def _listening(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except OSError:
            return False
        return True


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
