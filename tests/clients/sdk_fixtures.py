"""Fixtures for the bot SDK and arena tests: a real server subprocess with bot accounts.

``server_proc`` (one per session) runs ``python -m server serve`` on a fixed free port with
a temporary SQLite file, and creates the bot accounts :data:`BOT_NAMES` with
``python -m server admin create-bot`` (its ``tokens``). A test may :meth:`kill
<ServerProcess.kill>` and :meth:`start <ServerProcess.start>` it again: same port, same
database. ``tests/clients/conftest.py`` imports the fixture, so that every module shares
the one server; nothing here imports ``server``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import protocol as p
from clients.connection import Connection
from clients.localserver import LocalServer

BOT_NAMES = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")


class ServerProcess(LocalServer):
    """A server subprocess on a fixed port and SQLite file, with bot tokens by name."""

    def __init__(self, directory: Path) -> None:
        # every guest of these tests comes from 127.0.0.1: no per-address guest limit
        super().__init__(directory, db_url=f"sqlite+aiosqlite:///{directory / 'sdk.db'}",
                         extra_args=["--guests-per-hour", "0"])
        self.tokens: dict[str, str] = {}

    def create_bots(self, names: tuple[str, ...]) -> None:
        """Create bot accounts (in parallel: the running server has migrated the db)."""
        with ThreadPoolExecutor(len(names)) as pool:
            self.tokens.update(zip(names, pool.map(self.create_bot, names), strict=True))


@pytest.fixture(scope="session")
def server_proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server for the SDK tests, with bot accounts alpha to zeta (BOT_NAMES).

    A test that kills it must start it again before it ends.
    """
    server = ServerProcess(tmp_path_factory.mktemp("sdk_server"))
    server.start()
    try:
        server.create_bots(BOT_NAMES)
        yield server
    finally:
        server.stop()


async def client(server: ServerProcess, name: str | None = None) -> Connection:
    """A raw protocol connection, logged in as bot ``name`` (or as a guest)."""
    conn = await Connection.open(server.url, client="sdk-test")
    if name is None:
        await conn.call(p.Guest)
    else:
        await conn.call(p.AuthToken, token=server.tokens[name])
    return conn


async def until(predicate: Any, timeout: float = 20.0, what: str = "condition") -> None:
    """Poll ``predicate()`` every 20 ms until it is true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)
