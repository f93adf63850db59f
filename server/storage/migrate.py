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

import ast
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import NullPool

import migrations

from .db import make_engine

if TYPE_CHECKING:
    from alembic.config import Config

Target = str | URL | AsyncEngine
_REVISION_LINE = re.compile(r"^(revision|down_revision)\b[^=\n]*=\s*(.+?)\s*$", re.MULTILINE)


def migrations_dir() -> Path:
    """The directory of the installed ``migrations`` package (Alembic's script location)."""
    return Path(migrations.__file__).resolve().parent


def alembic_config() -> Config:
    """An Alembic configuration for the installed migrations, independent of the cwd."""
    from alembic.config import Config  # Alembic is imported only when a migration may run

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config


def head_revision() -> str:
    """The newest revision the code knows."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError(f"no migrations found in {migrations_dir()}")
    return head


def known_revisions() -> set[str]:
    """Every revision the code knows: a database at one of them can be upgraded to head."""
    from alembic.script import ScriptDirectory

    return {script.revision for script in
            ScriptDirectory.from_config(alembic_config()).walk_revisions()}


@cache
def files_head() -> str | None:
    """The newest revision, read from the migration files' ``revision`` and
    ``down_revision`` lines as text (no Alembic import); None unless they name exactly one
    head plainly (then only Alembic's own reading is trusted)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (migrations_dir() / "versions").glob("*.py"):
        found = dict(_REVISION_LINE.findall(path.read_text(encoding="utf-8")))
        try:
            revision = ast.literal_eval(found["revision"])
            down = ast.literal_eval(found.get("down_revision", "None"))
        except (KeyError, ValueError, SyntaxError):
            return None
        if not isinstance(revision, str):
            return None
        revisions.add(revision)
        parents.update([down] if isinstance(down, str) else down or ())
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


async def upgrade(target: Target, revision: str = "head") -> None:
    """Migrate a database (URL or engine) up to ``revision``; idempotent. A database at
    the newest revision already is recognised by one query (every start and every
    ``tessera`` command on the database does this; Alembic is not even imported)."""
    head = files_head() if revision == "head" else None
    if head is not None and await _stored_revision(target) == head:
        return

    def run(config: Config) -> None:
        from alembic import command

        command.upgrade(config, revision)

    await _run(target, run)


async def downgrade(target: Target, revision: str) -> None:
    """Migrate a database (URL or engine) down to ``revision`` (``"base"``: empty)."""
    def run(config: Config) -> None:
        from alembic import command

        command.downgrade(config, revision)

    await _run(target, run)


async def current_revision(target: Target) -> str | None:
    """The revision a database is at; None if it has never been migrated."""
    from alembic.runtime.migration import MigrationContext

    async with _engine_for(target) as engine, engine.connect() as conn:
        return await conn.run_sync(
            lambda sync_conn: MigrationContext.configure(sync_conn).get_current_revision()
        )


async def _stored_revision(target: Target) -> str | None:
    """The one revision in ``alembic_version``; None if there is no such table or row."""
    async with _engine_for(target) as engine, engine.connect() as conn:
        try:
            rows = (await conn.execute(text("SELECT version_num FROM alembic_version"))).all()
        except DBAPIError:
            return None
        return str(rows[0][0]) if len(rows) == 1 else None


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
