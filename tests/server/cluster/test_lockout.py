"""Failed logins and locks (``server.lockout.LockoutStore``): one contract, run against the
in-memory table and against Redis; nodes sharing Redis share the locks."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from server.cluster.keys import Keys
from server.cluster.lockout import RedisLockout
from server.lockout import LockoutStore, MemoryLockout


@pytest.fixture(params=["memory", "redis"])
def lockout(request: pytest.FixtureRequest) -> LockoutStore:
    if request.param == "memory":
        return MemoryLockout(after=2, base_s=60.0)
    return RedisLockout(request.getfixturevalue("redis"), request.getfixturevalue("keys"),
                        after=2, base_s=60.0)


async def test_failures_lock_the_pair_alone_and_a_success_forgets_them(
        lockout: LockoutStore) -> None:
    key, other = (1, "127.0.0.2"), (1, "127.0.0.3")
    assert await lockout.failed(key) == (True, 0.0)
    assert await lockout.locked_for(key) == 0.0
    assert await lockout.failed(key) == (True, 60.0)  # the second: locked for base_s
    counted, left = await lockout.failed(key)  # late: neither counted nor longer
    assert not counted and 59.0 <= left <= 60.0
    assert 59.0 <= await lockout.locked_for(key) <= 60.0
    assert await lockout.locked_for(other) == 0.0  # another address: free
    await lockout.succeeded(other)
    await lockout.succeeded(key)
    assert await lockout.locked_for(key) == 0.0
    assert await lockout.failed(key) == (True, 0.0)  # from zero again


async def test_nodes_sharing_redis_share_the_count_and_the_lock(
        redis_url: str, keys: Keys) -> None:
    clients = [aioredis.Redis.from_url(redis_url) for _ in range(3)]
    try:
        nodes = [RedisLockout(client, keys, after=3, base_s=30.0) for client in clients]
        key = (7, "10.0.0.9")
        outcomes = await asyncio.gather(*(nodes[k % 3].failed(key) for k in range(6)))
        assert sum(counted for counted, _ in outcomes) == 3  # counted until the lock, once
        assert [lock for counted, lock in outcomes if counted and lock] == [30.0]
        for node in nodes:  # every node sees the one lock
            assert 29.0 <= await node.locked_for(key) <= 30.0
        ttl = await clients[0].pttl(keys.lockout(*key))
        assert 30_000 < ttl <= 30_000 + 3_600_000  # forgotten an hour after the lock
    finally:
        for client in clients:
            await client.aclose()
