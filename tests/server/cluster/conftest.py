"""Fixtures for the cluster tests: the real Redis, a private Redis to restart, PostgreSQL.

``redis_url`` is ``TESSERA_TEST_REDIS_URL`` (``.ci/run`` sets it to the machine's Redis on
127.0.0.1:6379); when it is unset or unreachable the test is skipped with the reason. That
Redis is shared by everyone on the machine, so every test gets a fresh random cluster name
(``keys``): its keys and channels live under ``tessera:{name}:`` and are deleted afterwards.

Tests that restart Redis never touch the shared one: ``private_redis`` starts a
``redis-server`` of the test's own on a free port in a temporary directory (skipped if
``redis-server`` is not installed) and can stop and start it again on the same port.

``db`` (every backend) comes from the storage tests' fixtures.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from server.cluster.keys import Keys
from tests.server.conftest import (
    _pg_schema,
    forget_cluster,
    pg_url_or_skip,
    redis_url_or_skip,
)
from tests.server.storage.conftest import db  # noqa: F401  (a fixture, used by name)
from tests.server.support import ServerProcess


@pytest.fixture
async def redis_url() -> str:
    """The shared test Redis, or a skip saying why there is none."""
    return await redis_url_or_skip()


@pytest.fixture
async def keys(redis_url: str) -> AsyncIterator[Keys]:
    """A cluster name of this test's own; its keys are deleted afterwards."""
    names = Keys(f"test-{uuid.uuid4().hex[:12]}")
    yield names
    await forget_cluster(redis_url, names)


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """A plain client on the shared test Redis, to look at what the code under test did."""
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivateRedis:
    """A ``redis-server`` owned by one test: nothing kept on disk, stoppable, restartable
    on the same port (so clients reconnect to the same URL)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert self.process is None, "already running"
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--daemonize", "no",
             "--dir", str(self.directory), "--logfile", str(self.directory / "redis.log")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self.log()}")
            time.sleep(0.02)
        raise RuntimeError(f"redis-server did not listen on {self.port}: {self.log()}")

    def stop(self) -> None:
        """Stop it at once (SIGKILL: like a crash; it keeps nothing anyway)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def log(self) -> str:
        path = self.directory / "redis.log"
        return path.read_text()[-2000:] if path.exists() else "(no log)"


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A Redis of this test's own, started (see ``PrivateRedis``)."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed: cannot start a Redis to restart")
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def eventually(check: object, timeout_s: float = 10.0, every_s: float = 0.02) -> None:
    """Wait until ``check()`` is true (a callable returning a bool or an awaitable of one)."""
    deadline = time.monotonic() + timeout_s
    while True:
        outcome = check()  # type: ignore[operator]
        if asyncio.iscoroutine(outcome):
            outcome = await outcome
        if outcome:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout_s} s: {check!r}")
        await asyncio.sleep(every_s)


# -- clusters of real node processes ---------------------------------------------------------
class Cluster:
    """Node processes (``python -m server serve --cluster ...``) of one test's cluster, on a
    PostgreSQL schema of the test's own; every node is stopped at the end."""

    def __init__(self, db_url: str, redis_url: str, name: str, workdir: Path) -> None:
        self.db_url = db_url
        self.redis_url = redis_url
        self.cluster_name = name
        self.workdir = workdir
        self.nodes: dict[str, ServerProcess] = {}

    async def start(self, node_id: str, *extra: str, timeout: float = 30.0) -> ServerProcess:
        """Start (or start again) the node ``node_id``; ready within ``timeout`` s."""
        node = self.nodes.get(node_id)
        if node is None:
            directory = self.workdir / node_id
            directory.mkdir()
            node = self.nodes[node_id] = ServerProcess(
                self.db_url, directory, "--cluster", self.redis_url, "--cluster-name",
                self.cluster_name, "--node-id", node_id, "--grace", "0.4",
                # one guest budget per address over the whole cluster, and these tests
                # make many guests from 127.0.0.1 (on one process each test starts anew)
                "--guest-burst", "10000", *extra)
        await node.start(timeout)
        return node

    async def start_nodes(self, node_ids: tuple[str, ...], *extra: str,
                          timeout: float = 30.0) -> list[ServerProcess]:
        """Start the nodes ``node_ids`` at once (each waits for its own readiness; the
        first migrations are serialized by the migrators' lock), in that order."""
        return list(await asyncio.gather(*(self.start(node_id, *extra, timeout=timeout)
                                           for node_id in node_ids)))

    def logs(self) -> str:
        return "\n".join(f"--- {node_id}:\n{node.log()[-3000:]}"
                         for node_id, node in self.nodes.items())

    def stop_all(self) -> None:
        for node in self.nodes.values():
            if node.proc is not None and node.proc.poll() is None:
                with contextlib.suppress(Exception):
                    node.proc.send_signal(signal.SIGCONT)
                    node.stop(signal.SIGKILL, 10)


@pytest.fixture
async def cluster(redis_url: str, keys: Keys, tmp_path: Path) -> AsyncIterator[Cluster]:
    """A cluster of this test's own (nodes started by the test), on the shared Redis and
    a fresh PostgreSQL schema; skipped with the reason if either is missing."""
    url = await pg_url_or_skip("cluster")
    async with _pg_schema(url) as role_url:
        running = Cluster(role_url, redis_url, keys.cluster, tmp_path)
        try:
            yield running
        finally:
            running.stop_all()


class PrivatePostgres:
    """A PostgreSQL server of one test's own (initdb in a temporary directory, run as the
    ``postgres`` user), to restart during play; trust authentication on loopback."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="tessera-pg-"))
        self.data = self.directory / "data"
        self.port = free_port()
        self.url = f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"
        shutil.chown(self.directory, "postgres")
        self._as_postgres("initdb", "-A", "trust", "-U", "postgres", "-D", str(self.data),
                          "--no-sync")

    def _as_postgres(self, *command: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *command], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)

    def start(self) -> None:
        self._as_postgres("pg_ctl", "-D", str(self.data), "-w", "-l",
                          str(self.directory / "log"), "-o",
                          f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 "
                          "-c fsync=off", "start")

    def stop(self, mode: str = "immediate") -> None:
        """``immediate``: like a crash (no checkpoint), then a recovery at the next start."""
        with contextlib.suppress(subprocess.CalledProcessError):
            self._as_postgres("pg_ctl", "-D", str(self.data), "-w", "-m", mode, "stop")

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture
def private_postgres() -> Iterator[PrivatePostgres]:
    """A PostgreSQL server of this test's own, started (skipped without initdb/runuser)."""
    if shutil.which("initdb") is None or shutil.which("runuser") is None or os.getuid() != 0:
        pytest.skip("cannot start a private PostgreSQL (needs initdb, and runuser as root)")
    server = PrivatePostgres()
    try:
        server.start()
        yield server
    finally:
        server.remove()
