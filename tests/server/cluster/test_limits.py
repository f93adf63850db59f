"""Per-account token buckets: one budget across nodes, in Redis, and its in-memory twin."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from server.cluster.keys import Keys
from server.cluster.limits import AccountLimits, MemoryTokenBuckets, RedisTokenBuckets


@pytest.fixture(params=["memory", "redis"])
def two_nodes(request: pytest.FixtureRequest) -> tuple[AccountLimits, AccountLimits]:
    if request.param == "memory":
        one = MemoryTokenBuckets(10, 3)
        return one, one  # one process: one object
    redis: aioredis.Redis = request.getfixturevalue("redis")
    keys: Keys = request.getfixturevalue("keys")
    return (RedisTokenBuckets(redis, keys, "account", 10, 3),
            RedisTokenBuckets(redis, keys, "account", 10, 3))


async def test_one_budget_per_account_over_every_node(
        two_nodes: tuple[AccountLimits, AccountLimits]) -> None:
    a, b = two_nodes
    waits = [await a.take(7), await b.take(7), await a.take(7), await b.take(7)]
    assert waits[:3] == [0.0, 0.0, 0.0]  # the burst, shared
    assert 0.0 < waits[3] <= 0.1  # one token comes every 0.1 s
    assert await b.take(8) == 0.0  # another account has its own
    await asyncio.sleep(waits[3] + 0.02)
    assert await a.take(7) == 0.0  # refilled
    assert await b.take(7) > 0.0


async def test_an_idle_bucket_expires(redis: aioredis.Redis, keys: Keys) -> None:
    limits = RedisTokenBuckets(redis, keys, "account", 10, 3)
    await limits.take("x")
    assert 0 < await redis.pttl(keys.bucket("account", "x")) <= 1300  # full again by then
    with pytest.raises(ValueError, match="token bucket"):
        RedisTokenBuckets(redis, keys, "account", 0, 3)
