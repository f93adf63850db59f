"""Engines, session factories and database URLs.

A database is named by a SQLAlchemy URL: ``sqlite+aiosqlite:///path/to/tessera.db`` (the
default, a file in the data directory) or ``postgresql+asyncpg://user@host/dbname``. The same
models, queries and migrations run on both; nothing here is SQLite-only SQL.

Nothing is built at import time: ``main()`` calls ``make_engine`` and
``make_session_factory`` and disposes the engine on the way out.

PostgreSQL connections are pooled (``POSTGRES_POOL_SIZE`` kept open and none opened beyond
them: a burst waits for a free one; with the default pool of 5 and its overflow, a busy
node opened and closed a connection, SSL probe included, for most of its reads, and
``bench --nodes`` missed the CPU of those short-lived backends) and not pinged on checkout: a
connection the server dropped (a restart) fails the one statement that finds it,
SQLAlchemy then discards the whole pool, and the next statement reconnects.
Single-statement reads run in autocommit (``read_engine``): one round trip, where a
transaction costs three (BEGIN, the query, ROLLBACK).

SQLite settings, applied to every new connection by a ``connect`` listener:

``journal_mode=WAL``
    Readers and the one writer do not block each other; commits append to the WAL file.
``synchronous=FULL`` (default; ``make_engine(sqlite_synchronous="NORMAL")`` to relax)
    FULL fsyncs the WAL on every commit, so a move that was acknowledged survives an OS
    crash or a power loss. NORMAL fsyncs only at checkpoints: commits are faster, and a power
    loss can undo the last few commits, though never corrupt the database. Group commit
    (``writer.CommitQueue``) is what keeps FULL affordable.
``busy_timeout`` (default 5000 ms)
    A connection that finds the write lock taken waits up to this long instead of failing
    at once with "database is locked".
``foreign_keys=ON``
    SQLite enforces foreign keys only when asked, per connection.

Transactions on SQLite: the sqlite3 driver's own, legacy transaction handling is switched off
(``isolation_level = None``) and SQLAlchemy emits ``BEGIN`` itself when a transaction starts
(the recipe from the SQLAlchemy SQLite dialect documentation). So a SQLAlchemy transaction is
a real SQLite transaction, DDL included, and a migration is all or nothing. The storage code
never reads and then writes in one transaction (a deferred transaction that upgrades to a
write lock fails at once instead of waiting); writers that must hold the lock from the start
pass the execution option ``SQLITE_BEGIN: "BEGIN IMMEDIATE"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.ext.asyncio import create_async_engine as _create_async_engine
from sqlalchemy.pool import Pool

SqliteSynchronous = Literal["FULL", "NORMAL"]

DATA_DIR_ENV = "TESSERA_DATA"
DEFAULT_DATA_DIR = "data"
DEFAULT_DATABASE_FILE = "tessera.db"
DEFAULT_BUSY_TIMEOUT_MS = 5000
SQLITE_BEGIN = "tessera_sqlite_begin"
"""Execution option: the statement that opens a transaction on SQLite (default ``BEGIN``)."""

_ASYNC_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg"}


def default_data_dir() -> Path:
    """The data directory: ``$TESSERA_DATA`` if set, else ``./data``, made absolute."""
    return Path(os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR).resolve()


def sqlite_url(path: str | os.PathLike[str]) -> str:
    """The async SQLite URL of a database file (made absolute)."""
    return f"sqlite+aiosqlite:///{Path(path).resolve()}"


def default_database_url(data_dir: str | os.PathLike[str] | None = None) -> str:
    """The URL of ``tessera.db`` in the data directory, creating the directory."""
    directory = Path(data_dir).resolve() if data_dir is not None else default_data_dir()
    directory.mkdir(parents=True, exist_ok=True)
    return sqlite_url(directory / DEFAULT_DATABASE_FILE)


def normalize_url(url: str | URL) -> URL:
    """Parse a database URL and pin the async driver; ValueError if it is not supported.

    A string without ``://`` is taken as the path of a SQLite file. ``sqlite://`` and
    ``postgresql://`` (or ``postgres://``) get their async drivers; other drivers are refused.
    """
    if isinstance(url, str) and "://" not in url:
        url = sqlite_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ValueError(f"not a database URL: {url!r}") from exc
    backend = "postgresql" if parsed.get_backend_name() == "postgres" else parsed.get_backend_name()
    wanted = _ASYNC_DRIVERS.get(backend)
    if wanted is None or parsed.drivername not in (backend, parsed.get_backend_name(), wanted):
        raise ValueError(
            f"unsupported database URL {redact_url(parsed)!r}: use "
            "sqlite+aiosqlite:///path/to/tessera.db or postgresql+asyncpg://user@host/db"
        )
    return parsed.set(drivername=wanted)


def redact_url(url: str | URL) -> str:
    """The URL with its password masked, for logs and messages."""
    return make_url(url).render_as_string(hide_password=True)


def is_sqlite(engine_or_url: AsyncEngine | URL) -> bool:
    """Whether an engine or URL is SQLite."""
    url = engine_or_url.url if isinstance(engine_or_url, AsyncEngine) else engine_or_url
    return url.get_backend_name() == "sqlite"


POSTGRES_POOL_SIZE = 10
"""Connections one server process keeps open to PostgreSQL (its moves take one; the rest
serve reads and small writes; no store method holds one while it waits for another):
nodes x this must stay below the server's max_connections (100 by default)."""


def make_engine(
    url: str | URL,
    *,
    sqlite_synchronous: SqliteSynchronous = "FULL",
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    connect_args: Mapping[str, Any] | None = None,
    poolclass: type[Pool] | None = None,
    echo: bool = False,
) -> AsyncEngine:
    """Build the async engine for a database URL, with the SQLite settings described above.

    ``connect_args`` go to the driver; for asyncpg, ``server_settings`` are merged with the
    defaults (e.g. ``{"server_settings": {"search_path": "myschema"}}``).
    """
    if sqlite_synchronous not in ("FULL", "NORMAL"):
        raise ValueError(f"sqlite_synchronous must be FULL or NORMAL, not {sqlite_synchronous!r}")
    if busy_timeout_ms < 0:
        raise ValueError(f"busy_timeout_ms must be >= 0, not {busy_timeout_ms}")
    parsed = normalize_url(url)
    args: dict[str, Any] = dict(connect_args or {})
    options: dict[str, Any] = {"echo": echo}
    if poolclass is not None:
        options["poolclass"] = poolclass
    if is_sqlite(parsed):
        engine = _create_async_engine(parsed, connect_args=args, **options)
        _install_sqlite_hooks(engine.sync_engine, sqlite_synchronous, busy_timeout_ms)
        return engine
    settings = {"application_name": "tessera", **dict(args.get("server_settings") or {})}
    args["server_settings"] = settings
    options.setdefault("pool_size", POSTGRES_POOL_SIZE)
    options.setdefault("max_overflow", 0)
    if options.get("poolclass") is not None:  # NullPool takes no size
        options.pop("pool_size"), options.pop("max_overflow")
    return _create_async_engine(parsed, connect_args=args, **options)


def read_engine(engine: AsyncEngine) -> AsyncEngine:
    """The engine for reads of one statement: autocommit on PostgreSQL (no BEGIN and
    ROLLBACK round trips), the engine itself on SQLite (whose BEGIN costs no round trip).
    Never for writes, nor for reads that must see one snapshot across statements."""
    if is_sqlite(engine):
        return engine
    return engine.execution_options(isolation_level="AUTOCOMMIT")


def make_blocking_engine(
    url: str | URL,
    *,
    sqlite_synchronous: SqliteSynchronous = "FULL",
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    connect_args: Mapping[str, Any] | None = None,
) -> Engine | None:
    """A blocking engine on a SQLite file, with the settings of ``make_engine``; or None.

    For a thread that runs a whole transaction in one call (``statements.SqliteThreadWriter``):
    through aiosqlite every statement, BEGIN and COMMIT is a round trip between the event
    loop and the driver's thread, and on a busy loop each round trip waits a whole loop
    iteration. None for PostgreSQL (asyncpg has no thread) and for an in-memory SQLite
    database (another connection would not see it). Pass the settings the async engine
    on the same file was made with.
    """
    parsed = normalize_url(url)
    if not is_sqlite(parsed) or parsed.database in (None, "", ":memory:"):
        return None
    engine = create_engine(parsed.set(drivername="sqlite+pysqlite"),
                           connect_args=dict(connect_args or {}))
    # A bulk insert as a few multi-row INSERTs ("insertmanyvalues") rather than one statement
    # per row: each statement run lets go of the GIL and waits to take it back, which the
    # busy event loop's thread makes slow.
    engine.dialect.use_insertmanyvalues_wo_returning = True
    _install_sqlite_hooks(engine, sqlite_synchronous, busy_timeout_ms)
    return engine


def make_write_lock(engine: AsyncEngine) -> AbstractAsyncContextManager[Any]:
    """What one process's write transactions hold: an ``asyncio.Lock`` on SQLite, nothing
    on PostgreSQL.

    SQLite has one writer at a time, and a connection that finds the write lock taken waits
    in its busy handler, which sleeps up to 100 ms at a time: a busy commit queue could keep
    another writer asleep until it gives up ("database is locked") and stall itself behind
    one. Taking turns in the event loop first costs nothing of that kind. The store and the
    commit queue of one server share one (see ``runtime.open_storage``).
    """
    if is_sqlite(engine):
        return asyncio.Lock()
    return contextlib.nullcontext()


def make_session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """Sessions whose objects stay usable after commit (there is nothing to lazy-load)."""
    return async_sessionmaker(engine, expire_on_commit=False)


def _install_sqlite_hooks(engine: Engine, synchronous: str, busy_timeout_ms: int) -> None:
    pragmas = (
        f"PRAGMA busy_timeout = {int(busy_timeout_ms)}",
        "PRAGMA journal_mode = WAL",
        f"PRAGMA synchronous = {synchronous}",
        "PRAGMA foreign_keys = ON",
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN, see _on_begin
        cursor = dbapi_connection.cursor()
        try:
            for pragma in pragmas:
                cursor.execute(pragma)
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        connection.exec_driver_sql(connection.get_execution_options().get(SQLITE_BEGIN, "BEGIN"))
