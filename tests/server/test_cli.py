"""Operator commands: they behave in a pipe (a reader that stops reading ends them quietly),
and ``serve`` refuses to start in one line when its port is taken or another server holds
its database."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from server.storage import (
    GameCreated,
    MovePlayed,
    make_engine,
    new_game_id,
    open_storage,
    sqlite_url,
)

from .conftest import TestDatabase, redis_url_or_skip
from .support import Clients, ServerProcess, run_cli, start_game

FISCHER = {"kind": "fischer", "base_ms": 60_000, "increment_ms": 0}


async def _many_games(url: str, games: int, moves: int) -> None:
    async with open_storage(url) as storage:
        a = await storage.store.create_user("ann", "human")
        b = await storage.store.create_user("bob", "human")
        now = datetime.now(UTC)
        for _ in range(games):
            game_id = new_game_id()
            await storage.writer.submit(GameCreated(game_id, "hadron", {"size": 9}, FISCHER,
                                                    "1", (a.id, b.id), 1, now, now))
            for ply in range(moves):
                await storage.writer.submit(MovePlayed(game_id, ply, ply + 2, f"a{ply + 1}",
                                                       ply % 2, 100, 59_000, now))


async def test_dump_into_a_pipe_that_closes_ends_quietly(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "tessera.db")
    await _many_games(url, games=120, moves=40)  # far more than a pipe's buffer holds
    proc = subprocess.Popen([sys.executable, "-m", "server", "dump", "--all", "--db", url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = json.loads(proc.stdout.readline())
    proc.stdout.close()  # `| head -1`
    errors = proc.stderr.read().decode()
    status = proc.wait(60)
    assert first["game"] == "hadron"
    assert "Traceback" not in errors and "BrokenPipe" not in errors, errors
    assert status == 141  # as a shell reports a tool whose reader went away


# -- starting: a taken port, a database another server holds --------------------------------
def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server", "serve", "--log-level", "warning",
                           *args], capture_output=True, text=True, timeout=60)


def test_a_taken_port_is_one_line_and_a_failure(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve("--port", str(port), "--db", sqlite_url(tmp_path / "t.db"))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"tessera: port {port} on 127.0.0.1 is already in use (another server?): stop it, "
        "or choose another port with --port"], done.stderr


async def test_a_second_server_on_the_same_database_refuses_naming_the_first(
        server_process: Callable[..., ServerProcess], database: TestDatabase) -> None:
    first = server_process()
    await first.start()
    assert first.proc is not None
    second = await asyncio.to_thread(_serve, "--port", "0", "--db", database.url)
    assert second.returncode == 1, second.stderr
    [line] = second.stderr.splitlines()
    assert line.startswith("tessera: ") and "already served by" in line, line
    assert f"process {first.proc.pid} on {socket.gethostname()}" in line, line
    if database.backend == "sqlite":
        assert f"listening on {first.url}" in line, line
    assert "Traceback" not in second.stderr
    # the first goes on serving; once it dies, even by SIGKILL, the next one starts
    assert await first.stopped(signal.SIGKILL) == -signal.SIGKILL
    after = server_process()
    await after.start()
    assert await after.stopped() == 0


async def test_dump_says_the_status_a_snapshot_says(
        server_process: Callable[..., ServerProcess],
        open_clients: Callable[[str], Clients], database: TestDatabase) -> None:
    proc = server_process()
    await proc.start()
    clients = open_clients(proc.url)
    game = await start_game(await clients.guest(), await clients.guest(), "hadron")
    statuses = {"snapshot": (await game.watch(await clients.spectator())).status,
                "get_game": (await game.record()).status}
    dumped = await run_cli("dump", game.game_id, "--db", database.url)
    statuses["dump"] = json.loads(dumped.stdout)["status"]
    assert statuses == dict.fromkeys(statuses, "waiting")
    await game.play("b2")
    await game.play("d4")
    dumped = await run_cli("dump", game.game_id, "--db", database.url)
    assert json.loads(dumped.stdout)["status"] == (await game.record()).status == "playing"


async def test_the_start_line_gives_the_lobby_and_the_websocket(
        server_process: Callable[..., ServerProcess], database: TestDatabase) -> None:
    if database.backend != "sqlite":
        pytest.skip("the start line does not depend on the database")
    proc = server_process()
    await proc.start()
    lobby = f"http://127.0.0.1:{proc.port}/"
    assert f"tessera: listening on {proc.url}; the lobby is at {lobby}" in proc.log()
    with urllib.request.urlopen(lobby, timeout=10) as page:
        assert page.status == 200 and b"<html" in page.read().lower()


def test_a_taken_port_is_one_line_for_workers_too() -> None:
    pg, redis = os.environ.get("TESSERA_TEST_PG_URL"), os.environ.get("TESSERA_TEST_REDIS_URL")
    if not pg or not redis:
        pytest.skip("--workers needs TESSERA_TEST_PG_URL and TESSERA_TEST_REDIS_URL")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve("--workers", "2", "--port", str(port), "--db", pg, "--cluster", redis,
                      "--cluster-name", f"taken-{port}")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"tessera: port {port} on 127.0.0.1 is already in use (another server?): stop it, "
        "or choose another port with --port"], done.stderr


@pytest.mark.parametrize("database", ["postgresql"], indirect=True)  # a cluster's
async def test_a_one_process_server_and_cluster_nodes_do_not_share_a_database(
        server_process: Callable[..., ServerProcess], database: TestDatabase) -> None:
    """Nodes share their database with each other, never with a one-process server."""
    redis = await redis_url_or_skip()
    cluster = ("--cluster", redis, "--cluster-name", f"sole-{uuid.uuid4().hex[:8]}")
    nodes = [server_process(*cluster, "--node-id", f"n{i}") for i in (1, 2)]
    for node in nodes:
        await node.start()  # the second node starts beside the first
    alone = await asyncio.to_thread(_serve, "--port", "0", "--db", database.url)
    assert alone.returncode == 1, alone.stderr
    assert "already served by process" in alone.stderr and "a cluster node" in alone.stderr
    for node in nodes:  # (their locks go with their processes)
        assert await node.stopped(signal.SIGKILL) == -signal.SIGKILL
    single = server_process()
    await single.start()
    assert single.proc is not None
    node = await asyncio.to_thread(_serve, "--port", "0", "--db", database.url, *cluster,
                                   "--node-id", "n3")
    assert node.returncode == 1, node.stderr
    assert f"already served by process {single.proc.pid} on" in node.stderr, node.stderr


# -- db counts and db check: what the tools read instead of the file -----------------------------
async def test_db_counts_and_check_see_what_was_stored_and_a_gap_made_in_it(
        database: TestDatabase) -> None:
    await _many_games(database.url, games=3, moves=5)
    counts = await run_cli("db", "counts", "--db", database.url)
    assert counts.returncode == 0, counts.stderr
    held = json.loads(counts.stdout)
    assert (held["games"], held["moves"], held["users"]) == (3, 15, 2)
    assert held["chat"] == 0 and "alembic_version" not in held
    whole = await run_cli("db", "check", "--db", database.url)
    assert whole.returncode == 0 and "0 problems" in whole.stdout, whole.stdout + whole.stderr

    engine = make_engine(database.url)  # a move lost from the middle
    try:
        async with engine.begin() as conn:
            game_id = (await conn.exec_driver_sql(
                "SELECT game_id FROM moves ORDER BY game_id LIMIT 1")).scalar_one()
            await conn.exec_driver_sql(
                f"DELETE FROM moves WHERE game_id = '{game_id}' AND ply = 2")
    finally:
        await engine.dispose()
    broken = await run_cli("db", "check", "--db", database.url)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert broken.stdout.splitlines() == [
        f"game {game_id}: 4 moves with plies 0..4 and 4 distinct event numbers (plies 0..n-1, "
        "one number each)"], broken.stdout
