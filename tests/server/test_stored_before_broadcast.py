"""Stored before broadcast (README's first promise): nobody hears of a move before it is
stored, so nobody ever sees a move that a crash then loses.

The database's write lock is held by another connection on the real SQLite file (``BEGIN
IMMEDIATE``, as any other writer would hold it) while a player moves: the move cannot be
stored, so neither the opponent nor a spectator may see ``moved`` and the mover gets no
``move_ack``. Released, the move is stored and everyone hears of it; killed (SIGKILL) while
it is held, the server never told anyone, and after a restart the move is not there.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

import protocol as p
from clients.connection import Connection, Disconnected

from .conftest import Live, TestDatabase, one_backend
from .support import TIMEOUT, Clients, Player, ServerProcess, start_game

# How long the move is kept waiting on the lock while the test listens for a `moved` that
# must not come. A server that broadcast first would send it within milliseconds; the lock
# must be let go well inside the server's busy timeout (5 s), after which the write fails.
HELD_S = 1.0


@contextlib.contextmanager
def write_lock(database: TestDatabase) -> Iterator[Callable[[], None]]:
    """Hold the SQLite file's write lock from a connection of the test's own; yields a
    function that lets it go early (it is let go at the end in any case)."""
    path = make_url(database.url).database
    assert path, database.url
    conn = sqlite3.connect(Path(path), isolation_level=None, timeout=10)
    conn.execute("BEGIN IMMEDIATE")
    released = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            conn.execute("ROLLBACK")
            conn.close()

    try:
        yield release
    finally:
        release()


async def heard(conn: Connection, quiet_s: float) -> list[Any]:
    """Every event a connection has or gets within ``quiet_s`` seconds of silence (or until
    it is closed)."""
    events: list[Any] = []
    with contextlib.suppress(TimeoutError, Disconnected):
        while True:
            events.append(await conn.next_event(quiet_s))
    return events


def moves_of(events: list[Any], game_id: str) -> list[int]:
    return [e.ply for e in events if isinstance(e, p.Moved) and e.game_id == game_id]


async def two_players_and_a_spectator(clients: Clients) -> tuple[Player, Player, Connection]:
    alice, bob = await clients.guest(), await clients.guest()
    return alice, bob, await clients.spectator()


@one_backend
async def test_nobody_hears_of_a_move_until_it_is_stored(server: Live,
                                                         database: TestDatabase) -> None:
    alice, bob, watcher = await two_players_and_a_spectator(server.clients)
    game = await start_game(alice, bob, "hadron")
    await game.watch(watcher)
    rng = random.Random(5)
    await game.play_quiet_move(rng)  # the lock free: stored, and heard at once
    for conn in (alice.conn, bob.conn, watcher):
        assert 0 in moves_of(await heard(conn, 0.3), game.game_id)
    room = server.running.app.games.live(game.game_id)
    assert room is not None

    mover, waiter = game.mover, game.waiter
    move = str(game.state.random_move(rng))
    with write_lock(database) as release:
        sent = asyncio.ensure_future(mover.conn.call(p.Move, game_id=game.game_id,
                                                     ply=game.ply, move=move))
        async with asyncio.timeout(TIMEOUT):  # the move is in the room, waiting on the store
            while not room.lock.locked():
                await asyncio.sleep(0.01)
        while_held = {name: await heard(conn, HELD_S / 3) for name, conn in
                      (("waiter", waiter.conn), ("spectator", watcher), ("mover", mover.conn))}
        assert not sent.done(), sent  # no move_ack (nor any reply) before it is stored
        assert room.lock.locked() and room.state.ply == 1  # still waiting on its commit
        release()
    assert {name: moves_of(events, game.game_id) for name, events in while_held.items()} == {
        "waiter": [], "spectator": [], "mover": []}

    ack = await asyncio.wait_for(sent, TIMEOUT)  # stored: now everyone hears of it
    assert isinstance(ack, p.MoveAck) and ack.ply == 1
    for conn in (waiter.conn, watcher):
        moved = await conn.wait_for(p.Moved, TIMEOUT, game_id=game.game_id)
        assert (moved.ply, moved.move.lower()) == (1, move.lower())
    record = await game.record()
    assert [m.ply for m in record.moves] == [0, 1]


@one_backend
async def test_a_move_lost_to_a_crash_before_its_commit_was_never_heard_of(
        server_process: Callable[..., ServerProcess], open_clients: Callable[[str], Clients],
        database: TestDatabase) -> None:
    proc = server_process("--grace", "30")
    await proc.start()
    clients = open_clients(proc.url)
    alice, bob, watcher = await two_players_and_a_spectator(clients)
    game = await start_game(alice, bob, "hadron")
    await game.watch(watcher)
    rng = random.Random(6)
    first = await game.play_quiet_move(rng)
    assert first.ply == 0
    for conn in (alice.conn, bob.conn, watcher):
        assert moves_of(await heard(conn, 0.3), game.game_id) == [0]

    mover, waiter = game.mover, game.waiter
    with write_lock(database):
        sent = asyncio.ensure_future(mover.conn.call(p.Move, game_id=game.game_id, ply=1,
                                                     move=str(game.state.random_move(rng))))
        while_held = {name: await heard(conn, HELD_S / 3) for name, conn in
                      (("waiter", waiter.conn), ("spectator", watcher), ("mover", mover.conn))}
        assert not sent.done(), sent
        assert await proc.stopped(signal.SIGKILL) == -signal.SIGKILL  # the lock still held
    # what each connection got up to its close: no move 1, and the mover no ack
    after_kill = {name: await heard(conn, TIMEOUT) for name, conn in
                  (("waiter", waiter.conn), ("spectator", watcher), ("mover", mover.conn))}
    heard_of = {name: moves_of(while_held[name] + after_kill[name], game.game_id)
                for name in while_held}
    assert heard_of == {"waiter": [], "spectator": [], "mover": []}
    try:
        reply = await asyncio.wait_for(sent, TIMEOUT)
    except Disconnected:
        reply = None
    assert reply is None, reply  # no ack: the connection ended without one

    await proc.start()  # the same database: the move is not stored
    again = open_clients(proc.url)
    looker = await again.spectator()
    record = await game.record(looker)
    assert [m.ply for m in record.moves] == [0]
    snapshot = await game.watch(looker)
    assert snapshot.ply == 1 and snapshot.result is None  # still on, at the stored ply
