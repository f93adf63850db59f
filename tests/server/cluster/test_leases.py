"""Leases against a real Redis: one owner, renewal in batches, loss, takeover."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from server.cluster.keys import Keys
from server.cluster.leases import Leases, LostReason, owner_node, owner_value

from .conftest import PrivateRedis, eventually


def node(redis: aioredis.Redis, keys: Keys, name: str, lost: list[tuple[str, str]] | None = None,
         **options: int) -> Leases:
    def on_lost(game_id: str, reason: LostReason) -> None:
        if lost is not None:
            lost.append((game_id, reason))

    return Leases(redis, keys, owner_value(name, "i1"), on_lost=on_lost, **options)


async def test_one_owner_at_a_time(redis: aioredis.Redis, keys: Keys) -> None:
    a, b = node(redis, keys, "a"), node(redis, keys, "b")
    assert await a.acquire("g1")
    assert not await b.acquire("g1")
    assert await a.acquire("g1")  # ours already: still ours
    assert await a.owner_of("g1") == "a/i1" and owner_node("a/i1") == "a"
    assert a.holds("g1") and not b.holds("g1")
    assert not await b.release("g1")  # compare-and-delete: not b's to release
    assert await a.owner_of("g1") == "a/i1"
    assert await a.release("g1")
    assert not a.holds("g1") and await a.owner_of("g1") is None
    assert await b.acquire("g1")
    assert (a.stats.acquired, b.stats.refused) == (2, 1)


async def test_concurrent_acquires_give_one_owner(redis: aioredis.Redis, keys: Keys) -> None:
    nodes = [node(redis, keys, f"n{k}") for k in range(8)]
    for game in range(20):
        won = await asyncio.gather(*(n.acquire(f"g{game}") for n in nodes))
        assert sum(won) == 1


async def test_renewal_extends_every_lease_in_batches(redis: aioredis.Redis, keys: Keys) -> None:
    a = node(redis, keys, "a", ttl_ms=60_000, batch=500)
    games = [f"g{k}" for k in range(1100)]
    for game_id in games:
        assert await a.acquire(game_id)

    async def ttls() -> list[int]:
        async with redis.pipeline(transaction=False) as pipe:
            for game_id in games:
                pipe.pttl(keys.lease(game_id))
            return list(await pipe.execute())

    await asyncio.sleep(1.0)
    before = await ttls()
    await a.renew_all()
    assert a.stats.renew_calls == 3  # 500 + 500 + 100
    after = await ttls()
    # every lease was extended: each has more time left than before the renewal, by far
    # more than reading them takes (the sleep)
    assert all(later > earlier for earlier, later in zip(before, after, strict=True))
    assert a.held == frozenset(games)


async def test_the_renewal_task_keeps_leases_past_their_ttl(redis: aioredis.Redis, keys: Keys
                                                            ) -> None:
    lost: list[tuple[str, str]] = []
    # renewed every ttl/3 and held locally for 90% of the ttl after: a ttl of 1.5 s lets
    # the loop be late by most of a second (a busy machine) before a renewal misses
    a = node(redis, keys, "a", lost, ttl_ms=1500)
    assert await a.acquire("g1")
    a.start()
    try:
        await asyncio.sleep(4.6)  # more than three times the ttl
        assert a.holds("g1") and await a.owner_of("g1") == "a/i1" and lost == []
    finally:
        await a.close(release=True)
    assert await a.owner_of("g1") is None


async def test_an_expired_lease_is_taken_over_and_its_old_owner_told(
        redis: aioredis.Redis, keys: Keys) -> None:
    lost: list[tuple[str, str]] = []
    a = node(redis, keys, "a", lost, ttl_ms=300)  # a pauses: nothing renews its lease
    b = node(redis, keys, "b", ttl_ms=5000)
    assert await a.acquire("g1") and await a.acquire("g2")
    assert not await b.acquire("g1")
    await asyncio.sleep(0.35)
    assert not a.holds("g1")  # a knows by its own clock it may no longer act
    assert await b.acquire("g1")  # takeover
    await a.renew_all()  # a wakes up: g1 is b's, g2 expired and nobody took it
    assert sorted(lost) == [("g1", "taken"), ("g2", "expired")]
    assert a.held == frozenset()
    assert not await a.release("g1")
    assert await b.owner_of("g1") == "b/i1"


async def test_a_deleted_lease_is_reported_lost(redis: aioredis.Redis, keys: Keys) -> None:
    lost: list[tuple[str, str]] = []
    a = node(redis, keys, "a", lost)
    assert await a.acquire("g1")
    await redis.delete(keys.lease("g1"))
    await a.renew_all()
    assert lost == [("g1", "expired")]


async def test_leases_are_lost_when_redis_is_gone_for_their_time(
        private_redis: PrivateRedis) -> None:
    client = aioredis.Redis.from_url(private_redis.url, socket_connect_timeout=0.5,
                                     socket_timeout=0.5)
    lost: list[tuple[str, str]] = []
    a = node(client, Keys("gone"), "a", lost, ttl_ms=1500)
    try:
        assert await a.acquire("g1")
        a.start()
        private_redis.stop()
        await asyncio.sleep(0.3)
        assert lost == []  # not yet: the lease may still be ours
        await eventually(lambda: lost == [("g1", "unconfirmed")], 5)
        assert a.stats.renew_failures >= 1 and not a.holds("g1")
    finally:
        await a.close()
        await client.aclose()


def test_settings_are_checked(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    with pytest.raises(ValueError, match="ttl_ms"):
        Leases(client, Keys("x"), "a/1", ttl_ms=0)
    with pytest.raises(ValueError, match="node id"):
        owner_value("a/b", "1")
