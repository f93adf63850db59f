"""Admission of websocket connections: a cap per address and a cap in all.

Every connection holds a file descriptor, and a process has only so many (``RLIMIT_NOFILE``;
``tessera serve`` raises its soft limit to the hard one at start). The total cap is that
limit less a reserve (``fd_reserve``) kept for the database, the logs, handshakes in progress
and plain HTTP, so that ``/healthz`` and ``/metrics`` answer even when websockets are at the
cap. An upgrade over a cap is refused before the websocket opens, with an HTTP status and
``Retry-After``: 429 when the caller's address holds ``max_connections_per_address``
already, 503 when the server holds ``max_connections``.

A connection is counted from the moment its upgrade is admitted until its transport is gone
(:meth:`Admission.lost`, from :func:`server.wsio.reporting_connection`), so a handshake that
fails after admission, a connection closed by a deadline and one whose peer vanished are all
given back.

Before its HTTP request a connection is only a socket, and a flood of sockets that never
send anything would hold files until websockets' handshake timeout (10 s): enough of them
exhaust the files, and then nothing is accepted, ``/healthz`` included. So the connections
waiting for their request are kept in order (:class:`Handshakes`): beyond
``max_handshakes`` (files kept for them too) the oldest is cut once it has been silent for a
second, and whatever its age once the files not held by websockets and the reserve are
taken. A real request comes within milliseconds of its connection; a flood of silent
sockets churns through the slots instead of through the files.
"""

from __future__ import annotations

import logging
import resource
import time
from collections import OrderedDict
from collections.abc import Callable
from http import HTTPStatus

from websockets.asyncio.server import ServerConnection
from websockets.http11 import Response

from . import wsio
from .config import Settings
from .proxies import TrustedProxies
from .ratelimit import address_key

log = logging.getLogger(__name__)

RETRY_AFTER_S = 10  # what a refused client is told to wait
MIN_WAIT_S = 1.0  # a connection silent this long is cut first when too many wait
MIN_TOTAL = 16  # the total cap never falls below this, however low the open-files limit


def open_files_limit() -> int | None:
    """This process's soft ``RLIMIT_NOFILE`` (None if unlimited or unknown)."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ValueError, OSError):
        return None
    return None if soft == resource.RLIM_INFINITY else int(soft)


def kept_files(settings: Settings, files: int | None) -> tuple[int, int]:
    """The files kept from websockets: (the reserve, those for connections waiting for
    their request): ``fd_reserve``, but at most a quarter of a small open-files limit
    ``files``, and ``max_handshakes``."""
    if files is None:
        return settings.fd_reserve, settings.max_handshakes
    return min(settings.fd_reserve, files // 4), settings.max_handshakes


def total_cap(settings: Settings, files: int | None) -> int:
    """The cap on open websockets: ``max_connections`` when set, and always below the
    open-files limit ``files`` by the files kept (:func:`kept_files`)."""
    caps = [settings.max_connections] if settings.max_connections is not None else []
    if files is not None:
        caps.append(max(MIN_TOTAL, files - sum(kept_files(settings, files))))
    return min(caps) if caps else 1 << 30


class Handshakes:
    """Accepted connections that have not sent their HTTP request yet, oldest first.

    Over ``limit`` the oldest is cut once it has waited ``MIN_WAIT_S`` (a real client has
    sent its request by then; a burst of them, as after a restart, is let through), and
    regardless of its age once they would take the files the websockets and the reserve
    need (``room()``: the files left). ``evicted`` is called for each one cut.
    """

    __slots__ = ("closed", "evicted", "limit", "peak", "room", "waiting")

    def __init__(self, limit: int, room: Callable[[], int] | None = None,
                 evicted: Callable[[], None] = lambda: None) -> None:
        self.limit = limit
        self.room = room or (lambda: limit)
        self.evicted = evicted
        self.waiting: OrderedDict[ServerConnection, float] = OrderedDict()
        self.peak = 0  # the most waiting at once since the last take_peak()
        self.closed = 0  # connections accepted and gone since the start

    def accepted(self, connection: ServerConnection) -> None:
        now = time.monotonic()
        self.waiting[connection] = now
        self.peak = max(self.peak, len(self.waiting))
        if len(self.waiting) <= self.limit:
            return
        room = self.room()
        while len(self.waiting) > self.limit:
            oldest, since = next(iter(self.waiting.items()))
            if len(self.waiting) <= room and now - since < MIN_WAIT_S:
                return  # young, and files to spare: let the burst be
            del self.waiting[oldest]
            wsio.abort(oldest)
            self.evicted()

    def requested(self, connection: ServerConnection) -> None:
        """Its request came (or it is gone): no longer waiting."""
        self.waiting.pop(connection, None)

    def lost(self, connection: ServerConnection) -> None:
        """Its transport is gone."""
        self.requested(connection)
        self.closed += 1

    def __len__(self) -> int:
        return len(self.waiting)

    def take_peak(self) -> int:
        """The most connections waiting at once since the last call."""
        peak, self.peak = max(self.peak, len(self.waiting)), len(self.waiting)
        return peak

    def compact(self) -> None:
        """Rebuild the table at its present size (a flood's size stays otherwise)."""
        self.waiting = OrderedDict(self.waiting)


class Admission:
    """Open websockets by address and in all; admits or refuses each upgrade."""

    __slots__ = ("admitted", "by_address", "fd_reserve", "files", "handshakes", "peak",
                 "per_address", "proxies", "refused", "total", "total_cap")

    def __init__(self, settings: Settings, files: int | None,
                 evicted: Callable[[], None] = lambda: None) -> None:
        self.per_address = settings.max_connections_per_address
        self.proxies = TrustedProxies(settings.trusted_proxies or ())
        self.total_cap = total_cap(settings, files)
        self.by_address: dict[str, int] = {}  # only addresses with a connection open
        self.admitted: dict[ServerConnection, str] = {}  # counted now, with their address
        self.total = 0
        self.peak = 0  # the most open at once since the last take_peak()
        self.refused = {"address": 0, "total": 0}
        self.files = files
        self.fd_reserve, waiting = kept_files(settings, files)
        self.handshakes = Handshakes(waiting, self.files_left, evicted)

    def files_left(self) -> int:
        """Files not held by open websockets nor kept in reserve: what connections waiting
        for their request may take (at least ``max_handshakes``, which the cap keeps)."""
        if self.files is None:
            return self.handshakes.limit
        return max(self.handshakes.limit, self.files - self.fd_reserve - self.total)

    def admit(self, connection: ServerConnection) -> Response | None:
        """None (and the connection counted) if it may open; else the refusal to send."""
        address = address_key(self.client(connection))
        held = self.by_address.get(address, 0)
        if held >= self.per_address:
            self.refused["address"] += 1
            return _refusal(connection, HTTPStatus.TOO_MANY_REQUESTS,
                            f"too many connections from your address (at most "
                            f"{self.per_address})\n")
        if self.total >= self.total_cap:
            self.refused["total"] += 1
            return _refusal(connection, HTTPStatus.SERVICE_UNAVAILABLE,
                            "the server is full: try again later\n")
        self.by_address[address] = held + 1
        self.total += 1
        self.peak = max(self.peak, self.total)
        if wsio.is_lost(connection):  # gone while its request was read: given back at once
            self._release(address)
        else:
            self.admitted[connection] = address
        return None

    def client(self, connection: ServerConnection) -> str:
        """The client's address: the peer's (or the one its PROXY protocol header named), or
        behind a trusted proxy the one it forwards (:mod:`server.proxies`); "?" if the
        peer is gone already."""
        remote = connection.remote_address
        peer = getattr(connection, "proxied", None) or (str(remote[0]) if remote else "?")
        request = connection.request
        return self.proxies.client(peer, request.headers if request is not None else None)

    def accepted(self, connection: ServerConnection) -> None:
        """A socket was accepted (``wsio.reporting_connection``): it waits for its request."""
        self.handshakes.accepted(connection)

    def lost(self, connection: ServerConnection) -> None:
        """A connection's transport is gone (``wsio.reporting_connection``): no longer
        waiting, and given back if it was counted."""
        self.handshakes.lost(connection)
        address = self.admitted.pop(connection, None)
        if address is not None:
            self._release(address)

    def compact(self) -> None:
        """Rebuild the tables at their present size: after a flood from many addresses
        ``by_address`` would keep the flood's size, as dicts do not shrink."""
        self.by_address = dict(self.by_address)
        self.admitted = dict(self.admitted)
        self.handshakes.compact()

    def take_peak(self) -> int:
        """The most held at once since the last call (at most; :meth:`held`)."""
        peak, self.peak = max(self.peak, self.total), self.total
        return peak + self.handshakes.take_peak()

    def held(self) -> int:
        """Open websockets and connections waiting for their request."""
        return self.total + len(self.handshakes)

    def closed(self) -> int:
        """Connections accepted and gone since the start (refused ones too)."""
        return self.handshakes.closed

    def _release(self, address: str) -> None:
        self.total -= 1
        left = self.by_address[address] - 1
        if left:
            self.by_address[address] = left
        else:
            del self.by_address[address]


def _refusal(connection: ServerConnection, status: HTTPStatus, text: str) -> Response:
    response = connection.respond(status, text)
    response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return response


def describe_caps(admission: Admission, files: int | None) -> dict[str, int | None]:
    """The figures the start-up log line reports."""
    return {"open_files_limit": files, "max_connections": admission.total_cap,
            "max_connections_per_address": admission.per_address,
            "max_handshakes": admission.handshakes.limit}


__all__ = ["Admission", "Handshakes", "open_files_limit", "total_cap"]
