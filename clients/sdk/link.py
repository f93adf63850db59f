"""The runner's connection: connecting, logging in, reading events, reconnecting.

:class:`RunnerLink` connects (``hello``), logs in (the bot token; after a reconnect the
session token first; a guest without a token), hands the login to the runner, reads the
connection's events and hands each to the runner, and when the connection drops connects
again at once, then, while that fails, after 0.25 s, doubling up to 2 s
(:data:`RECONNECT_BACKOFF_S`: a bot is back within about 2 s of its server), each wait drawn
between half and all of that (so that the clients of a server that died do not all come
back in step), or after the ``retry_after_ms`` of a server that refused the login for now,
until the runner is done. On a cluster behind a load balancer the first try
usually reaches a live node, whose failover takes a second or two (docs/SCALING.md). A
refused token, or a close for a protocol violation, is a :class:`FatalError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable

import websockets

import protocol as p
from clients.connection import Connection, Disconnected, ServerError

from .seeks import wait_event

log = logging.getLogger("clients.sdk")

RECONNECT_BACKOFF_S = (0.25, 2.0)  # the first wait after a failed connect, and the longest
FATAL_CLOSE_CODES = {p.CLOSE_POLICY_VIOLATION, p.CLOSE_TOO_BIG}
YIELD_EVERY = 100  # events handled in a row before other tasks get a turn
CONNECT_ERRORS = (OSError, TimeoutError, Disconnected, ServerError,
                  websockets.exceptions.WebSocketException)


class FatalError(Exception):
    """The runner cannot go on: the token was refused, or the server closed with 1008."""


class RunnerLink:
    """One server and the runner's account on it; the connection loop."""

    def __init__(self, url: str, token: str | None, *, client: str,
                 backoff_s: tuple[float, float],
                 logged_in: Callable[[Connection, p.Authed], None],
                 event: Callable[[p.ServerMessage], None],
                 caught_up: Callable[[], None], lost: Callable[[], None]) -> None:
        self.url = url
        self.token = token
        self.client = client
        self.backoff_s = backoff_s
        self.logged_in = logged_in  # a connection is ready, as this user
        self.event = event  # one event to handle
        self.caught_up = caught_up  # every event read so far is handled
        self.lost = lost  # the connection is gone
        self.user: p.User | None = None
        self.session_token: str | None = None
        self.ready = asyncio.Event()  # set once logged in (the first time)
        self.reconnects = 0

    async def run(self, done: asyncio.Event) -> None:
        """Stay connected until ``done``; FatalError when that cannot be."""
        delay = self.backoff_s[0]
        while not done.is_set():
            try:
                conn = await self._connect()
            except FatalError:
                raise
            except CONNECT_ERRORS as e:
                wait = delay * random.uniform(0.5, 1.0)
                if isinstance(e, ServerError) and e.retry_after_ms:  # rate_limited: as told
                    wait = max(wait, e.retry_after_ms / 1000)
                log.warning("cannot connect to %s: %s; retrying in %.1f s", self.url,
                            e or type(e).__name__, wait)
                await wait_event(done, wait)
                delay = min(delay * 2, self.backoff_s[1])
                continue
            delay = self.backoff_s[0]
            try:
                await self._serve(conn, done)
            finally:
                self.lost()
                await conn.close()
            code = conn.ws.close_code
            if code in FATAL_CLOSE_CODES:
                raise FatalError(f"the server closed the connection with {code} "
                                 f"({conn.ws.close_reason or 'policy violation'})")
            if not done.is_set():
                self.reconnects += 1
                log.warning("connection lost (close code %s); reconnecting", code)

    async def _connect(self) -> Connection:
        conn = await Connection.open(self.url, client=self.client)
        try:
            authed = await self._login(conn)
        except BaseException:
            await conn.close()
            raise
        first = self.user is None
        self.user, self.session_token = authed.user, authed.session_token
        log.info("%s as %s (%s) on %s", "logged in" if first else "reconnected",
                 authed.user.name, authed.user.kind, self.url)
        self.logged_in(conn, authed)
        self.ready.set()
        return conn

    async def _login(self, conn: Connection) -> p.Authed:
        tokens = [t for t in (self.session_token, self.token) if t]
        if not tokens:
            reply = await conn.call(p.Guest)
            assert isinstance(reply, p.Authed)
            return reply
        candidates = list(dict.fromkeys(tokens))  # the session token first, then the bot's
        for i, token in enumerate(candidates):
            try:
                reply = await conn.call(p.AuthToken, token=token)
            except ServerError as e:
                if e.code not in (p.ErrorCode.UNAUTHORIZED, p.ErrorCode.INVALID_CREDENTIALS,
                                  p.ErrorCode.FORBIDDEN, p.ErrorCode.BAD_REQUEST):
                    raise
                if i + 1 == len(candidates):
                    raise FatalError(f"the server refused the token: {e}") from None
                continue
            assert isinstance(reply, p.Authed)
            return reply
        raise FatalError("no token to log in with")

    async def _serve(self, conn: Connection, done: asyncio.Event) -> None:
        """Handle the connection's events until it closes or ``done``."""
        reader = asyncio.create_task(self._read(conn))
        finished = asyncio.create_task(done.wait())
        try:
            await asyncio.wait({reader, finished}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            finished.cancel()
            if not reader.done():
                await conn.close()
            with contextlib.suppress(Exception):
                await reader

    async def _read(self, conn: Connection) -> None:
        in_a_row = 0
        while True:
            try:
                event = await conn.next_event()
            except Disconnected:
                return
            self.event(event)
            if conn.events.empty():
                self.caught_up()  # events read before a reply are handled by now
            in_a_row += 1
            if in_a_row >= YIELD_EVERY:  # a flood of events must not starve the games
                in_a_row = 0
                await asyncio.sleep(0)
