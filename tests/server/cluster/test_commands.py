"""``tessera cluster owners|forget|redis-cpu`` (``server/cluster/commands.py``) run as the
tools run them, against the real Redis (``cluster status``: ``test_nodes.py``)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from server.cluster.commands import DELETE_BATCH
from server.cluster.keys import Keys
from server.cluster.leases import Leases, owner_value
from server.cluster.nodes import NodeRegistry
from tests.server.conftest import forget_cluster

from .conftest import free_port


async def cluster(*args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "server", "cluster", *args],
        capture_output=True, text=True, timeout=60)


@pytest.fixture
async def other(redis_url: str) -> AsyncIterator[Keys]:
    """A second cluster name on the same Redis, which a forget of the first must spare."""
    names = Keys(f"test-{uuid.uuid4().hex[:12]}")
    yield names
    await forget_cluster(redis_url, names)


async def test_owners_names_the_node_holding_each_lease(
        redis_url: str, redis: aioredis.Redis, keys: Keys) -> None:
    n1 = Leases(redis, keys, owner_value("n1", "inc-1"), ttl_ms=60_000)
    n2 = Leases(redis, keys, owner_value("n2", "inc-7"), ttl_ms=60_000)
    assert await n1.acquire("g1") and await n2.acquire("g2") and await n1.acquire("g3")
    await n1.release("g3")
    done = await cluster("owners", "g1", "g2", "g3", "--cluster", redis_url,
                         "--cluster-name", keys.cluster)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"g1": "n1", "g2": "n2", "g3": None}
    done = await cluster("owners", "g1", "--cluster", redis_url)  # another cluster's name
    assert (done.returncode, json.loads(done.stdout)) == (0, {"g1": None})


async def test_forget_deletes_one_cluster_s_keys_and_no_other_s(
        redis_url: str, redis: aioredis.Redis, keys: Keys, other: Keys) -> None:
    for names in (keys, other):
        await NodeRegistry(redis, names, "n1", "inc-1", "127.0.0.1:1").beat()
        await Leases(redis, names, owner_value("n1", "inc-1"), ttl_ms=60_000).acquire("g1")
    many = {keys.bucket("account", user): "1" for user in range(2 * DELETE_BATCH + 1)}
    await redis.mset(many)  # more than a SCAN step and a DEL of them take
    kept = sorted([key async for key in redis.scan_iter(match=other.prefix + "*")])
    made = len([key async for key in redis.scan_iter(match=keys.prefix + "*")])
    assert made > len(many) and kept

    refused = await cluster("forget", "--cluster", redis_url)  # the name is not optional
    assert refused.returncode == 2 and "--cluster-name" in refused.stderr
    done = await cluster("forget", "--cluster", redis_url, "--cluster-name", keys.cluster)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"cluster {keys.cluster}: {made} keys deleted"
    assert [key async for key in redis.scan_iter(match=keys.prefix + "*")] == []
    assert sorted([key async for key in redis.scan_iter(match=other.prefix + "*")]) == kept
    done = await cluster("forget", "--cluster", redis_url, "--cluster-name", keys.cluster)
    assert done.stdout.strip() == f"cluster {keys.cluster}: 0 keys deleted"


async def test_redis_cpu_reads_the_server_s_cpu_seconds(
        redis_url: str, redis: aioredis.Redis) -> None:
    before = await redis.info("cpu")
    done = await cluster("redis-cpu", "--cluster", redis_url)
    after = await redis.info("cpu")
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)
    assert set(read) == {"used_cpu_user", "used_cpu_sys"}
    for name in read:
        assert float(before[name]) <= read[name] <= float(after[name])


async def test_a_redis_that_cannot_be_reached_is_one_line_and_status_1() -> None:
    gone = f"redis://127.0.0.1:{free_port()}/0"
    for args in (["owners", "g1"], ["forget", "--cluster-name", "x"], ["redis-cpu"]):
        done = await cluster(*args, "--cluster", gone)
        assert done.returncode == 1, (args, done.stderr)
        assert done.stderr.startswith(f"tessera: cannot read the cluster at {gone}")
    done = await cluster("owners", "g1", "--cluster", gone, "--cluster-name", "a:b")
    assert done.returncode == 2 and "cluster name" in done.stderr
