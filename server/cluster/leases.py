"""Leases: one owner per live game, in Redis, with an expiry the owner keeps renewing.

A lease is the key ``tessera:{cluster}:lease:{game_id}`` holding its owner's value (the
node id and the process's incarnation, ``owner_value``) with an expiry of ``ttl_ms``:

    acquire   ``SET key owner NX PX ttl``: only if nobody holds it (or we do already)
    renew     a Lua script extends the expiry only where the value is still ours; one call
              renews up to ``batch`` leases, and one task renews all of a node's leases
              every ``ttl / 3``
    release   compare-and-delete (Lua): never deletes a lease someone else took over
    takeover  a lease that expired (its owner died, or paused past it) is acquired again
              by anyone with ``acquire``

A lease alone cannot stop an owner that paused past its expiry from writing afterwards
(it does not know it paused): that is what the epoch in PostgreSQL is for (``fencing``).
The lease decides who *should* own a game; the epoch makes the database refuse anyone
else. So the owner also stops acting by itself as soon as it cannot be sure: ``on_lost``
is called when a renewal finds the key gone or someone else's, and also when Redis could
not be reached for as long as the lease lasts (``holds`` turns false then, measured from
when the last successful renewal was *sent*, less a margin for clock rate differences).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from server.tasks import checkpoint, stop

from .keys import Keys, as_str, check_name

log = logging.getLogger(__name__)

LostReason = Literal["taken", "expired", "unconfirmed"]
"""taken: another owner holds it; expired: the key is gone; unconfirmed: Redis could not
be reached for the lease's whole time."""

RENEW = """
local out = {}
for i, key in ipairs(KEYS) do
  local value = redis.call('GET', key)
  if value == ARGV[1] then
    redis.call('PEXPIRE', key, ARGV[2])
    out[i] = 1
  elseif value then
    out[i] = -1
  else
    out[i] = 0
  end
end
return out
"""
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
DRIFT_MARGIN = 0.1  # a lease counts as held locally for 90% of its time after the renewal


def owner_value(node_id: str, incarnation: str) -> str:
    """The value a node's leases hold: its id and this process's incarnation, so that a
    node restarted under the same id does not take its predecessor's leases for its own."""
    return f"{check_name('a node id', node_id)}/{incarnation}"


def owner_node(value: str) -> str:
    """The node id in a lease's value (where to route a game's requests)."""
    return value.partition("/")[0]


async def lease_owners(redis: aioredis.Redis, keys: Keys, game_ids: Sequence[str]
                       ) -> dict[str, str | None]:
    """The node id holding each game's lease now (None: nobody holds it)."""
    values = await redis.mget([keys.lease(game_id) for game_id in game_ids]) if game_ids else []
    return {game_id: None if value is None else owner_node(as_str(value))
            for game_id, value in zip(game_ids, values, strict=True)}


@dataclass(slots=True)
class _Lease:
    game_id: str
    valid_until: float  # time.monotonic()


@dataclass(slots=True)
class LeaseStats:
    acquired: int = 0
    refused: int = 0  # acquire found another owner
    released: int = 0
    lost: int = 0
    renew_calls: int = 0  # script calls (each renews up to ``batch`` leases)
    renew_failures: int = 0  # rounds that could not reach Redis


class Leases:
    """The leases one node holds; see the module docstring.

    ::

        leases = Leases(bus.redis, keys, owner_value(node_id, incarnation), on_lost=drop)
        leases.start()                        # the renewal task
        if await leases.acquire(game_id): ... # then take the game over in PostgreSQL
        await leases.release(game_id)         # the game ended
        await leases.close()                  # stop renewing (leases expire on their own)
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        keys: Keys,
        owner: str,
        *,
        ttl_ms: int = 5000,
        renew_every_s: float | None = None,
        batch: int = 500,
        on_lost: Callable[[str, LostReason], object] | None = None,
    ) -> None:
        if ttl_ms < 10:
            raise ValueError(f"ttl_ms must be >= 10, not {ttl_ms}")
        if batch < 1:
            raise ValueError(f"batch must be >= 1, not {batch}")
        self.redis = redis
        self.keys = keys
        self.owner = owner
        self.ttl_ms = ttl_ms
        self.renew_every_s = ttl_ms / 3000 if renew_every_s is None else renew_every_s
        self.batch = batch
        self._on_lost = on_lost
        self._held: dict[str, _Lease] = {}
        self._renew = redis.register_script(RENEW)
        self._release = redis.register_script(RELEASE)
        self._task: asyncio.Task[None] | None = None
        self.stats = LeaseStats()

    # -- one lease -----------------------------------------------------------------------
    async def acquire(self, game_id: str) -> bool:
        """Take the lease if nobody holds it (True also if we hold it already).

        Raises RedisError if Redis cannot be reached (the caller does not own the game).
        """
        key = self.keys.lease(game_id)
        sent = time.monotonic()
        taken = await self.redis.set(key, self.owner, nx=True, px=self.ttl_ms)
        if not taken:
            [mine] = await self._renew(keys=[key], args=[self.owner, self.ttl_ms])
            if mine != 1:
                self.stats.refused += 1
                return False
        self._held[game_id] = _Lease(game_id, self._valid_until(sent))
        self.stats.acquired += 1
        return True

    async def release(self, game_id: str) -> bool:
        """Give the lease up (the game ended, or this node is stopping); False if it was
        not ours any more. Local state forgets it whatever Redis says."""
        self._held.pop(game_id, None)
        try:
            deleted = await self._release(keys=[self.keys.lease(game_id)], args=[self.owner])
        except RedisError as exc:
            log.warning("leases: releasing %s: %s (it expires by itself)", game_id, exc)
            return False
        self.stats.released += int(bool(deleted))
        return bool(deleted)

    async def break_lease(self, game_id: str, value: str) -> bool:
        """Delete a lease if it still holds ``value``: one of an earlier incarnation of this
        node (a process that died and was started again under the same node id), whose
        games need not wait for its expiry. True if it was deleted."""
        return bool(await self._release(keys=[self.keys.lease(game_id)], args=[value]))

    async def owner_of(self, game_id: str) -> str | None:
        """The lease's current value (``owner_node`` of it is where the game lives)."""
        value = await self.redis.get(self.keys.lease(game_id))
        return None if value is None else as_str(value)

    def holds(self, game_id: str) -> bool:
        """Whether this node may still act for the game: its lease was confirmed recently
        enough (see the module docstring). False once it is lost or released."""
        lease = self._held.get(game_id)
        return lease is not None and lease.valid_until > time.monotonic()

    @property
    def held(self) -> frozenset[str]:
        """The games this node holds (or held until the current renewal round)."""
        return frozenset(self._held)

    # -- renewal -------------------------------------------------------------------------
    async def renew_all(self) -> None:
        """One renewal round over every lease, ``batch`` keys per script call."""
        leases = list(self._held.values())
        sent = time.monotonic()
        try:
            for start in range(0, len(leases), self.batch):
                chunk = leases[start:start + self.batch]
                outcomes = await self._renew(
                    keys=[self.keys.lease(lease.game_id) for lease in chunk],
                    args=[self.owner, self.ttl_ms])
                self.stats.renew_calls += 1
                self._apply(chunk, outcomes, sent)
        except RedisError as exc:
            self.stats.renew_failures += 1
            log.warning("leases: renewal failed: %s", exc)
        now = time.monotonic()
        self._lose([lease for lease in list(self._held.values()) if lease.valid_until <= now],
                   "unconfirmed")

    def _apply(self, chunk: list[_Lease], outcomes: Iterable[int], sent: float) -> None:
        taken: list[_Lease] = []
        gone: list[_Lease] = []
        for lease, outcome in zip(chunk, outcomes, strict=True):
            if self._held.get(lease.game_id) is not lease:
                continue  # released or acquired again during this round
            if outcome == 1:
                lease.valid_until = self._valid_until(sent)
            else:
                (taken if outcome == -1 else gone).append(lease)
        self._lose(taken, "taken")
        self._lose(gone, "expired")

    def _lose(self, leases: list[_Lease], reason: LostReason) -> None:
        for lease in leases:
            if self._held.get(lease.game_id) is not lease:
                continue
            del self._held[lease.game_id]
            self.stats.lost += 1
            log.warning("leases: lost %s (%s)", lease.game_id, reason)
            if self._on_lost is not None:
                try:
                    self._on_lost(lease.game_id, reason)
                except Exception:
                    log.exception("leases: on_lost failed")

    def _valid_until(self, sent: float) -> float:
        return sent + self.ttl_ms / 1000 * (1 - DRIFT_MARGIN)

    def start(self) -> None:
        """Start the renewal task (every ``renew_every_s``)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._renew_forever(), name="tessera-leases")

    async def _renew_forever(self) -> None:
        while True:
            checkpoint()
            await asyncio.sleep(self.renew_every_s)
            try:
                await self.renew_all()
            except Exception:  # a bug here must not stop renewing
                log.exception("leases: renewal round failed")

    async def close(self, *, release: bool = False) -> None:
        """Stop renewing; with ``release``, give every lease up (a clean stop: others
        take the games over at once instead of after the expiry)."""
        if self._task is not None:
            await stop([self._task])
            self._task = None
        if release:
            for game_id in list(self._held):
                await self.release(game_id)
