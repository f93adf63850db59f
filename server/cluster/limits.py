"""Per-account token buckets every node shares: a Lua token bucket in Redis, taken from in
batches.

An account connected to two nodes has one budget, not one per node. ``take(subject)``
answers as ``server.ratelimit.TokenBucket.take`` does: 0.0 if a token was taken, else the
seconds until one will be there. The bucket's state (tokens, when last refilled) is a hash
per subject, refilled and taken from in one script on Redis's own clock (so nodes whose
clocks differ share it fairly), and it expires once it would be full again anyway.

**Batches.** A round trip to Redis for every request would cost a busy node more than the
request itself (a script call costs about as much CPU as a move). So a node
takes up to ``batch`` tokens at once (``rate / 2``, at most ``burst / 4``: 20 of the
default 40/s, burst 80) and spends them from memory; what it has not spent within
``hold_s`` (10 s) is dropped, never given back. The hold is long so that the batch pays off
for a player at play (a move or two a second): one script call per ``batch`` requests, not
one per request. The budget over all nodes therefore holds
exactly: a token is spent at most once, wherever it was taken. What it costs the account is
at most ``batch - 1`` tokens a node it uses, left over when it goes quiet there: a user on
two nodes can be refused slightly before the full budget, never allowed past its rate (a
burst may reach ``burst + batch - 1`` a node: tokens held since a quiet moment). While
Redis cannot be reached, each node keeps the budget by itself (a ``BucketTable``).

``server.ratelimit.AccountLimits`` is the interface; ``MemoryTokenBuckets`` there is a lone
server's.
"""

from __future__ import annotations

import time

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from server.ratelimit import BucketTable

from .keys import Keys

_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local rate, burst, want = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'stamp')
local tokens = tonumber(state[1]) or burst
local stamp = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - stamp) * rate)
local got = math.min(want, math.floor(tokens))
local wait = 0
if got >= 1 then tokens = tokens - got else got = 0; wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'stamp', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate) + 1000)
return {got, tostring(wait)}
"""
HOLD_S = 10.0  # tokens taken in a batch and not spent within this are dropped


class RedisTokenBuckets:
    """Token buckets in Redis: ``rate`` tokens a second, at most ``burst``, per subject of
    one ``scope`` (e.g. ``account``: one budget per account over all its connections),
    taken ``batch`` at a time (module docstring)."""

    def __init__(self, redis: aioredis.Redis, keys: Keys, scope: str, rate: float,
                 burst: float, *, batch: int | None = None, hold_s: float = HOLD_S) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"a token bucket needs rate > 0 and burst >= 1, not {rate}, "
                             f"{burst}")
        self.keys = keys
        self.scope = scope
        self.rate = rate
        self.burst = burst
        self.batch = batch if batch is not None else max(1, min(int(rate / 2),
                                                                int(burst / 4)))
        self.hold_s = hold_s
        self._take = redis.register_script(_TAKE)
        self._held: dict[str | int, tuple[int, float]] = {}  # subject -> (tokens, until)
        self._fallback = BucketTable(rate, burst)
        self.calls = 0  # script calls (for tests and metrics)

    async def take(self, subject: str | int) -> float:
        now = time.monotonic()
        held = self._held.get(subject)
        if held is not None and held[0] > 0 and held[1] > now:
            self._held[subject] = (held[0] - 1, held[1])
            return 0.0
        self.calls += 1
        try:
            got, wait_ms = await self._take(keys=[self.keys.bucket(self.scope, subject)],
                                            args=[self.rate / 1000, self.burst, self.batch])
        except (RedisError, OSError):  # Redis away: this node's own budget meanwhile
            return self._fallback.take(subject)
        if int(got) >= 1:
            self._held[subject] = (int(got) - 1, time.monotonic() + self.hold_s)
            return 0.0
        self._held.pop(subject, None)
        return float(wait_ms) / 1000

    def sweep(self, now: float | None = None) -> int:
        now = time.monotonic() if now is None else now
        before = len(self._held) + self._fallback.sweep(now)
        self._held = {subject: held for subject, held in self._held.items()
                      if held[0] > 0 and held[1] > now}
        return before - len(self._held)

    def __len__(self) -> int:
        return len(self._held)
