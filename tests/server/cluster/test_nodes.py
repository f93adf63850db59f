"""The node registry against a real Redis: heartbeats, dead nodes claimed once, a node
coming back, and ``tessera cluster status``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import redis.asyncio as aioredis

from server.cluster.keys import Keys
from server.cluster.nodes import REWRITE_EVERY, NodeRegistry, cluster_status
from server.cluster.status import format_status

from .conftest import eventually, free_port


def registry(redis: aioredis.Redis, keys: Keys, node_id: str, **options: object
             ) -> NodeRegistry:
    return NodeRegistry(redis, keys, node_id, "inc-" + node_id, f"127.0.0.1:{free_port()}",
                        **options)  # type: ignore[arg-type]


async def test_heartbeats_say_who_is_alive_and_what_they_hold(
        redis: aioredis.Redis, keys: Keys) -> None:
    a = registry(redis, keys, "a", report=lambda: (["g2", "g1"], 7))
    b = registry(redis, keys, "b")
    first = await a.beat()
    await b.beat()
    nodes = await cluster_status(redis, keys)
    assert [(n.node_id, n.alive, n.games, n.connections) for n in nodes] == [
        ("a", True, ("g1", "g2"), 7), ("b", True, (), 0)]
    assert nodes[0].incarnation == "inc-a" and nodes[0].started_ms == first
    assert nodes[0].address == a.address and nodes[0].pid > 0
    table = format_status(keys.cluster, nodes)
    assert "2 nodes alive, 0 dead" in table and "games: g1 g2" in table


async def test_a_beat_writes_the_games_when_they_changed(redis: aioredis.Redis, keys: Keys
                                                         ) -> None:
    held = ["g1"]
    a = registry(redis, keys, "a", report=lambda: (list(held), 0))

    async def listed() -> tuple[str, ...]:
        [node] = await cluster_status(redis, keys)
        return node.games

    await a.beat()
    assert await listed() == ("g1",)
    await redis.delete(keys.node_games("a"))  # as if lost: unchanged, not written again
    await a.beat()
    assert await listed() == ()
    held.append("g2")
    await a.beat()
    assert await listed() == ("g1", "g2")
    await redis.delete(keys.node_games("a"))
    for _ in range(REWRITE_EVERY):  # written again every REWRITE_EVERY beats anyway
        await a.beat()
    assert await listed() == ("g1", "g2")


async def test_a_silent_node_is_dead_and_claimed_once(redis: aioredis.Redis, keys: Keys
                                                      ) -> None:
    claimed: list[tuple[str, str]] = []
    claimed_at: list[float] = []

    def on_dead(dead: str, by: str) -> None:
        claimed.append((dead, by))
        claimed_at.append(time.monotonic())

    options = {"interval_s": 0.2, "dead_after_s": 1.0}
    survivors = [registry(redis, keys, name, on_dead=lambda dead, by=name: on_dead(dead, by),
                          **options) for name in ("a", "b")]
    doomed = registry(redis, keys, "c", report=lambda: (["g9"], 1), **options)
    beat_at = time.monotonic()
    await doomed.beat()
    for node in survivors:
        node.start()
    try:
        await eventually(lambda: len(claimed) == 1, 5)
        # never while c was alive: claimed at least dead_after_s after its last beat
        # began (a bound on the claim's time, which a busy machine only makes later)
        assert claimed_at[0] - beat_at >= 1.0, claimed_at[0] - beat_at
        await asyncio.sleep(0.6)  # both survivors looked again: still one claim
        assert [dead for dead, _ in claimed] == ["c"]
        [c] = [n for n in await cluster_status(redis, keys) if n.node_id == "c"]
        assert not c.alive and c.games == ("g9",) and c.age_ms >= 1000

        await doomed.beat()  # c comes back: alive, and its next death is claimed again
        [c] = [n for n in await cluster_status(redis, keys) if n.node_id == "c"]
        assert c.alive
        await eventually(lambda: len(claimed) == 2, 5)
        assert [dead for dead, _ in claimed] == ["c", "c"]
    finally:
        for node in survivors:
            await node.close()
    assert [n.node_id for n in await cluster_status(redis, keys)] == ["c"]  # a, b left


async def test_a_node_whose_process_is_gone_is_dead_at_once_a_slow_one_is_not(
        redis: aioredis.Redis, keys: Keys) -> None:
    """A node that names its channel is dead once nobody listens there and it missed a
    beat, long before its ``dead_after_s``; a node that still listens, only late with its
    beat, is alive; so is one that just beat and does not listen yet (starting)."""
    options = {"interval_s": 0.2, "dead_after_s": 60.0}
    nodes = {name: registry(redis, keys, name, channel=keys.node_channel(name), **options)
             for name in ("gone", "slow", "new")}
    watcher = registry(redis, keys, "w", **options)
    listener = redis.pubsub()
    await listener.subscribe(keys.node_channel("gone"), keys.node_channel("slow"))
    try:
        for node in [*nodes.values(), watcher]:
            await node.beat()
        assert await watcher.check_dead() == []
        await asyncio.sleep(0.3)  # every one of them missed a beat
        await nodes["new"].beat()
        assert await watcher.check_dead() == []
        await listener.unsubscribe(keys.node_channel("gone"))  # its process died
        assert await watcher.check_dead() == ["gone"]
        found = {n.node_id: n for n in await cluster_status(redis, keys)}
        assert [(name, found[name].alive, found[name].listening) for name in nodes] == [
            ("gone", False, False), ("slow", True, True), ("new", True, False)]
        assert found["gone"].owner == "gone/inc-gone"
    finally:
        await listener.aclose()


async def test_long_dead_nodes_are_forgotten(redis: aioredis.Redis, keys: Keys) -> None:
    old = registry(redis, keys, "old", dead_after_s=0.2, interval_s=0.1)
    await old.beat()
    watcher = registry(redis, keys, "w", forget_after_s=1.5)
    await asyncio.sleep(0.3)
    await watcher.beat()
    assert await watcher.check_dead() == ["old"]
    assert "old" in [n.node_id for n in await watcher.nodes()]
    await asyncio.sleep(1.3)
    await watcher.check_dead()
    assert [n.node_id for n in await watcher.nodes()] == ["w"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server", "cluster", "status", *args],
                          capture_output=True, text=True, timeout=60)


async def test_cluster_status_command(redis_url: str, redis: aioredis.Redis, keys: Keys
                                      ) -> None:
    a = registry(redis, keys, "alpha", report=lambda: (["k3v9q2x7ma"], 2), dead_after_s=120)
    await a.beat()
    done = await asyncio.to_thread(cli, "--cluster", redis_url, "--cluster-name", keys.cluster)
    assert done.returncode == 0, done.stderr
    assert f"cluster {keys.cluster}: 1 node alive, 0 dead" in done.stdout
    [line] = [row for row in done.stdout.splitlines() if row.startswith("alpha")]
    assert line.split()[1] == "alive" and "k3v9q2x7ma" in done.stdout
    done = await asyncio.to_thread(cli, "--cluster", redis_url, "--cluster-name", keys.cluster,
                                   "--json")
    [node] = [json.loads(row) for row in done.stdout.splitlines()]
    assert (node["node_id"], node["alive"], node["games"], node["connections"]) == (
        "alpha", True, ["k3v9q2x7ma"], 2)
    done = await asyncio.to_thread(cli, "--cluster", f"redis://127.0.0.1:{free_port()}/0")
    assert done.returncode == 1 and "cannot read the cluster" in done.stderr
    done = await asyncio.to_thread(cli, "--cluster", redis_url, "--cluster-name", "a:b")
    assert done.returncode == 2 and "cluster name" in done.stderr
