"""Who is online across nodes: per-node membership, races between nodes, a dead node's
members gone with its heartbeat and reaped once."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from server.cluster.keys import Keys
from server.cluster.presence import RedisPresence
from server.offers import MemoryPresence, Online, PresenceStore

ALICE = Online(1, "Alice", "human")
BOB = Online(2, "bob", "bot")


def nodes(redis: aioredis.Redis, keys: Keys, live: set[str]) -> dict[str, RedisPresence]:
    return {name: RedisPresence(redis, keys, name, lambda: live) for name in ("a", "b", "c")}


@pytest.fixture(params=["memory", "redis"])
def presence(request: pytest.FixtureRequest) -> PresenceStore:
    if request.param == "memory":
        return MemoryPresence("a")
    return nodes(request.getfixturevalue("redis"), request.getfixturevalue("keys"),
                 {"a", "b", "c"})["a"]


async def test_join_leave_find(presence: PresenceStore) -> None:
    assert await presence.join(ALICE)
    assert not await presence.join(ALICE)  # already online here
    assert await presence.join(BOB)
    found = await presence.find("ALICE")
    assert found is not None and (found.user_id, found.name, found.nodes) == (1, "Alice", ("a",))
    assert [u.name for u in await presence.everyone()] == ["Alice", "bob"]
    assert await presence.leave(ALICE)
    assert not await presence.leave(ALICE)
    assert await presence.find("alice") is None


async def test_a_user_on_two_nodes_is_online_until_the_last_leaves(
        redis: aioredis.Redis, keys: Keys) -> None:
    node = nodes(redis, keys, {"a", "b", "c"})
    assert await node["a"].join(ALICE)
    assert not await node["b"].join(ALICE)  # online already, through a
    found = await node["c"].find("alice")
    assert found is not None and found.nodes == ("a", "b")
    assert not await node["a"].leave(ALICE)  # still on b
    assert await node["b"].leave(ALICE)
    assert await node["c"].everyone() == []


@pytest.mark.parametrize("live", [{"a"}, {"a", "b", "c"}])
async def test_several_found_at_once_each_with_its_nodes(
        redis: aioredis.Redis, keys: Keys, live: set[str]) -> None:
    node = nodes(redis, keys, live)
    await node["a"].join(ALICE)
    await node["b"].join(BOB)
    await node["a"].join(BOB)
    found = await node["a"].find_all(["bob", "nobody", "Alice"])
    assert found[1] is None
    assert found[0] is not None and found[2] is not None
    assert (found[0].name, found[0].nodes) == ("bob", ("a", "b") if len(live) > 1 else ("a",))
    assert (found[2].user_id, found[2].nodes) == (1, ("a",))
    assert await MemoryPresence("a").find_all(["x"]) == [None]


async def test_racing_nodes_see_one_arrival_and_one_departure(redis_url: str, keys: Keys
                                                              ) -> None:
    live = {"a", "b", "c"}
    clients = [aioredis.Redis.from_url(redis_url) for _ in range(3)]
    try:
        node = [RedisPresence(client, keys, name, lambda: live)
                for client, name in zip(clients, "abc", strict=True)]
        for _ in range(20):
            arrived = await asyncio.gather(*(n.join(ALICE) for n in node))
            assert sum(arrived) == 1
            left = await asyncio.gather(*(n.leave(ALICE) for n in node))
            assert sum(left) == 1
    finally:
        for client in clients:
            await client.aclose()


async def test_a_dead_nodes_members_go_with_it_and_are_reaped_once(
        redis: aioredis.Redis, keys: Keys) -> None:
    live = {"a", "b", "c"}
    node = nodes(redis, keys, live)
    carol = Online(3, "carol", "human")
    await node["c"].join(BOB)
    await node["c"].join(carol)
    await node["a"].join(carol)
    assert [u.name for u in await node["a"].everyone()] == ["bob", "carol"]
    live.discard("c")  # c's heartbeat stopped
    assert await node["a"].find("bob") is None  # at once, before anyone cleans up
    assert [(u.name, u.nodes) for u in await node["b"].everyone()] == [("carol", ("a",))]
    assert await node["a"].reap("c") == [Online(2, "bob", "bot")]  # carol is still on a
    assert await node["b"].reap("c") == []
    assert await redis.exists(keys.online("c")) == 0
    live.add("c")  # c comes back empty
    assert await node["c"].join(BOB)


async def test_everyone_is_listed_in_the_order_they_came(presence: PresenceStore) -> None:
    carol = Online(3, "carol", "human", since_ms=1_000)
    alice = Online(1, "Alice", "human", since_ms=2_000)
    assert await presence.join(carol) and await presence.join(alice)
    assert [u.name for u in await presence.everyone()] == ["carol", "Alice"]
