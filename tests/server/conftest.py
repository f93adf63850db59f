"""Fixtures for the end-to-end tests: a real server, real websocket clients, a real database.

Every test gets an empty database of each backend: a SQLite file in ``tmp_path`` and, when
``TESSERA_TEST_PG_URL`` names a reachable PostgreSQL server, a PostgreSQL schema of its own
(otherwise the PostgreSQL half is skipped with the reason; ``pytest -rs`` lists them).

PostgreSQL isolation follows ``tests/server/storage``: a fresh, uniquely named schema per
test, selected by ``search_path`` and dropped afterwards. The server is configured by URL
alone (and runs as a child process in some tests), so the schema is selected by logging in
as a role made for the test whose ``search_path`` is that schema.

``serve`` starts the server in-process (``server.app.running_server``) with settings made
for testing: a port picked by the OS, a short grace period, no websocket pings.
``server_process`` runs ``python -m server serve`` as a child process, for tests that kill
or restart it.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from server.app import Running, running_server
from server.cluster import commands as cluster_commands
from server.cluster.config import ClusterSettings
from server.cluster.keys import Keys
from server.cluster.node import cluster_node
from server.config import Settings
from server.storage import make_engine, redact_url, sqlite_url
from server.storage.sandbox import create_sandbox, drop_sandbox

from .support import Clients, ServerProcess

PG_URL_ENV = "TESSERA_TEST_PG_URL"
REDIS_URL_ENV = "TESSERA_TEST_REDIS_URL"
GRACE_MS = 400  # claim_win waits this long for an absent opponent
NODES = 3  # the nodes of a test cluster

_pg_unavailable: dict[str, str] = {}  # url -> reason ("" if reachable), once per session
_redis_unavailable: dict[str, str] = {}  # the same for Redis


@dataclass(frozen=True)
class TestDatabase:
    """An empty database for one test: what the server and the CLI are given."""

    __test__ = False  # not a test class, whatever pytest thinks of the name
    backend: str  # sqlite, postgresql, or cluster (PostgreSQL and Redis)
    url: str
    redis_url: str | None = None


async def _pg_reason_unavailable(url: str) -> str | None:
    if url not in _pg_unavailable:
        engine = make_engine(url, connect_args={"timeout": 5})
        try:
            async with engine.connect() as conn:
                await conn.exec_driver_sql("SELECT 1")
            _pg_unavailable[url] = ""
        except Exception as exc:  # whatever the failure, the PostgreSQL half is skipped
            _pg_unavailable[url] = (f"PostgreSQL at {redact_url(url)} unreachable: "
                                    f"{type(exc).__name__}: {exc}")
        finally:
            await engine.dispose()
    return _pg_unavailable[url] or None


async def redis_reason_unavailable(url: str) -> str | None:
    if url not in _redis_unavailable:
        client = aioredis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=3)
        try:
            await client.ping()
            _redis_unavailable[url] = ""
        except Exception as exc:  # whatever the failure, the Redis tests are skipped
            _redis_unavailable[url] = f"Redis at {url} unreachable: {type(exc).__name__}: {exc}"
        finally:
            await client.aclose()
    return _redis_unavailable[url] or None


async def url_or_skip(env: str, what: str,
                      unavailable: Callable[[str], Awaitable[str | None]]) -> str:
    """The URL in the environment variable ``env``, or a skip saying why there is none
    (``what`` names the tests skipped; ``unavailable`` says why a URL cannot be used)."""
    url = os.environ.get(env)
    if not url:
        pytest.skip(f"{what} tests skipped: {env} is not set")
    reason = await unavailable(url)
    if reason:
        pytest.skip(reason)
    return url


async def redis_url_or_skip() -> str:
    """The shared test Redis, or a skip saying why there is none."""
    return await url_or_skip(REDIS_URL_ENV, "cluster", redis_reason_unavailable)


async def pg_url_or_skip(what: str = "PostgreSQL end-to-end") -> str:
    """The test PostgreSQL, or a skip saying why there is none."""
    return await url_or_skip(PG_URL_ENV, what, _pg_reason_unavailable)


async def forget_cluster(redis_url: str, keys: Keys) -> None:
    """Delete a test cluster's keys (as ``tessera cluster forget`` does)."""
    client = aioredis.Redis.from_url(redis_url)
    try:
        await cluster_commands.forget_cluster(client, keys)
    finally:
        await client.aclose()


@contextlib.asynccontextmanager
async def _pg_schema(url: str) -> AsyncIterator[str]:
    """A schema and a role of the same name (the role's search_path), as ``tessera db
    sandbox`` makes them; yields the role's URL."""
    sandbox = await create_sandbox(url, prefix="tessera_e2e_")
    try:
        yield sandbox.url
    finally:
        await drop_sandbox(url, sandbox.role)


@pytest.fixture(params=["sqlite", "postgresql"])
async def database(request: pytest.FixtureRequest, tmp_path: Path
                   ) -> AsyncIterator[TestDatabase]:
    """An empty database of each backend (the server migrates it when it starts); with
    ``both_topologies``, also a cluster's (PostgreSQL and Redis)."""
    if request.param == "sqlite":
        yield TestDatabase("sqlite", sqlite_url(tmp_path / "tessera.db"))
        return
    url = await pg_url_or_skip("cluster" if request.param == "cluster"
                               else "PostgreSQL end-to-end")
    redis_url = await redis_url_or_skip() if request.param == "cluster" else None
    async with _pg_schema(url) as role_url:
        yield TestDatabase(request.param, role_url, redis_url)


both_topologies = pytest.mark.parametrize("database", ["sqlite", "postgresql", "cluster"],
                                         indirect=True)
"""For a protocol scenario: on one process (on both backends) and on a cluster of three
nodes in this process (PostgreSQL and Redis), its players and spectators on different
nodes (``Clients`` connects to each node in turn), so that a feature without its cluster
half fails."""

one_backend = pytest.mark.parametrize("database", ["sqlite"], indirect=True)
"""For a test of what the server keeps in its memory alone (frames, connections, request
budgets, login locks, the hash queue, the lobby's seeks and challenges): on PostgreSQL it
would run the very same code again. What such a test also stores on the way (users, guests,
moves) is tested on both backends by the tests of storage, accounts and games."""


CHEAP_HASHING = {"password_hash_time_cost": 1, "password_hash_memory_kib": 1024}
"""argon2id at a cost a test can afford hundreds of times (about a millisecond a hash)."""
PRODUCTION_HASHING = {"password_hash_time_cost": Settings.password_hash_time_cost,
                      "password_hash_memory_kib": Settings.password_hash_memory_kib}
"""The server's own cost: for the tests of what a hash's cost does (the hash queue, a loop
that keeps answering while hashes run): ``serve(**PRODUCTION_HASHING)``."""


def test_settings(db_url: str, **overrides: Any) -> Settings:
    """Settings for an in-process test server: any free port, short waits, no pings,
    cheap password hashing (``CHEAP_HASHING``)."""
    settings = Settings(host="127.0.0.1", port=0, db_url=db_url, grace_ms=GRACE_MS,
                        ping_interval=None, ping_timeout=None, login_lockout_after=3,
                        login_lockout_base_s=30.0,
                        # every test connects from 127.0.0.1, on a machine that may be
                        # busy: the per-address limits and the hash queue's bound are off
                        # unless a test sets them (tests/server/test_account_limits.py)
                        address_logins_per_minute=0, address_guests_per_hour=0,
                        hash_queue=0, **CHEAP_HASHING)
    return replace(settings, **overrides)


test_settings.__test__ = False  # type: ignore[attr-defined]


@dataclass
class Live:
    """A server running in this process, and clients connected to it (on a cluster:
    ``running`` is the first node, ``nodes`` every node)."""

    running: Running
    settings: Settings
    url: str
    clients: Clients
    nodes: tuple[Running, ...] = ()

    @property
    def http_port(self) -> int:
        return self.running.port


Serve = Callable[..., contextlib.AbstractAsyncContextManager[Live]]


@pytest.fixture
async def serve(database: TestDatabase) -> AsyncIterator[Serve]:
    """Start a server in-process: ``async with serve(grace_ms=...) as live: ...``.

    Servers started one after the other share the test's database, like a restart.
    """

    @contextlib.asynccontextmanager
    async def start(**overrides: Any) -> AsyncIterator[Live]:
        settings = test_settings(database.url, **overrides)
        if database.redis_url is not None:
            async with in_process_cluster(settings, database.redis_url) as nodes:
                urls = tuple(f"ws://127.0.0.1:{node.port}/ws" for node in nodes)
                clients = Clients(urls[0], urls=urls)
                try:
                    yield Live(nodes[0], settings, urls[0], clients, nodes)
                finally:
                    await clients.close_all()
            return
        async with running_server(settings) as running:
            url = f"ws://127.0.0.1:{running.port}/ws"
            clients = Clients(url)
            try:
                yield Live(running, settings, url, clients, (running,))
            finally:
                await clients.close_all()

    yield start


@contextlib.asynccontextmanager
async def in_process_cluster(settings: Settings, redis_url: str, count: int = NODES
                             ) -> AsyncIterator[tuple[Running, ...]]:
    """``count`` nodes of a new cluster, each a server in this process (the first one
    migrates the database before the others start)."""
    keys = Keys(f"test-{uuid.uuid4().hex[:12]}")
    try:
        async with contextlib.AsyncExitStack() as stack:
            nodes = []
            for k in range(count):
                node = await stack.enter_async_context(cluster_node(settings, ClusterSettings(
                    redis_url, keys.cluster, f"n{k}", lease_ms=2000)))
                nodes.append(await stack.enter_async_context(running_server(settings, node)))
            for running in nodes:  # each knows the others (as a node running a while does)
                await running.app.topology.reach.look_again()
            yield tuple(nodes)
    finally:
        await forget_cluster(redis_url, keys)


@pytest.fixture
async def server(serve: Serve) -> AsyncIterator[Live]:
    """A server with the test settings, running for the whole test."""
    async with serve() as live:
        yield live


@pytest.fixture
def clients(server: Live) -> Clients:
    return server.clients


@pytest.fixture
async def open_clients() -> AsyncIterator[Callable[[str], Clients]]:
    """Clients for servers the test starts itself (``open_clients(proc.url)``); all closed
    at the end."""
    made: list[Clients] = []

    def make(url: str) -> Clients:
        made.append(Clients(url))
        return made[-1]

    yield make
    for pool in made:
        await pool.close_all()


ServeOn = Callable[..., ServerProcess]


@pytest.fixture
async def serve_on(tmp_path: Path) -> AsyncIterator[ServeOn]:
    """``serve_on(db_url, *flags)``: a ``python -m server serve`` process on a database the
    test names (a fresh file, a restored copy); all killed at the end."""
    made: list[ServerProcess] = []

    def make(db_url: str, *args: str) -> ServerProcess:
        workdir = tmp_path / f"serve-on-{len(made)}"
        workdir.mkdir()
        made.append(ServerProcess(db_url, workdir, *args))
        return made[-1]

    yield make
    for proc in made:
        if proc.proc is not None and proc.proc.poll() is None:
            proc.proc.kill()
            proc.proc.wait(10)


@pytest.fixture
async def server_process(database: TestDatabase, tmp_path: Path
                         ) -> AsyncIterator[Callable[..., ServerProcess]]:
    """Make ``python -m server serve`` processes on the test's database; all killed at the end.

    ``proc = server_process("--grace", "0.4"); await proc.start()``.
    """
    made: list[ServerProcess] = []

    def make(*args: str) -> ServerProcess:
        workdir = tmp_path / f"proc{len(made)}"
        workdir.mkdir()
        proc = ServerProcess(database.url, workdir, *args)
        made.append(proc)
        return proc

    yield make
    for proc in made:
        if proc.proc is not None and proc.proc.poll() is None:
            proc.proc.kill()
            proc.proc.wait(10)
