"""Failed logins and their locks across nodes: ``server.lockout``'s rule in Redis.

Each (account, address) pair that failed lately is a hash ``lockout:{account}:{address}``
(``count``, ``until``: when its lock ends, in ms of Redis's own clock); a failure is counted,
and a lock set, by one Lua script, so two nodes racing count each failure once and a
failure known after the lock was set neither counts nor makes it longer. The hash expires
once its lock is over and an hour has passed without a failure (``FORGET_AFTER_S``), as the
in-memory table forgets it. While Redis cannot be reached, logins fail as every request to
the cluster does (``internal_error``): a lock is never skipped.
"""

from __future__ import annotations

import redis.asyncio as aioredis

from server.lockout import FORGET_AFTER_S, LOCKOUT_CEILING_S, Key

from .keys import Keys

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""
_LOCKED = _NOW + """
local ends = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
return math.max(0, ends - now)
"""
_FAILED = _NOW + """
-- ARGV: after, base ms, max ms, forget ms. {counted (0/1), lock ms from now}
local ends = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
if ends > now then return {0, ends - now} end
local count = redis.call('HINCRBY', KEYS[1], 'count', 1)
local lock = 0
if count >= tonumber(ARGV[1]) then
  local doublings = math.min(count - tonumber(ARGV[1]), 32)
  lock = math.min(tonumber(ARGV[3]), tonumber(ARGV[2]) * 2 ^ doublings)
  redis.call('HSET', KEYS[1], 'until', now + lock)
end
redis.call('PEXPIRE', KEYS[1], math.floor(lock + tonumber(ARGV[4])))
return {1, math.floor(lock)}
"""


class RedisLockout:
    """``server.lockout.LockoutStore`` in Redis, for every node of a cluster."""

    def __init__(self, redis: aioredis.Redis, keys: Keys, after: int = 5,
                 base_s: float = 30.0, max_s: float = LOCKOUT_CEILING_S) -> None:
        if after < 1 or base_s <= 0 or max_s <= 0:
            raise ValueError(f"lockout needs after >= 1, base_s > 0 and max_s > 0, not "
                             f"{after}, {base_s}, {max_s}")
        self.redis = redis
        self.keys = keys
        self.after = after
        self.base_ms = int(base_s * 1000)
        self.max_ms = int(min(max_s, LOCKOUT_CEILING_S) * 1000)
        self._locked = redis.register_script(_LOCKED)
        self._failed = redis.register_script(_FAILED)

    async def locked_for(self, key: Key) -> float:
        return int(await self._locked(keys=[self.keys.lockout(*key)])) / 1000

    async def failed(self, key: Key) -> tuple[bool, float]:
        counted, lock_ms = await self._failed(
            keys=[self.keys.lockout(*key)],
            args=[self.after, self.base_ms, self.max_ms, int(FORGET_AFTER_S * 1000)])
        return bool(counted), int(lock_ms) / 1000

    async def succeeded(self, key: Key) -> None:
        await self.redis.delete(self.keys.lockout(*key))

    def sweep(self, now: float | None = None) -> int:
        return 0  # in Redis: each pair expires by itself

    def __len__(self) -> int:
        return 0  # nothing held in this process


__all__ = ["RedisLockout"]
