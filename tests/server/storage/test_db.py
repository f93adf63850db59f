"""Engines and URLs: SQLite connection settings, URL normalisation, the default location."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from server.storage import (
    default_database_url,
    make_engine,
    normalize_url,
    redact_url,
    sqlite_url,
)


async def _pragma(engine: AsyncEngine, name: str) -> object:
    async with engine.connect() as conn:
        return (await conn.exec_driver_sql(f"PRAGMA {name}")).scalar()


@pytest.fixture
async def sqlite_engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(sqlite_url(tmp_path / "p.db"))
    yield engine
    await engine.dispose()


async def test_sqlite_pragmas_default_to_durable(sqlite_engine: AsyncEngine) -> None:
    assert await _pragma(sqlite_engine, "journal_mode") == "wal"
    assert await _pragma(sqlite_engine, "synchronous") == 2  # FULL
    assert await _pragma(sqlite_engine, "foreign_keys") == 1
    assert await _pragma(sqlite_engine, "busy_timeout") == 5000


async def test_sqlite_synchronous_normal_and_busy_timeout_are_configurable(
    tmp_path: Path,
) -> None:
    engine = make_engine(
        sqlite_url(tmp_path / "n.db"), sqlite_synchronous="NORMAL", busy_timeout_ms=250
    )
    try:
        assert await _pragma(engine, "synchronous") == 1  # NORMAL
        assert await _pragma(engine, "busy_timeout") == 250
        assert await _pragma(engine, "journal_mode") == "wal"
    finally:
        await engine.dispose()


async def test_pragmas_apply_to_every_pooled_connection(sqlite_engine: AsyncEngine) -> None:
    async with sqlite_engine.connect() as first, sqlite_engine.connect() as second:
        for conn in (first, second):
            assert (await conn.exec_driver_sql("PRAGMA foreign_keys")).scalar() == 1
            assert (await conn.exec_driver_sql("PRAGMA synchronous")).scalar() == 2


async def test_sqlite_transactions_are_real(sqlite_engine: AsyncEngine) -> None:
    # DDL rolls back too: SQLAlchemy, not the sqlite3 module, decides where BEGIN goes.
    with pytest.raises(RuntimeError):
        async with sqlite_engine.begin() as conn:
            await conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
            raise RuntimeError("roll back")
    async with sqlite_engine.connect() as conn:
        found = await conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE name = 't'")
        assert found.all() == []


def test_make_engine_refuses_bad_settings() -> None:
    with pytest.raises(ValueError, match="FULL or NORMAL"):
        make_engine("sqlite+aiosqlite:///x.db", sqlite_synchronous="OFF")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("sqlite:///data/t.db", "sqlite+aiosqlite:///data/t.db"),
        ("sqlite+aiosqlite:///data/t.db", "sqlite+aiosqlite:///data/t.db"),
        ("postgresql://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("postgres://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("postgresql+asyncpg://u@h:5433/db", "postgresql+asyncpg://u@h:5433/db"),
    ],
)
def test_normalize_url_pins_the_async_driver(given: str, expected: str) -> None:
    assert normalize_url(given).render_as_string(hide_password=False) == expected


def test_normalize_url_takes_a_bare_path_as_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    assert str(normalize_url(str(path))) == f"sqlite+aiosqlite:///{path}"


@pytest.mark.parametrize(
    "url", ["mysql://u@h/db", "postgresql+psycopg://u@h/db", "sqlite+pysqlite:///x.db"]
)
def test_normalize_url_refuses_other_databases_and_drivers(url: str) -> None:
    with pytest.raises(ValueError, match="unsupported database URL"):
        normalize_url(url)


def test_redact_url_hides_the_password() -> None:
    assert redact_url("postgresql+asyncpg://u:secret@h/db") == "postgresql+asyncpg://u:***@h/db"


def test_default_database_url_is_in_the_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TESSERA_DATA", str(tmp_path / "state"))
    assert default_database_url() == f"sqlite+aiosqlite:///{tmp_path / 'state' / 'tessera.db'}"
    assert (tmp_path / "state").is_dir()
    monkeypatch.delenv("TESSERA_DATA")
    monkeypatch.chdir(tmp_path)
    assert default_database_url() == f"sqlite+aiosqlite:///{tmp_path / 'data' / 'tessera.db'}"
