"""Alembic environment for Tessera: async engines, one transaction per run.

Run from code (server start, ``tessera db upgrade``, tests): ``server.storage.migrate``
opens the connection and passes it in ``config.attributes["connection"]``.

Run from the command line (developers writing a new revision)::

    alembic -c migrations/alembic.ini -x url=sqlite+aiosqlite:///data/tessera.db \\
        revision --autogenerate --rev-id 0002 -m "what changes"

The URL comes from ``-x url=...``, else ``$TESSERA_DATABASE_URL``, else the default SQLite
file in the data directory.

Every run is one transaction. On SQLite the transaction starts with ``BEGIN IMMEDIATE`` (one
migrator at a time) and foreign keys are off while it runs, as SQLite requires for the table
rebuilds of batch mode (``render_as_batch``); they are checked before the commit. On
PostgreSQL an advisory lock serializes concurrent migrators.
"""

from __future__ import annotations

import asyncio
import os
from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection
from sqlalchemy.pool import NullPool

from server.storage.db import SQLITE_BEGIN, default_database_url, make_engine
from server.storage.models import Base

MIGRATION_LOCK_KEY = 0x7E55E4A  # pg_advisory_xact_lock key shared by every Tessera migrator

config = context.config
target_metadata = Base.metadata


def run_migrations(connection: Connection) -> None:
    """Run the pending migrations over an open connection, in one transaction."""
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        _sqlite_foreign_keys(connection, enabled=False)
        connection.execution_options(**{SQLITE_BEGIN: "BEGIN IMMEDIATE"})
    try:
        with connection.begin():
            if connection.dialect.name == "postgresql":
                connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})")
            context.configure(
                connection=connection,
                target_metadata=target_metadata,
                render_as_batch=sqlite,
                compare_type=True,
                transactional_ddl=True,  # true here: SQLAlchemy emits BEGIN on SQLite too
            )
            with context.begin_transaction():
                context.run_migrations()
            if sqlite:
                _sqlite_check_foreign_keys(connection)
    finally:
        if sqlite:
            _sqlite_foreign_keys(connection, enabled=True)


def _sqlite_foreign_keys(connection: Connection, *, enabled: bool) -> None:
    # Outside any transaction (SQLite ignores this pragma inside one), so use the raw
    # connection: a SQLAlchemy execute would begin a transaction first.
    cursor = connection.connection.cursor()
    try:
        cursor.execute(f"PRAGMA foreign_keys = {'ON' if enabled else 'OFF'}")
    finally:
        cursor.close()


def _sqlite_check_foreign_keys(connection: Connection) -> None:
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise RuntimeError(f"migration left broken foreign keys: {broken[:10]}")


def _command_line_url() -> str:
    return (
        context.get_x_argument(as_dictionary=True).get("url")
        or os.environ.get("TESSERA_DATABASE_URL")
        or default_database_url()
    )


async def _run_from_command_line() -> None:
    engine = make_engine(_command_line_url(), poolclass=NullPool)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(run_migrations)
    finally:
        await engine.dispose()


def _run_offline() -> None:
    url = _command_line_url()
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        render_as_batch=url.startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


_connection = config.attributes.get("connection")
if _connection is not None:
    run_migrations(_connection)
else:
    if config.config_file_name is not None:
        fileConfig(config.config_file_name)
    if context.is_offline_mode():
        _run_offline()
    else:
        asyncio.run(_run_from_command_line())
