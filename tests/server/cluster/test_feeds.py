"""Lobby events and revocations reach every node once, the announcer's own at once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from server.cluster.bus import Bus
from server.cluster.feeds import Feed, Revocations
from server.cluster.keys import Keys

from .conftest import eventually


@asynccontextmanager
async def bus(url: str, keys: Keys, node_id: str) -> AsyncIterator[Bus]:
    async with Bus(url, keys, node_id) as started:
        await started.wait_connected(5)
        yield started


async def test_an_announcement_reaches_every_node_once(redis_url: str, keys: Keys) -> None:
    heard: dict[str, list[bytes]] = {"a": [], "b": [], "c": []}
    async with bus(redis_url, keys, "a") as a, bus(redis_url, keys, "b") as b, \
            bus(redis_url, keys, "c") as c:
        feeds = {node.node_id: Feed(node, keys.lobby_channel, heard[node.node_id].append)
                 for node in (a, b, c)}
        for feed in feeds.values():
            await feed.start()
        assert await feeds["a"].announce(b"seek_added 1")
        assert heard["a"] == [b"seek_added 1"]  # at once, not through Redis
        await feeds["b"].announce(b"seek_removed 1")
        await eventually(lambda: all(len(got) == 2 for got in heard.values()))
        await a.publish(keys.lobby_channel, b"\x93junk")  # malformed: dropped, feed lives
        await feeds["c"].announce(b"player_online")
        await eventually(lambda: all(len(got) == 3 for got in heard.values()))
        # each node heard each announcement once (its own first: no order across nodes)
        for got in heard.values():
            assert sorted(got) == [b"player_online", b"seek_added 1", b"seek_removed 1"]


async def test_one_nodes_announcements_arrive_in_order(redis_url: str, keys: Keys) -> None:
    heard: list[bytes] = []
    async with bus(redis_url, keys, "a") as a, bus(redis_url, keys, "b") as b:
        here = Feed(a, keys.lobby_channel, lambda _: None)
        await Feed(b, keys.lobby_channel, heard.append).start()
        for n in range(200):
            await here.announce(b"%d" % n)
        await eventually(lambda: len(heard) == 200)
        assert heard == [b"%d" % n for n in range(200)]


async def test_revocations_are_announced_to_every_node(redis_url: str, keys: Keys) -> None:
    revoked: dict[str, list[list[str]]] = {"a": [], "b": []}
    async with bus(redis_url, keys, "a") as a, bus(redis_url, keys, "b") as b:
        on = {node.node_id: Revocations(node, revoked[node.node_id].append)
              for node in (a, b)}
        for revocations in on.values():
            await revocations.start()
        assert await on["a"].announce(["d1" * 32, "d2" * 32])
        await eventually(lambda: revoked["b"] == [["d1" * 32, "d2" * 32]])
        assert revoked["a"] == [["d1" * 32, "d2" * 32]]
