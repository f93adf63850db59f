"""``tessera db sandbox create|drop|backends`` (``server/storage/sandbox.py``), run as the
tools run them, on the test PostgreSQL: what the role made sees, the backends serving it,
and that a drop ends them and leaves nothing behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from clients.localserver import free_port
from server.storage import make_engine, sqlite_url
from tests.server.conftest import pg_url_or_skip
from tests.server.support import run_cli


@pytest.fixture
async def admin_url() -> str:
    return await pg_url_or_skip("PostgreSQL sandbox")


async def sandbox(*args: str) -> tuple[int, str, str]:
    done = await run_cli("db", "sandbox", *args)
    return done.returncode, done.stdout, done.stderr


async def left_of(admin_url: str, role: str) -> tuple[int, int]:
    """How many roles and schemas of that name there are."""
    engine = make_engine(admin_url)
    try:
        async with engine.connect() as conn:
            roles = await conn.scalar(text(
                "SELECT count(*) FROM pg_roles WHERE rolname = :r"), {"r": role})
            schemas = await conn.scalar(text(
                "SELECT count(*) FROM pg_namespace WHERE nspname = :r"), {"r": role})
    finally:
        await engine.dispose()
    return int(roles or 0), int(schemas or 0)


async def test_a_sandbox_keeps_its_role_s_tables_and_a_drop_ends_its_backends(
        admin_url: str) -> None:
    code, out, err = await sandbox("create", "--db", admin_url)
    assert code == 0, err
    made = json.loads(out)
    role = made["role"]
    try:
        assert make_url(made["url"]).username == role
        assert await left_of(admin_url, role) == (1, 1)
        engine = make_engine(made["url"])
        try:
            async with engine.begin() as conn:
                who = (await conn.exec_driver_sql(
                    "SELECT current_user, current_schemas(false)::text[]")).one()
                assert tuple(who) == (role, [role])  # its schema alone, not public too
                await conn.exec_driver_sql("CREATE TABLE kept (x int)")
            async with engine.connect() as conn:  # the pool's one connection, held
                pid = await conn.scalar(text("SELECT pg_backend_pid()"))
                table = await conn.scalar(text("SELECT to_regclass(:t)::text"),
                                          {"t": f"{role}.kept"})
                assert table is not None
                code, out, err = await sandbox("backends", role, "--db", admin_url)
                assert code == 0, err
                assert json.loads(out) == [pid]
                code, out, err = await sandbox("drop", role, "--db", admin_url)
                assert (code, out) == (0, ""), err
                with pytest.raises(DBAPIError):  # its connection was ended
                    await conn.exec_driver_sql("SELECT 1")
        finally:
            await engine.dispose()
        assert await left_of(admin_url, role) == (0, 0)
        code, out, err = await sandbox("backends", role, "--db", admin_url)
        assert (code, json.loads(out)) == (0, []), err
    finally:
        code, _, err = await sandbox("drop", role, "--db", admin_url)  # gone: nothing to do
        assert code == 0, err


async def test_the_sandbox_role_logs_in_with_the_admin_s_password(admin_url: str) -> None:
    """A password (quotes and colons included) is given to the role and kept in its URL;
    a test PostgreSQL that trusts loopback takes one it does not need."""
    url = make_url(admin_url)
    if url.password is None:
        url = url.set(password="it's:ok")
    code, out, err = await sandbox(
        "create", "--db", url.render_as_string(hide_password=False))
    assert code == 0, err
    made = json.loads(out)
    try:
        assert make_url(made["url"]).password == url.password
        engine = make_engine(admin_url)
        try:
            async with engine.connect() as conn:
                has_one = await conn.scalar(text(
                    "SELECT rolpassword IS NOT NULL FROM pg_authid WHERE rolname = :r"),
                    {"r": made["role"]})
        finally:
            await engine.dispose()
        assert has_one is True
    finally:
        await sandbox("drop", made["role"], "--db", admin_url)


async def test_sandbox_commands_refuse_what_cannot_be_one(tmp_path: Path) -> None:
    code, _, err = await sandbox("create", "--db", sqlite_url(tmp_path / "t.db"))
    assert code == 2 and "must be PostgreSQL" in err
    code, _, err = await sandbox("drop", 'x"; DROP ROLE postgres; --',
                                 "--db", "postgresql+asyncpg://postgres@127.0.0.1/test")
    assert code == 2 and "a sandbox's role must be" in err
    unreachable = f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/test"
    code, _, err = await sandbox("backends", "tessera_sandbox_x", "--db", unreachable)
    assert code == 1 and len(err.splitlines()) == 1 and "db sandbox backends" in err
