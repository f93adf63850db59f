"""Schema migrations: Alembic, driven from code.

``await upgrade(url)`` brings a database to the newest schema. It is what the server runs on
start and what ``tessera db upgrade`` runs; on an empty database it creates everything, on an
up-to-date one it does nothing. Each run is one transaction (on SQLite too, see ``db``), so a
failed migration leaves the schema as it was.

The Alembic configuration is built here, not read from a file: ``script_location`` is the
directory of the installed ``migrations`` package, so nothing depends on the working
directory. ``migrations/alembic.ini`` exists only for developers who run the ``alembic``
command to write a new revision.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import URL, Connection
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import NullPool

import migrations

from .db import make_engine

Target = str | URL | AsyncEngine


def migrations_dir() -> Path:
    """The directory of the installed ``migrations`` package (Alembic's script location)."""
    return Path(migrations.__file__).resolve().parent


def alembic_config() -> Config:
    """An Alembic configuration for the installed migrations, independent of the cwd."""
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config


def head_revision() -> str:
    """The newest revision the code knows."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError(f"no migrations found in {migrations_dir()}")
    return head


async def upgrade(target: Target, revision: str = "head") -> None:
    """Migrate a database (URL or engine) up to ``revision``; idempotent."""
    await _run(target, lambda config: command.upgrade(config, revision))


async def downgrade(target: Target, revision: str) -> None:
    """Migrate a database (URL or engine) down to ``revision`` (``"base"``: empty)."""
    await _run(target, lambda config: command.downgrade(config, revision))


async def current_revision(target: Target) -> str | None:
    """The revision a database is at; None if it has never been migrated."""
    async with _engine_for(target) as engine, engine.connect() as conn:
        return await conn.run_sync(
            lambda sync_conn: MigrationContext.configure(sync_conn).get_current_revision()
        )


async def _run(target: Target, alembic_command: Callable[[Config], None]) -> None:
    def run(connection: Connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = connection  # migrations/env.py uses it
        alembic_command(config)

    async with _engine_for(target) as engine, engine.connect() as conn:
        await conn.run_sync(run)


@asynccontextmanager
async def _engine_for(target: Target) -> AsyncIterator[AsyncEngine]:
    if isinstance(target, AsyncEngine):
        yield target
        return
    engine = make_engine(target, poolclass=NullPool)
    try:
        yield engine
    finally:
        await engine.dispose()
