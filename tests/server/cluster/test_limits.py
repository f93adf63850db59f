"""Per-account token buckets: one budget across nodes, in Redis, and its in-memory twin."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from server.cluster.keys import Keys
from server.cluster.limits import RedisTokenBuckets
from server.ratelimit import AccountLimits, MemoryTokenBuckets


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


async def test_tokens_are_taken_in_batches_and_never_spent_twice(
        redis: aioredis.Redis, keys: Keys) -> None:
    a, b = (RedisTokenBuckets(redis, keys, "account", 40, 80, hold_s=0.3) for _ in "ab")
    assert a.batch == 20
    for _ in range(20):  # a batch each: one script call a node
        assert await a.take(1) == 0.0 and await b.take(1) == 0.0
    assert (a.calls, b.calls) == (1, 1)
    granted = 40
    for _ in range(40):  # 120 requests over two nodes against a burst of 80
        granted += (await a.take(1) == 0.0) + (await b.take(1) == 0.0)
    assert 80 <= granted <= 80 + 20  # and what refilled meanwhile (40/s)
    await asyncio.sleep(0.35)  # what a node holds unspent is dropped after hold_s
    a.sweep()
    assert len(a) == 0
