"""Connections logged in with a revoked token are closed within about a second.

A token is revoked by a logout on another connection, or by ``tessera admin revoke-token``
in another process; so the server polls the database for revocations rather than waiting
for a call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol

import protocol as p

from .tasks import checkpoint

if TYPE_CHECKING:
    from .storage import Store

log = logging.getLogger(__name__)

# Each poll looks this far back before the previous one, so that a revocation committed
# late (or stamped by a clock a little behind) is not missed.
OVERLAP = timedelta(seconds=10)
CLOSE_REVOKED = (p.CLOSE_POLICY_VIOLATION, "token revoked")


class Revocable(Protocol):
    """A connection as revocation sees it (``server.session.Session``)."""

    token_digest: str | None
    closing: bool
    peer: str

    def close(self, code: int, reason: str) -> None: ...


async def enforce_revocations(store: Store, sessions: Callable[[], Iterable[Revocable]],
                              interval_s: float) -> None:
    """Poll for tokens revoked since the server started and close their connections."""
    since = datetime.now(UTC) - OVERLAP
    while True:
        checkpoint()
        await asyncio.sleep(interval_s)
        polled = datetime.now(UTC)
        try:
            revoked = set(await store.revoked_since(since))
        except Exception:
            log.exception("cannot read revoked tokens; trying again")
            continue
        since = polled - OVERLAP
        close_revoked(sessions(), revoked)


def close_revoked(sessions: Iterable[Revocable], digests: set[str]) -> int:
    """Close the connections logged in with a token of these digests; how many."""
    closed = 0
    for session in list(sessions):
        if session.token_digest in digests and not session.closing:
            log.info("token revoked: closing", extra={"peer": session.peer})
            session.close(*CLOSE_REVOKED)
            closed += 1
    return closed
