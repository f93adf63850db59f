"""One server per database: a lock held for the server's lifetime.

Two servers that both think they own a game would both accept its moves. A one-process
server therefore holds a lock on its database from before it restores games until it has
stopped, and a second server on the same database refuses to start, naming the first:

SQLite
    An OS advisory lock (``flock``) on ``DATABASE.lock`` beside the database file, which
    holds the owner's process id, host and, once it listens, its address. The kernel drops
    the lock when the process ends however it ends (``kill -9`` included), so a crash
    never leaves a stale lock behind; the file itself stays and is harmless.
PostgreSQL
    A session advisory lock (``pg_try_advisory_lock``) keyed by the database and schema,
    held on a connection of its own whose ``application_name`` names the owner. PostgreSQL
    drops it when that connection ends, so a crashed server's lock goes with its
    connection (and so does a running server's, if PostgreSQL restarts under it: the lock
    guards starts, not a database taken away). The nodes of a cluster share their database
    by design: each holds the same lock *shared* (``pg_try_advisory_lock_shared``), so
    nodes start beside each other, a one-process server does not start beside them, and
    no node starts beside a one-process server.

An in-memory SQLite database cannot be shared and takes no lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.pool import NullPool

from .db import is_sqlite, make_engine, normalize_url, redact_url
from .errors import StorageError

LOCK_CLASS = 0x7E55E7A  # the first half of the advisory lock's key: "this is tessera's"
APPLICATION_NAME_MAX = 63  # PostgreSQL truncates application_name beyond this


class DatabaseInUse(StorageError):
    """Another server holds the database; the message names its process."""


def owner_text(pid: int, host: str, address: str | None) -> str:
    """``process 1234 on box, listening on ws://127.0.0.1:8765/ws``."""
    where = f", listening on {address}" if address else ""
    return f"process {pid} on {host}{where}"


class SoleServer:
    """The held lock; :meth:`listening` records the owner's address for the next comer."""

    def __init__(self, file: Any = None) -> None:
        self._file = file  # the SQLite lock file, open and locked; None on PostgreSQL

    def listening(self, address: str) -> None:
        """Write the address this server listens on into the lock file (SQLite)."""
        if self._file is not None:
            _write_owner(self._file, address)


@contextlib.asynccontextmanager
async def sole_server(url: str, *, node: bool = False) -> AsyncIterator[SoleServer]:
    """Hold the database for this server until the block ends; :class:`DatabaseInUse`
    at once if another server holds it. A cluster ``node`` (PostgreSQL) shares it with the
    other nodes, never with a one-process server."""
    parsed = normalize_url(url)
    if is_sqlite(parsed):
        if parsed.database in (None, "", ":memory:"):
            yield SoleServer()
            return
        with _sqlite_lock(Path(parsed.database)) as file:
            yield SoleServer(file)
        return
    async with _postgres_lock(url, shared=node):
        yield SoleServer()


@contextlib.contextmanager
def _sqlite_lock(database: Path) -> Any:
    path = database.with_name(database.name + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    file = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (held for the block)
    try:
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            raise DatabaseInUse(f"{database} is already served by {_read_owner(file.read())}: "
                                "stop that server first, or give this one another --db") from None
        _write_owner(file, None)
        yield file
    finally:
        file.close()  # closing the file drops the lock


def _write_owner(file: Any, address: str | None) -> None:
    file.seek(0)
    file.truncate()
    file.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                           "address": address}) + "\n")
    file.flush()


def _read_owner(content: str) -> str:
    try:
        owner = json.loads(content)
        return owner_text(int(owner["pid"]), str(owner["host"]), owner.get("address"))
    except (ValueError, KeyError, TypeError):  # written by nothing we know, or half written
        return "another process"


@contextlib.asynccontextmanager
async def _postgres_lock(url: str, shared: bool) -> AsyncIterator[None]:
    role = ", a cluster node" if shared else ""
    name = f"tessera serve: process {os.getpid()} on {socket.gethostname()}{role}"
    engine = make_engine(url, poolclass=NullPool, connect_args={
        "server_settings": {"application_name": name[:APPLICATION_NAME_MAX]}})
    try:
        async with engine.connect() as conn:
            where = (await conn.execute(text(
                "SELECT current_database() || '.' || current_schema()"))).scalar_one()
            key = zlib.crc32(str(where).encode()) & 0x7FFFFFFF
            take = "pg_try_advisory_lock_shared" if shared else "pg_try_advisory_lock"
            got = (await conn.execute(text(f"SELECT {take}(:c, :k)"),
                                      {"c": LOCK_CLASS, "k": key})).scalar_one()
            await conn.commit()  # the lock is the session's, not the transaction's
            if not got:
                owner = (await conn.execute(text(
                    "SELECT a.application_name, a.client_addr FROM pg_locks l "
                    "JOIN pg_stat_activity a ON a.pid = l.pid "
                    "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = :c "
                    "AND l.objid = :k AND l.objsubid = 2 AND l.database = "
                    "(SELECT oid FROM pg_database WHERE datname = current_database())"),
                    {"c": LOCK_CLASS, "k": key})).first()
                await conn.rollback()
                raise DatabaseInUse(f"{redact_url(url)} (schema {where}) is already served "
                                    f"by {_pg_owner(owner)}: stop that server first, or "
                                    "give this one another --db")
            yield
    finally:
        await engine.dispose()


def _pg_owner(row: Any) -> str:
    if row is None:  # it let go between the two statements
        return "another server"
    application, address = row
    prefix = "tessera serve: "
    who = application[len(prefix):] if application.startswith(prefix) else \
        f"a connection named {application!r}"
    return f"{who} (connected from {address})" if address else who
