"""Sandboxes on PostgreSQL: a schema and a login role of the same name, of a tool's or a
test's own (``tessera db sandbox create|drop|backends``).

The role's ``search_path`` is its schema, so a server given the sandbox's URL (the admin
URL with the role as its user) keeps its tables there and nowhere else: a server, a cluster
of nodes or a test is configured by URL alone, and dropping the sandbox removes all it made.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from .db import is_sqlite, make_engine, normalize_url

DEFAULT_PREFIX = "tessera_sandbox_"
_ROLE = re.compile(r"[a-z_][a-z0-9_]{0,62}")  # needs no quoting, fits PostgreSQL's 63 bytes


@dataclass(frozen=True, slots=True)
class Sandbox:
    """A made sandbox: its role (and schema) and the URL that logs in as the role."""

    role: str
    url: str


def check_role(role: str) -> str:
    """``role`` if it can name a sandbox; ValueError if not (lower-case letters, digits and
    ``_``, at most 63, not starting with a digit)."""
    if not _ROLE.fullmatch(role):
        raise ValueError(f"a sandbox's role must be 1 to 63 lower-case letters, digits or "
                         f"'_', not starting with a digit, not {role!r}")
    return role


def _admin_engine(admin_url: str) -> AsyncEngine:
    if is_sqlite(normalize_url(admin_url)):
        raise ValueError("a sandbox is a PostgreSQL schema and role: --db must be PostgreSQL")
    return make_engine(admin_url)


async def create_sandbox(admin_url: str, prefix: str = DEFAULT_PREFIX) -> Sandbox:
    """Make a role named ``prefix`` and a random suffix, allowed to log in (with the admin
    URL's password, if it has one), and its schema; ValueError for a SQLite URL or a bad
    prefix."""
    role = check_role(f"{prefix}{uuid.uuid4().hex[:12]}")
    admin = normalize_url(admin_url)
    password = admin.password
    login = " PASSWORD '{}'".format(str(password).replace("'", "''")) if password else ""
    engine = _admin_engine(admin_url)
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql(f'CREATE ROLE "{role}" LOGIN{login}')
            await conn.exec_driver_sql(f'CREATE SCHEMA "{role}" AUTHORIZATION "{role}"')
            await conn.exec_driver_sql(f'ALTER ROLE "{role}" SET search_path = "{role}"')
    finally:
        await engine.dispose()
    return Sandbox(role, admin.set(username=role).render_as_string(hide_password=False))


async def drop_sandbox(admin_url: str, role: str) -> None:
    """End the role's connections, then drop its schema (with all in it) and the role;
    nothing to do for one that is gone already."""
    check_role(role)
    engine = _admin_engine(admin_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                    "WHERE usename = :role"), {"role": role})
            await conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{role}" CASCADE')
            await conn.exec_driver_sql(f'DROP ROLE IF EXISTS "{role}"')
    finally:
        await engine.dispose()


async def sandbox_backends(admin_url: str, role: str) -> list[int]:
    """The process ids of the PostgreSQL backends serving the role now (the server's shared
    background processes, such as its WAL writer, serve no role and are not among them)."""
    check_role(role)
    engine = _admin_engine(admin_url)
    try:
        async with engine.connect() as conn:
            pids = (await conn.execute(text(
                "SELECT pid FROM pg_stat_activity WHERE usename = :role ORDER BY pid"),
                {"role": role})).scalars().all()
    finally:
        await engine.dispose()
    return [int(pid) for pid in pids]
