"""Announcements every node hears: lobby events and token revocations.

A ``Feed`` is one pub/sub channel whose messages every node hands to its own listeners
(``deliver``). The node that announces something delivers it to its own listeners at once
and publishes it for the others, tagged with its node id so that it does not deliver it a
second time when Redis echoes it back. Delivery to other nodes is at most once (pub/sub):

- lobby events (``seek_added``, ``seek_removed``, ``player_online``, ``player_offline``,
  as encoded protocol frames) are hints: a node that missed some (the bus's ``on_gap``)
  sends its lobby subscribers a fresh listing from the stores;
- revocations (``Revocations``: token digests) are also in PostgreSQL: a node that missed
  some polls ``Store.revoked_since`` as a lone server does today, and between gaps the
  feed closes connections on a revoked token within a round trip instead of a poll.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import msgpack

from .bus import Bus
from .errors import BusUnavailable

log = logging.getLogger(__name__)


class Feed:
    """One channel's announcements, delivered once on every node (see the module docstring)."""

    def __init__(self, bus: Bus, channel: str, deliver: Callable[[bytes], None]) -> None:
        self.bus = bus
        self.channel = channel
        self._deliver = deliver

    async def start(self) -> None:
        """Listen (returns once Redis confirmed the subscription)."""
        await self.bus.subscribe(self.channel, self._on_message)

    async def announce(self, payload: bytes) -> bool:
        """Deliver here at once, and to every other node; False if Redis could not take it
        (the other nodes catch up when they notice the gap, or never hear a mere hint)."""
        self._deliver(payload)
        try:
            await self.bus.publish(self.channel, msgpack.packb([self.bus.node_id, payload],
                                                               use_bin_type=True))
        except BusUnavailable as exc:
            log.warning("feed %s: not announced to other nodes: %s", self.channel, exc)
            return False
        return True

    def _on_message(self, _channel: str, data: bytes) -> None:
        try:
            origin, payload = msgpack.unpackb(data)
            if not isinstance(origin, str) or not isinstance(payload, bytes):
                raise ValueError("not [node, payload]")
        except Exception as exc:
            log.warning("feed %s: dropped a malformed message: %s", self.channel, exc)
            return
        if origin != self.bus.node_id:
            self._deliver(payload)


class Revocations:
    """Token revocations announced to every node: ``on_revoked(digests)`` runs on each."""

    def __init__(self, bus: Bus, on_revoked: Callable[[list[str]], None]) -> None:
        self._on_revoked = on_revoked
        self.feed = Feed(bus, bus.keys.revocations_channel, self._deliver)

    async def start(self) -> None:
        await self.feed.start()

    async def announce(self, digests: Sequence[str]) -> bool:
        """Tell every node (this one included) that these token digests are revoked."""
        return await self.feed.announce(msgpack.packb(list(digests)))

    def _deliver(self, payload: bytes) -> None:
        digests = msgpack.unpackb(payload)
        if isinstance(digests, list) and all(isinstance(d, str) for d in digests):
            self._on_revoked(digests)
        else:
            log.warning("revocations: dropped a malformed announcement")
