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
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import protocol as p
from clients.connection import Connection

BOT_NAMES = ("alpha", "beta", "gamma", "delta")
START_TIMEOUT_S = 30.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ServerProcess:
    """A Tessera server subprocess on a fixed port and SQLite file, with bot tokens."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.db_url = f"sqlite+aiosqlite:///{directory / 'sdk.db'}"
        self.port = _free_port()
        self.url = f"ws://127.0.0.1:{self.port}/ws"
        self.log = directory / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.tokens: dict[str, str] = {}

    def start(self) -> None:
        """Start the server (again) and wait until it listens."""
        ready = self.directory / "ready"
        ready.unlink(missing_ok=True)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "server", "serve", "--port", str(self.port),
                 "--db", self.db_url, "--ready-file", str(ready), "--log-level", "warning"],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (ready.exists() and ready.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server did not start:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: a crash, with no close frames and nothing flushed on purpose."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def create_bots(self, names: tuple[str, ...]) -> None:
        """Create bot accounts (in parallel: the running server has migrated the db)."""
        def create(name: str) -> tuple[str, str]:
            done = subprocess.run(
                [sys.executable, "-m", "server", "admin", "create-bot", name,
                 "--db", self.db_url], capture_output=True, text=True, timeout=60)
            found = re.search(r"^token \d+: (\S+)$", done.stdout, re.MULTILINE)
            assert done.returncode == 0 and found, done.stderr
            return name, found.group(1)

        with ThreadPoolExecutor(len(names)) as pool:
            self.tokens.update(pool.map(create, names))


@pytest.fixture(scope="session")
def server_proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server for the SDK tests, with bot accounts alpha, beta, gamma and delta.

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
