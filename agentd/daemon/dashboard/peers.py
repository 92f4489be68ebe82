"""Who is at the other end of a TCP connection to the dashboard: the uid that owns
the peer's socket, when the peer is on this machine (Linux).

A local peer's socket is in this machine's socket table, with its owner's uid:
the kernel finds it by its address and port (netlink ``sock_diag``, what
``ss`` uses: one lookup, however many sockets there are), else it is looked
up in ``/proc/net/tcp`` and ``tcp6``. None when it cannot be told (another
machine, another network namespace, not Linux): the caller counts such peers
by their address instead.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import struct
import sys
from pathlib import Path

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 0x1
NLMSG_ERROR = 0x2
_HEADER = struct.Struct("=IHHII")  # struct nlmsghdr
_REQUEST = struct.Struct("=BBBBI")  # struct inet_diag_req_v2, up to its inet_diag_sockid
_SOCKID = struct.Struct(">HH16s16sII")  # sport, dport, src, dst (network order), if, cookie[0]
_COOKIE_REST = struct.Struct("=I")
_MSG = struct.Struct("=BBBB")  # struct inet_diag_msg, up to its inet_diag_sockid
_AFTER_ID = struct.Struct("=IIIII")  # expires, rqueue, wqueue, uid, inode
NO_COOKIE = 0xFFFFFFFF
ALL_STATES = 0xFFFFFFFF
LOOKUP_TIMEOUT = 0.05  # s: the kernel answers at once; never let it hold the loop


class PeerUids:
    """Looks up the uid owning the far end of TCP connections, one netlink socket
    kept open for all of them."""

    def __init__(self) -> None:
        self._netlink: socket.socket | None = None
        self._netlink_failed = not sys.platform.startswith("linux")
        self._seq = 0

    def uid(self, local: tuple[str, int], remote: tuple[str, int]) -> int | None:
        """The uid of the socket at ``remote`` connected to ours at ``local``
        (addresses as ``getsockname``/``getpeername`` give them), or None."""
        try:
            near = ipaddress.ip_address(local[0].split("%", 1)[0])
            far = ipaddress.ip_address(remote[0].split("%", 1)[0])
        except ValueError:
            return None
        if not sys.platform.startswith("linux"):
            return None
        found = self._by_netlink(near, local[1], far, remote[1])
        if found is None and self._netlink_failed:
            found = _by_proc(near, local[1], far, remote[1])
        return found

    def close(self) -> None:
        if self._netlink is not None:
            self._netlink.close()
            self._netlink = None

    def _by_netlink(
        self,
        near: ipaddress.IPv4Address | ipaddress.IPv6Address,
        near_port: int,
        far: ipaddress.IPv4Address | ipaddress.IPv6Address,
        far_port: int,
    ) -> int | None:
        if self._netlink_failed:
            return None
        try:
            if self._netlink is None:
                self._netlink = socket.socket(
                    socket.AF_NETLINK, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC, NETLINK_SOCK_DIAG
                )
                self._netlink.settimeout(LOOKUP_TIMEOUT)
            # The peer's socket: its source is our remote end, its destination our end.
            # A v4 peer of a dual-stack socket shows as ::ffff:a.b.c.d; it may be either.
            families = [far]
            if isinstance(far, ipaddress.IPv6Address) and far.ipv4_mapped is not None:
                families.insert(0, far.ipv4_mapped)
            for src in families:
                dst = near
                if isinstance(src, ipaddress.IPv4Address) and isinstance(
                    near, ipaddress.IPv6Address
                ):
                    dst = near.ipv4_mapped or near
                uid = self._ask(src, far_port, dst, near_port)
                if uid is not None:
                    return uid
            return None
        except OSError:
            self._netlink_failed = True  # no sock_diag here (seccomp, an old kernel)
            self.close()
            return None

    def _ask(
        self,
        src: ipaddress.IPv4Address | ipaddress.IPv6Address,
        sport: int,
        dst: ipaddress.IPv4Address | ipaddress.IPv6Address,
        dport: int,
    ) -> int | None:
        assert self._netlink is not None
        family = socket.AF_INET if src.version == 4 else socket.AF_INET6
        if (dst.version == 4) != (family == socket.AF_INET):
            return None
        self._seq += 1
        body = (
            _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, ALL_STATES)
            + _SOCKID.pack(
                sport, dport, src.packed.ljust(16, b"\0"), dst.packed.ljust(16, b"\0"), 0, NO_COOKIE
            )
            + _COOKIE_REST.pack(NO_COOKIE)
        )
        self._netlink.send(
            _HEADER.pack(_HEADER.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, self._seq, 0)
            + body
        )
        while True:
            try:
                data = self._netlink.recv(65536)
            except TimeoutError:
                return None
            if len(data) < _HEADER.size:
                return None
            _, kind, _, seq, _ = _HEADER.unpack_from(data)
            if seq != self._seq:
                continue  # a late answer to an earlier question
            if kind == NLMSG_ERROR or kind != SOCK_DIAG_BY_FAMILY:
                return None  # no such socket (in this namespace)
            offset = _HEADER.size + _MSG.size + _SOCKID.size + _COOKIE_REST.size
            if len(data) < offset + _AFTER_ID.size:
                return None
            return int(_AFTER_ID.unpack_from(data, offset)[3])


def _by_proc(
    near: ipaddress.IPv4Address | ipaddress.IPv6Address,
    near_port: int,
    far: ipaddress.IPv4Address | ipaddress.IPv6Address,
    far_port: int,
) -> int | None:
    """The same from ``/proc/net/tcp{,6}``: the line whose local end is the peer."""
    wanted = {(_proc_address(far), far_port, _proc_address(near), near_port)}
    if isinstance(far, ipaddress.IPv6Address) and far.ipv4_mapped is not None:
        mapped_near = near.ipv4_mapped if isinstance(near, ipaddress.IPv6Address) else near
        if mapped_near is not None:
            wanted.add(
                (_proc_address(far.ipv4_mapped), far_port, _proc_address(mapped_near), near_port)
            )
    for name in ("tcp", "tcp6"):
        with (
            contextlib.suppress(OSError, ValueError),
            Path(f"/proc/net/{name}").open(encoding="ascii") as table,
        ):
            next(table, None)
            for line in table:
                fields = line.split()
                local, remote = fields[1].split(":"), fields[2].split(":")
                key = (local[0], int(local[1], 16), remote[0], int(remote[1], 16))
                if key in wanted:
                    return int(fields[7])
    return None


def _proc_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """An address as /proc/net/tcp writes it: each 32-bit word in host order, in hex."""
    raw = address.packed
    words = [raw[i : i + 4] for i in range(0, len(raw), 4)]
    order = "<" if sys.byteorder == "little" else ">"
    return "".join(f"{struct.unpack(order + 'I', w)[0]:08X}" for w in words)
