"""The ladder's roster in Redis: bots on any nodes are paired with each other.

Every ladder bot of the cluster, whichever node it joined on, is in the ``ladder`` hash
(user id -> [name, kind, the games it plays], msgpack). One node at a time pairs the
rounds: the one holding ``ladder:leader`` (set-if-absent with expiry, extended by its
holder each round, in one Lua script); the others only refresh their view (for
``ladder_standings``). ``server.ladder.Ladder`` does the pairing, the same on one process.
"""

from __future__ import annotations

import msgpack
import redis.asyncio as aioredis

from server.offers import Entry

from .keys import Keys

_LEAD = """
-- KEYS: the leader key; ARGV: me, ttl ms. 1 if I lead (now or still), else 0
local held = redis.call('GET', KEYS[1])
if not held then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""


def pack_entry(entry: Entry) -> bytes:
    name, kind, games = entry
    packed: bytes = msgpack.packb([name, kind, sorted(games)])
    return packed


def unpack_entry(data: bytes | str) -> Entry:
    name, kind, games = msgpack.unpackb(data.encode() if isinstance(data, str) else data)
    return name, kind, frozenset(games)


class RedisRoster:
    """``LadderRoster`` in Redis; ``me`` names this process as a leader (its lease value),
    ``ttl_ms`` how long its leadership lasts unless extended by its next round."""

    def __init__(self, redis: aioredis.Redis, keys: Keys, me: str, ttl_ms: int) -> None:
        self.redis = redis
        self.keys = keys
        self.me = me
        self.ttl_ms = ttl_ms
        self._lead = redis.register_script(_LEAD)

    async def enter(self, user_id: int, entry: Entry) -> None:
        await self.redis.hset(self.keys.ladder, str(user_id), pack_entry(entry))

    async def exit(self, user_id: int) -> None:
        await self.redis.hdel(self.keys.ladder, str(user_id))

    async def read(self) -> dict[int, Entry]:
        records = await self.redis.hgetall(self.keys.ladder)
        return {int(raw_id): unpack_entry(record)
                for raw_id, record in records.items()}

    async def leading(self) -> bool:
        return bool(await self._lead(keys=[self.keys.ladder_leader],
                                     args=[self.me, self.ttl_ms]))


__all__ = ["RedisRoster"]
