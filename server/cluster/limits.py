"""Per-account token buckets every node shares: a Lua token bucket in Redis.

An account connected to two nodes has one budget, not one per node. ``take(subject)``
answers as ``server.ratelimit.TokenBucket.take`` does: 0.0 if a token was taken, else the
seconds until one will be there. The bucket's state (tokens, when last refilled) is a hash
per subject, refilled and taken from in one script on Redis's own clock (so nodes whose
clocks differ share it fairly), and it expires once it would be full again anyway.

``AccountLimits`` is the interface; ``MemoryTokenBuckets`` is a lone server's (a
``BucketTable``, as ``server/app.py`` keeps today).
"""

from __future__ import annotations

from typing import Protocol

import redis.asyncio as aioredis

from server.ratelimit import BucketTable

from .keys import Keys

_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'stamp')
local tokens = tonumber(state[1]) or burst
local stamp = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - stamp) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'stamp', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate) + 1000)
return tostring(wait)
"""


class AccountLimits(Protocol):
    async def take(self, subject: str | int) -> float:
        """Take a token for ``subject``: 0.0, or the seconds until one is available."""


class RedisTokenBuckets:
    """Token buckets in Redis: ``rate`` tokens a second, at most ``burst``, per subject of
    one ``scope`` (e.g. ``account``: one budget per account over all its connections)."""

    def __init__(self, redis: aioredis.Redis, keys: Keys, scope: str, rate: float,
                 burst: float) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"a token bucket needs rate > 0 and burst >= 1, not {rate}, "
                             f"{burst}")
        self.keys = keys
        self.scope = scope
        self.rate = rate
        self.burst = burst
        self._take = redis.register_script(_TAKE)

    async def take(self, subject: str | int) -> float:
        wait_ms = await self._take(keys=[self.keys.bucket(self.scope, subject)],
                                   args=[self.rate / 1000, self.burst])
        return float(wait_ms) / 1000


class MemoryTokenBuckets:
    """Token buckets of one process: a ``BucketTable``, which forgets idle subjects."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets = BucketTable(rate, burst)

    async def take(self, subject: str | int) -> float:
        return self._buckets.take(subject)
