"""``clients/privatecluster.py`` on the shared test Redis (``chaos`` and ``bench`` with
``--nodes`` run a private redis-server where one is installed): what it makes through the
server's commands it reads, and at its end nothing of it is left in Redis or PostgreSQL."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import redis.asyncio as aioredis
from sqlalchemy import text

from clients.privatecluster import PrivateCluster
from server.cluster.keys import Keys
from server.storage import make_engine
from tests.server.conftest import pg_url_or_skip, redis_url_or_skip


async def keys_of(redis_url: str, keys: Keys) -> list[bytes]:
    client = aioredis.Redis.from_url(redis_url)
    try:
        return [key async for key in client.scan_iter(match=keys.prefix + "*")]
    finally:
        await client.aclose()


async def roles_named(admin_url: str, role: str) -> int:
    engine = make_engine(admin_url)
    try:
        async with engine.connect() as conn:
            found = await conn.scalar(text("SELECT count(*) FROM pg_roles WHERE rolname = :r"),
                                      {"r": role})
    finally:
        await engine.dispose()
    return int(found or 0)


async def test_a_cluster_on_a_shared_redis_is_read_and_then_forgotten(tmp_path: Path) -> None:
    admin_url = await pg_url_or_skip("private cluster")
    redis_url = await redis_url_or_skip()
    async with PrivateCluster(tmp_path, 1, db_url=admin_url, redis_url=redis_url) as cluster:
        keys, role = Keys(cluster.name), cluster.schema.role
        assert not cluster.private_redis and await roles_named(admin_url, role) == 1
        await asyncio.to_thread(cluster.nodes[0].start)
        listed = await cluster.schema.backend_pids()
        assert listed  # the node's pool
        ended = subprocess.Popen(["true"])  # a process listed once, gone by the reading
        ended.wait()
        backends = await cluster.postgres_cpu_by_pid([*listed, ended.pid])
        assert set(listed) <= set(backends) and ended.pid not in backends  # not read as 0 s
        assert all(cpu >= 0 for cpu in backends.values())
        assert await cluster.redis_cpu_s() > 0
        assert await cluster.lease_owners(["nosuchgame"]) == {"nosuchgame": None}
        cluster.nodes[0].kill()  # as chaos does: its entry in the registry stays behind
        assert await keys_of(redis_url, keys)
    assert await keys_of(redis_url, keys) == []
    assert await roles_named(admin_url, role) == 0
