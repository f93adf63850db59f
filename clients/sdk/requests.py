"""The runner's requests: on its current connection, within the server's request rate.

The server announces its rate limit per connection (``welcome.limits``). The runner keeps
under it with a token bucket for the requests that matter (moves, resignations, resumes,
seeks, accepting a challenge), which wait for a token. Declining a challenge sent to the bot
costs nothing at the server (PROTOCOL.md, ``decline_challenge``), so declines have a
bucket of their own that is not a share of the server's rate but a bound on what the bot
spends on them (``DECLINE_RATE``); a decline never waits for it: one with no token left is
deferred by the :class:`~clients.sdk.challenges.ChallengeDesk` and sent when a token comes.
A flood of challenges thus costs the bot neither its moves' budget nor an unbounded queue
(the server caps the challenges pending for one user; issue 16).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import protocol as p
from clients.connection import Connection, Disconnected, ServerError

log = logging.getLogger("clients.sdk")

RATE_SHARE = 0.85  # of the server's advertised request rate and burst; the rest, a margin
DECLINE_RATE = 50.0  # declines a second at most (free at the server: the bot's own bound)
DECLINE_BURST = 50.0
RATE_LIMIT_RETRIES = 20
REQUEST_TIMEOUT_S = 30.0  # a request unanswered this long: reconnect and resume


class Throttle:
    """A token bucket: ``rate`` tokens a second, at most ``burst`` saved."""

    def __init__(self, rate: float = 10.0, burst: float = 10.0) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def try_take(self) -> bool:
        """Take a token if there is one now; never waits."""
        self._refill()
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    async def take(self) -> None:
        """Take a token, waiting for one if need be."""
        while not self.try_take():
            await asyncio.sleep((1.0 - self.tokens) / self.rate)


class Requests:
    """Requests on the runner's current connection (None between connections)."""

    def __init__(self, spawn: Callable[[Any], asyncio.Task[Any]]) -> None:
        self.spawn = spawn
        self.conn: Connection | None = None
        self.main = Throttle()
        self.declines = Throttle(DECLINE_RATE, DECLINE_BURST)

    def attach(self, conn: Connection, used: int = 0) -> None:
        """Use ``conn`` from now on; ``used`` requests of its budget are spent already."""
        self.conn = conn
        if conn.welcome is not None:
            limits = conn.welcome.limits
            self.main = Throttle(RATE_SHARE * limits.rate_per_s,
                                 max(1.0, RATE_SHARE * limits.burst - used))

    def detach(self) -> None:
        self.conn = None

    def require(self) -> Connection:
        if self.conn is None:
            raise Disconnected("not connected")
        return self.conn

    async def request(self, kind: type[Any], **fields: Any) -> p.ServerMessage:
        """``conn.call`` within the main budget, waiting out ``rate_limited`` refusals.

        Raises ``Disconnected`` when there is no connection, or no reply comes in time.
        """
        for _ in range(RATE_LIMIT_RETRIES):
            await self.main.take()
            conn = self.require()
            try:
                return await asyncio.wait_for(conn.call(kind, **fields), REQUEST_TIMEOUT_S)
            except TimeoutError:
                log.warning("no reply to %s within %.0f s; reconnecting", kind.TAG,
                            REQUEST_TIMEOUT_S)
                self.spawn(conn.close())
                raise Disconnected("no reply") from None
            except ServerError as e:
                if e.code != p.ErrorCode.RATE_LIMITED:
                    raise
                await asyncio.sleep((e.retry_after_ms or 100) / 1000)
        raise ServerError(p.error_reply(p.ErrorCode.RATE_LIMITED, "still rate limited"))

    def decline(self, challenge_id: int, message: str | None, *, paid: bool = False) -> bool:
        """Decline a challenge (with ``message``, why) if the decline budget allows it now
        (``paid``: its token is taken already), without waiting for the reply; whether it
        was sent."""
        conn = self.conn
        if conn is None or not (paid or self.declines.try_take()):
            return False
        self.spawn(_decline(conn, challenge_id, message))
        return True


async def _decline(conn: Connection, challenge_id: int, message: str | None) -> None:
    """Send a decline and leave its reply to arrive unread (a refusal is only logged)."""
    request = p.DeclineChallenge(id=conn.pending.next_id(), challenge_id=challenge_id,
                                 message=message)  # the id is taken and sent in one step
    try:
        reply = await conn.send(request)
    except Disconnected:
        return
    reply.add_done_callback(_log_refusal)


def _log_refusal(reply: asyncio.Future[p.ServerMessage]) -> None:
    if reply.cancelled() or reply.exception() is not None:
        return
    answer = reply.result()
    if isinstance(answer, p.ErrorReply):
        log.info("refused without a wait for the reply: %s: %s", answer.code, answer.message)
