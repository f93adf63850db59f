"""Fixtures: every storage test runs on a real SQLite file and, when reachable, PostgreSQL.

PostgreSQL is used when ``TESSERA_TEST_PG_URL`` names a reachable server (CI sets it to
``postgresql+asyncpg://postgres@127.0.0.1:5432/test``); otherwise its half of each test is
skipped with the reason (``pytest -rs`` lists them). Each PostgreSQL test gets a fresh,
uniquely named schema (selected with ``search_path``) and drops it afterwards, so runs and
tests never see each other's rows. Schemas are created by the real migrations.
"""

from __future__ import annotations

import os
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
    redact_url,
    sqlite_url,
    upgrade,
)

PG_URL_ENV = "TESSERA_TEST_PG_URL"
T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)

_pg_unavailable: dict[str, str] = {}  # url -> reason, remembered for the session


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


async def _pg_reason_unavailable(url: str) -> str | None:
    if url in _pg_unavailable:
        return _pg_unavailable[url] or None
    engine = make_engine(url, connect_args={"timeout": 5})
    try:
        async with engine.connect() as conn:
            await conn.exec_driver_sql("SELECT 1")
        reason = ""
    except Exception as exc:  # whatever the failure, the PostgreSQL half is skipped
        reason = f"PostgreSQL at {redact_url(url)} unreachable: {type(exc).__name__}: {exc}"
    finally:
        await engine.dispose()
    _pg_unavailable[url] = reason
    return reason or None


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
    url = os.environ.get(PG_URL_ENV)
    if not url:
        pytest.skip(f"PostgreSQL storage tests skipped: {PG_URL_ENV} is not set")
    reason = await _pg_reason_unavailable(url)
    if reason:
        pytest.skip(reason)
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
