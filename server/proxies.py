"""The client's address behind a reverse proxy (``--trusted-proxy CIDR``, repeatable).

Behind nginx or HAProxy every connection comes from the proxy, so the per-address limits
(connections, logins, guests, lockout) would count every client as one. A connection whose
peer is a trusted proxy names its client in the headers the proxy adds: ``Forwarded``
(RFC 7239, its ``for=`` parameters) if present, else ``X-Forwarded-For``. Each proxy appends
the address it got the request from, so the hops are read from the right: trusted proxies
are passed over and the first hop that is not one is the client. What a client writes into
those headers itself stands to the left of what the proxies appended, and is never reached
unless every hop after it is trusted. A peer that is not a trusted proxy is the client,
whatever headers it sends.
"""

from __future__ import annotations

import ipaddress
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


__all__ = ["TrustedProxies", "forwarded_for", "trusted_network"]
