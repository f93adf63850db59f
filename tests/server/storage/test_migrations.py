"""The real migrations build the schema the models describe, on every backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from server.storage import current_revision, downgrade, head_revision, sqlite_url, upgrade
from server.storage.migrate import files_head, migrations_dir
from server.storage.models import Base

from .conftest import Database

TABLES = {"users", "api_tokens", "games", "moves", "chat", "ratings", "game_ratings",
          "held_names"}


async def _tables(db: Database) -> set[str]:
    engine = db.engine()
    async with engine.connect() as conn:
        names = await conn.run_sync(lambda sync: set(inspect(sync).get_table_names()))
    await engine.dispose()
    return names


def _schema_diff(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(
        connection, opts={"compare_type": True, "compare_server_default": True}
    )
    return list(compare_metadata(context, Base.metadata))


async def test_upgrade_builds_an_empty_database_and_is_idempotent(db: Database) -> None:
    engine = db.engine()
    assert await current_revision(engine) is None
    await db.upgrade()
    assert await current_revision(engine) == head_revision()
    assert await _tables(db) == TABLES | {"alembic_version"}
    await db.upgrade()  # again: nothing to do, nothing breaks
    assert await current_revision(engine) == head_revision()


async def test_models_match_migrations(db: Database) -> None:
    await db.upgrade()
    engine = db.engine()
    async with engine.connect() as conn:
        assert await conn.run_sync(_schema_diff) == []
    async with engine.begin() as conn:  # and the comparison does see drift
        await conn.exec_driver_sql("DROP INDEX ix_games_ended_at_id")
    async with engine.connect() as conn:
        [(operation, index)] = await conn.run_sync(_schema_diff)
    assert (operation, index.name) == ("add_index", "ix_games_ended_at_id")


def test_models_cannot_lazy_load() -> None:
    # No relationships at all: queries join explicitly, and nothing loads behind one's back.
    assert all(not mapper.relationships for mapper in Base.registry.mappers)


async def test_downgrade_to_base_and_back(db: Database) -> None:
    engine = db.engine()
    await db.upgrade()
    await downgrade(engine, "base")
    assert await _tables(db) == {"alembic_version"}
    assert await current_revision(engine) is None
    await upgrade(engine)
    assert await _tables(db) == TABLES | {"alembic_version"}


async def test_sqlite_foreign_keys_are_back_on_after_migrating(tmp_path: Path) -> None:
    # Migrations switch them off on their connection; an engine's pool must not keep that.
    from server.storage import make_engine, sqlite_url

    engine = make_engine(sqlite_url(tmp_path / "fk.db"))
    try:
        await upgrade(engine)
        async with engine.connect() as conn:
            assert (await conn.exec_driver_sql("PRAGMA foreign_keys")).scalar() == 1
    finally:
        await engine.dispose()


def test_migrations_are_found_without_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert head_revision() == "0007"
    directory = migrations_dir()
    for shipped in ("env.py", "script.py.mako", "alembic.ini", "versions/0001_initial_schema.py",
                    "versions/0002_index_revoked_tokens.py", "versions/0003_game_epoch.py",
                    "versions/0004_ratings.py", "versions/0005_index_chat_user_id.py",
                    "versions/0006_challenge_policy.py",
                    "versions/0007_deleted_accounts.py"):
        assert (directory / shipped).is_file(), shipped


def test_the_migration_files_name_the_head_alembic_finds() -> None:
    """The start's one-query check reads the head from the files' text: it must be
    Alembic's."""
    assert files_head() == head_revision()


async def test_a_database_one_revision_behind_is_migrated(db: Database) -> None:
    """The at-head check does not skip a database an older revision left."""
    engine = db.engine()
    await db.upgrade()
    previous = f"{int(head_revision()) - 1:04d}"
    await downgrade(engine, previous)
    assert await current_revision(engine) == previous
    await upgrade(engine)
    assert await current_revision(engine) == head_revision()


def test_starting_on_a_migrated_database_does_not_import_alembic(tmp_path: Path) -> None:
    """A migrated database is recognised by one query: every start and every command is
    spared Alembic's import and its reading of the scripts."""
    url = sqlite_url(tmp_path / "up.db")
    probe = ("import asyncio, sys\n"
             "from server.storage import upgrade\n"
             f"asyncio.run(upgrade({url!r}))\n"
             "print('alembic' in sys.modules)\n")
    runs = [subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           check=True).stdout.strip() for _ in range(2)]
    assert runs == ["True", "False"]  # migrated by Alembic, then recognised at once
