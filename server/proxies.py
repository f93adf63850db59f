"""The client's address behind a reverse proxy (``--trusted-proxy CIDR``, repeatable) or a
TCP load balancer (``--proxy-protocol``).

Behind nginx or HAProxy every connection comes from the proxy, so the per-address limits
(connections, logins, guests, lockout) would count every client as one. A connection whose
peer is a trusted proxy names its client in the headers the proxy adds: ``Forwarded``
(RFC 7239, its ``for=`` parameters) if present, else ``X-Forwarded-For``. Each proxy appends
the address it got the request from, so the hops are read from the right: trusted proxies
are passed over and the first hop that is not one is the client. What a client writes into
those headers itself stands to the left of what the proxies appended, and is never reached
unless every hop after it is trusted. A peer that is not a trusted proxy is the client,
whatever headers it sends.

With ``--proxy-protocol`` (HAProxy's PROXY protocol, version 1 or 2, as a TCP balancer sends
it), every connection must come from a trusted proxy and begin with the header naming the
client: the address it names is the peer's from then on. A connection that does not (from
another peer, or without a valid header) is closed before anything is read from it.
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Iterable, Sequence

from websockets.datastructures import Headers

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_network(text: str) -> Network:
    """A ``--trusted-proxy`` value: an address or a network (``10.0.0.0/8``, ``::1``)."""
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ValueError(f"not an address or a network: {text!r}") from None


class TrustedProxies:
    """Which peers are proxies whose forwarding headers are believed."""

    __slots__ = ("networks",)

    def __init__(self, networks: Iterable[str]) -> None:
        self.networks: tuple[Network, ...] = tuple(trusted_network(n) for n in networks)

    def trusts(self, address: str) -> bool:
        if not self.networks:
            return False
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip in network for network in self.networks)

    def client(self, peer: str, headers: Headers | None) -> str:
        """The client's address: ``peer``, or behind trusted proxies the rightmost hop of
        the forwarding headers that is not one of them."""
        if headers is None or not self.trusts(peer):
            return peer
        hops = forwarded_for(headers)
        for hop in reversed(hops):
            if not self.trusts(hop):
                return hop
        return hops[0] if hops else peer


def forwarded_for(headers: Headers) -> list[str]:
    """The hops the proxies recorded, leftmost (farthest) first: the ``for=`` of every
    ``Forwarded`` element if the header is there, else the ``X-Forwarded-For`` entries."""
    forwarded = headers.get_all("Forwarded")
    if forwarded:
        return [_address(value) for value in _for_parameters(forwarded)]
    return [_address(entry) for line in headers.get_all("X-Forwarded-For")
            for entry in line.split(",") if entry.strip()]


def _for_parameters(lines: Sequence[str]) -> list[str]:
    found = []
    for line in lines:
        for element in line.split(","):
            for pair in element.split(";"):
                name, _, value = pair.partition("=")
                if name.strip().lower() == "for" and value.strip():
                    found.append(value.strip())
    return found


def _address(text: str) -> str:
    """An address as a hop names it, without quotes, brackets and port (``"[::1]:80"``,
    ``192.0.2.1:4711``); what is no address (``unknown``, ``_hidden``) as it is."""
    value = text.strip().strip('"')
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    if value.count(":") == 1:  # IPv4 with a port
        return value.split(":", 1)[0]
    return value


V1_PREFIX = b"PROXY "
V1_MAX = 107  # the longest version 1 header, "\r\n" included
V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
V2_FIXED = 16  # signature, version and command, family and protocol, length


class BadProxyHeader(ValueError):
    """A connection that had to begin with a PROXY protocol header did not."""


def proxy_header(data: bytes) -> tuple[str | None, int] | None:
    """The client a PROXY protocol header at the start of ``data`` names, and the header's
    length; None if more bytes are needed. The client is None for a header that names none
    (v1 ``UNKNOWN``, v2 ``LOCAL`` or a family other than TCP over IPv4 or IPv6: a balancer's
    own health check): the peer is the client then. Raises :class:`BadProxyHeader`."""
    if data.startswith(V2_SIGNATURE[:len(data)]) and not data.startswith(V1_PREFIX[:1]):
        return _v2(data)
    if not V1_PREFIX.startswith(data[:len(V1_PREFIX)]):
        raise BadProxyHeader("no PROXY protocol header")
    end = data.find(b"\r\n", 0, V1_MAX)
    if end < 0:
        if len(data) >= V1_MAX:
            raise BadProxyHeader("a PROXY v1 header longer than 107 bytes")
        return None
    fields = data[len(V1_PREFIX):end].decode("ascii", "replace").split(" ")
    if fields[0] == "UNKNOWN":
        return None, end + 2
    if len(fields) != 5 or fields[0] not in ("TCP4", "TCP6"):
        raise BadProxyHeader(f"a malformed PROXY v1 header: {data[:end]!r}")
    try:
        source = ipaddress.ip_address(fields[1])
    except ValueError:
        raise BadProxyHeader(f"a malformed PROXY v1 source: {fields[1]!r}") from None
    if source.version != (4 if fields[0] == "TCP4" else 6):
        raise BadProxyHeader(f"a {fields[0]} header with the source {fields[1]}")
    return str(source), end + 2


def _v2(data: bytes) -> tuple[str | None, int] | None:
    if len(data) < V2_FIXED:
        return None
    version_command, family, length = struct.unpack("!BBH", data[12:V2_FIXED])
    if version_command >> 4 != 2 or version_command & 0x0F not in (0, 1):
        raise BadProxyHeader(f"a PROXY v2 header of version/command {version_command:#x}")
    total = V2_FIXED + length
    if len(data) < total:
        return None
    body = data[V2_FIXED:total]
    if version_command & 0x0F == 0:  # LOCAL: the balancer's own connection
        return None, total
    if family == 0x11 and length >= 12:  # TCP over IPv4
        return str(ipaddress.IPv4Address(body[:4])), total
    if family == 0x21 and length >= 36:  # TCP over IPv6
        return str(ipaddress.IPv6Address(body[:16])), total
    return None, total


__all__ = ["BadProxyHeader", "TrustedProxies", "forwarded_for", "proxy_header",
           "trusted_network"]
