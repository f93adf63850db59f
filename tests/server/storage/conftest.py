"""Fixtures: every storage test runs on a real SQLite file and, when reachable, PostgreSQL.

PostgreSQL is used when ``TESSERA_TEST_PG_URL`` names a reachable server (CI sets it to
``postgresql+asyncpg://postgres@127.0.0.1:5432/test``); otherwise its half of each test is
skipped with the reason (``pytest -rs`` lists them). Each PostgreSQL test gets a fresh,
uniquely named schema (selected with ``search_path``) and drops it afterwards, so runs and
tests never see each other's rows. Schemas are created by the real migrations.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from server.storage import (
    CommitQueue,
    Store,
    User,
    make_engine,
    open_batch_writer,
    sqlite_url,
    upgrade,
)
from tests.server.conftest import pg_url_or_skip

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """A fixed moment, ``seconds`` after T0."""
    return T0 + timedelta(seconds=seconds)


@dataclass
class Database:
    """One test database: a URL plus what it takes to open engines on it."""

    backend: str
    url: str
    connect_args: dict[str, Any] = field(default_factory=dict)
    engines: list[AsyncEngine] = field(default_factory=list)

    def engine(self, **options: Any) -> AsyncEngine:
        """A new engine on this database (several may be open, e.g. to simulate a restart)."""
        engine = make_engine(self.url, connect_args=self.connect_args, **options)
        self.engines.append(engine)
        return engine

    async def upgrade(self) -> None:
        """Run the migrations: by URL on SQLite; on PostgreSQL through an engine, which is
        what carries the test schema."""
        if self.backend == "sqlite":
            await upgrade(self.url)
        else:
            engine = self.engine()
            await upgrade(engine)
            await engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
async def db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    """An empty database of each backend."""
    if request.param == "sqlite":
        database = Database("sqlite", sqlite_url(tmp_path / "tessera.db"))
        try:
            yield database
        finally:
            await _dispose(database)
        return
    url = await pg_url_or_skip("PostgreSQL storage")
    schema = f"tessera_test_{uuid.uuid4().hex[:16]}"
    admin = make_engine(url)
    try:
        async with admin.begin() as conn:
            await conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
        database = Database("postgresql", url, {"server_settings": {"search_path": schema}})
        try:
            yield database
        finally:
            await _dispose(database)
            async with admin.begin() as conn:
                await conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
    finally:
        await admin.dispose()


async def _dispose(database: Database) -> None:
    for engine in database.engines:
        await engine.dispose()


@pytest.fixture
async def engine(db: Database) -> AsyncEngine:
    """An engine on a database migrated to the newest revision."""
    await db.upgrade()
    return db.engine()


@pytest.fixture
def store(engine: AsyncEngine) -> Store:
    return Store(engine)


@pytest.fixture
async def writer(engine: AsyncEngine) -> AsyncIterator[CommitQueue]:
    queue = CommitQueue(open_batch_writer(engine), max_batch=64)
    queue.start()
    yield queue
    await queue.close()


@pytest.fixture
async def players(store: Store) -> tuple[User, User]:
    """Two accounts to seat in games."""
    return (
        await store.create_user("Alice", "human", now=T0),
        await store.create_user("Bot9", "bot", now=T0),
    )
