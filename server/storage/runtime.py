"""Storage for a running server: one engine, migrated, with its Store and CommitQueue."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from .db import DEFAULT_BUSY_TIMEOUT_MS, SqliteSynchronous, make_engine, make_write_lock
from .migrate import upgrade
from .repo import Store
from .statements import open_batch_writer
from .writer import CommitQueue


@dataclass(frozen=True, slots=True)
class Storage:
    engine: AsyncEngine
    store: Store
    writer: CommitQueue


@asynccontextmanager
async def open_storage(
    url: str | URL,
    *,
    sqlite_synchronous: SqliteSynchronous = "FULL",
    migrate: bool = True,
    max_batch: int = 256,
    on_commit: Callable[[int], None] | None = None,
    connect_args: Mapping[str, Any] | None = None,
) -> AsyncIterator[Storage]:
    """Open the database for serving: migrate it, start the writer; on exit flush and close.

    Call it from ``main()`` (never at import time)::

        async with open_storage(url, on_commit=metrics.commit_batch.observe) as storage:
            await serve(storage.store, storage.writer)

    ``connect_args`` go to the driver (asyncpg: ``ssl``, ``server_settings``, ...).
    """
    settings: dict[str, Any] = {"sqlite_synchronous": sqlite_synchronous,
                                "busy_timeout_ms": DEFAULT_BUSY_TIMEOUT_MS,
                                "connect_args": connect_args}
    engine = make_engine(url, **settings)
    try:
        if migrate:
            await upgrade(engine)
        lock = make_write_lock(engine)  # the store's writes and the queue's take turns
        batches = open_batch_writer(engine, **settings)  # the engine's own settings
        writer = CommitQueue(batches, max_batch=max_batch, on_commit=on_commit, write_lock=lock)
        writer.start()
        try:
            yield Storage(engine, Store(engine, write_lock=lock), writer)
        finally:
            await writer.close()
    finally:
        await engine.dispose()
