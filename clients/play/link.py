"""The client's connection to the server: opening it, requests, events, and reopening it.

:class:`ServerLink` wraps one :class:`~clients.connection.Connection` at a time. When it
drops, :meth:`ServerLink.next_event` says so (None) and :meth:`ServerLink.reopen` connects
again, waiting 0.5 s, then twice as long each time up to ``retry_max``; logging in again
and resuming games is the client's part (:meth:`clients.play.client.PlayClient.restore`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from websockets.exceptions import WebSocketException

import protocol as p
from clients.connection import Connection, Disconnected, ServerError

CLIENT_NAME = "tessera-play/0.1"
FIRST_RETRY_S = 0.5
# WebSocket close codes after which reconnecting unchanged is pointless (docs/PROTOCOL.md 1).
NO_RECONNECT = {1000: "closed normally", 1008: "policy violation",
                1009: "a message was too big"}
CONNECT_ERRORS = (OSError, TimeoutError, Disconnected, WebSocketException, ServerError)


class ServerLink:
    """One server URL and the connection to it, if any."""

    def __init__(self, url: str, *, retry_max: float = 30.0) -> None:
        self.url = url
        self.retry_max = retry_max
        self.conn: Connection | None = None
        self.connected = False
        # closed for idling (4408) before a login: connect again when a command needs it
        self.lazy = False
        self.reopened = asyncio.Event()

    async def open(self) -> p.Welcome | None:
        """Connect and say hello (CONNECT_ERRORS if that fails); the server's welcome."""
        self.conn = await Connection.open(self.url, client=CLIENT_NAME)
        self.connected = True
        return self.conn.welcome

    def live(self) -> Connection:
        """The open connection; Disconnected if there is none right now."""
        if self.conn is None or not self.connected:
            raise Disconnected("not connected")
        return self.conn

    async def call(self, kind: type, **fields: object) -> p.ServerMessage:
        """Send a request and wait for its reply (ServerError, Disconnected); connect
        first if the connection was closed for idling (CONNECT_ERRORS if that fails)."""
        if self.lazy and not self.connected:
            await self.open()
            self.lazy = False
            self.reopened.set()
        return await self.live().call(kind, **fields)

    def closed_for_idling(self) -> bool:
        """The server closed the connection because it had not logged in in time (4408)."""
        return self.conn is not None and self.conn.ws.close_code == p.CLOSE_TOO_SLOW_TO_START

    async def next_event(self) -> p.ServerMessage | None:
        """The next event; None once the connection has dropped."""
        assert self.conn is not None
        try:
            return await self.conn.next_event()
        except Disconnected:
            self.connected = False
            return None

    def closed_for_good(self) -> str | None:
        """Why reconnecting is pointless (the server closed with 1000, 1008 or 1009)."""
        code = self.conn.ws.close_code if self.conn is not None else None
        if code in NO_RECONNECT:
            return f"{code}: {NO_RECONNECT[code]}"
        return None

    async def reopen(self, stop: Callable[[], bool]) -> bool:
        """Connect again with backoff until it works or ``stop()``; whether it worked."""
        delay = FIRST_RETRY_S
        while not stop():
            try:
                await self.open()
                return True
            except CONNECT_ERRORS:
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.retry_max)
        return False

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
