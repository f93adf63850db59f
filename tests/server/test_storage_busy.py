"""A database that cannot take writes for a while (issue 23.19 and 23.20): another process
holds SQLite's write lock on the server's own file, for real.

A move that cannot be stored is refused as ``not_stored`` with ``retry_after_ms`` (nothing
of it happened: send it again), in one line of the log; sent again once the lock is gone,
it is played once. So is a resignation. While a move waits for the lock, ``ping`` on the
same connection is answered at once; any other request waits its turn behind the move.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import protocol as p

from .conftest import Live, one_backend
from .support import Clients, start_game


@contextlib.contextmanager
def write_lock(db: Path) -> Iterator[sqlite3.Connection]:
    """SQLite's write lock on ``db``, held by another connection until the block ends (or
    until it is released by hand with ROLLBACK)."""
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield holder
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()


@one_backend
async def test_a_move_the_database_cannot_store_is_refused_as_not_stored_and_resent(
        clients: Clients, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, "hadron")
    await game.play("a1")
    caplog.set_level(logging.WARNING)
    with write_lock(tmp_path / "tessera.db"):
        error = await b.refused(p.Move, game_id=game.game_id, ply=1, move="c3")
        refused = await a.refused(p.Move, game_id=game.game_id, ply=1, move="c3")
        resign = await a.refused(p.Resign, game_id=game.game_id)
    assert resign.code == "not_stored"  # nor a game's end
    assert (error.code, error.game_id) == ("not_stored", game.game_id), error
    assert error.retry_after_ms is not None and error.retry_after_ms > 0
    assert "send it again" in error.message
    assert refused.code == "not_your_turn"  # still b's turn: nothing happened
    server_logs = [r for r in caplog.records if r.name.startswith("server")]
    assert not [r for r in server_logs if r.exc_info], "a traceback was logged"
    assert sorted(r.getMessage() for r in server_logs if r.name == "server.rooms") == [
        "end of the game (resign): not stored: (sqlite3.OperationalError) database is locked",
        "move: not stored: (sqlite3.OperationalError) database is locked"]

    ack = await b.call(p.Move, game_id=game.game_id, ply=1, move="c3")  # sent again
    assert isinstance(ack, p.MoveAck) and ack.ply == 1
    record = await game.record(b)
    assert [m.move for m in record.moves] == ["a1", "c3"]
    assert record.status == "playing" and record.result is None  # the resign did nothing


@one_backend
async def test_ping_is_answered_while_a_move_waits_for_the_database(
        server: Live, clients: Clients, tmp_path: Path) -> None:
    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, "hadron")
    with write_lock(tmp_path / "tessera.db") as holder:
        move = asyncio.ensure_future(a.call(p.Move, game_id=game.game_id, ply=0, move="a1"))
        await asyncio.sleep(0)  # the move goes out first
        pong = await a.call(p.Ping)
        assert isinstance(pong, p.Pong)
        assert not move.done(), "the move was answered before the lock was released"
        board = asyncio.ensure_future(a.call(p.GetBoard, game="hadron", options={}))
        await asyncio.sleep(0)
        assert isinstance(await a.call(p.Ping), p.Pong)  # nor does a request waiting its turn
        assert not board.done()  # which waits for the move
        holder.execute("ROLLBACK")
        ack = await move
        assert isinstance(ack, p.MoveAck) and ack.ply == 0
        assert isinstance(await board, p.Board)
    assert isinstance(await a.call(p.Ping), p.Pong)  # and the connection goes on
