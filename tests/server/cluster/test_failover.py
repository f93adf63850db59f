"""A node dies (SIGKILL) or stalls past its lease (SIGSTOP): its games carry on elsewhere,
with nothing acknowledged lost, nothing played twice, and no late write stored.

Real node processes on the real Redis and PostgreSQL; leases of 2 s keep the waits short
(a killed node's, a minute: its games must not wait for its leases to run out).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import signal

from sqlalchemy import text

import protocol as p
from server.storage import Store, make_engine
from tests.server.support import Clients, Game, Player, assert_record_replays, start_game

from .conftest import Cluster, eventually

LEASE = ("--lease-ms", "2000")
LONG_LEASE = ("--lease-ms", "60000")


async def on_node(clients: Clients, player: Player, url: str) -> Player:
    await player.close()
    moved = await clients.with_token(player.token, url)
    await moved.call(p.Resume, game_id=moved.authed.active_games[0], since_seq=0)
    return moved


async def stored_epoch(db_url: str, game_id: str) -> int:
    engine = make_engine(db_url)
    try:
        async with engine.connect() as conn:
            return int((await conn.execute(text("SELECT epoch FROM games WHERE id = :g"),
                                           {"g": game_id})).scalar_one())
    finally:
        await engine.dispose()


async def epoch_is(db_url: str, game_id: str, epoch: int) -> bool:
    return await stored_epoch(db_url, game_id) == epoch


def quiet_move(game: Game, rng: random.Random) -> str:
    """A random legal move that does not end the game."""
    for _ in range(200):
        move = str(game.state.random_move(rng))
        if not game.state.play(move).is_over:
            return move
    raise AssertionError(f"no quiet move at ply {game.ply}")


async def test_a_killed_nodes_game_carries_on_on_another_node(cluster: Cluster) -> None:
    """Taken over as soon as the others see the process gone (its channel in Redis
    emptied, a beat missed), its lease broken: not a minute later, when it would run out."""
    a_node, b_node, c_node = await cluster.start_nodes(("a", "b", "c"), *LONG_LEASE)
    clients = Clients(a_node.url)
    try:
        alice, bob = await clients.guest(), await clients.guest()
        game = await start_game(alice, bob, "hadron")  # owned by a
        alice = await on_node(clients, alice, b_node.url)
        bob = await on_node(clients, bob, c_node.url)
        game = dataclasses.replace(game, players=(alice, bob))
        rng = random.Random(5)
        played = []

        async def play() -> None:
            move = quiet_move(game, rng)
            ack = await game.play(move)
            assert ack.ply == len(played)
            played.append(move)

        for _ in range(4):
            await play()
        await a_node.stopped(signal.SIGKILL)  # mid-game, the owner dies
        mover = game.mover
        for _ in range(6):  # the first waits for the takeover (a second or two)
            await play()
        await alice.call(p.Resign, game_id=game.game_id)

        record = await game.record(bob)
        assert [m.move.lower() for m in record.moves] == [m.lower() for m in played]
        acked = list(range(len(played)))
        assert record.result is not None and record.result.reason == "resign"
        assert_record_replays(record)
        assert await stored_epoch(cluster.db_url, game.game_id) == 1  # taken over once
        # both players followed the whole game: every move once, in order
        for player in (alice, bob):
            events = await player.game_events(game.game_id)
            moved = [e.ply for e in events if isinstance(e, p.Moved)]
            assert moved == sorted(set(moved)) and moved[-1] == acked[-1], (player.name, moved)
            if player is not mover:
                assert any(isinstance(e, p.GameState) for e in events)  # the new owner's
    finally:
        await clients.close_all()


async def test_a_node_paused_past_its_lease_stores_nothing_late(cluster: Cluster) -> None:
    a_node, b_node = await cluster.start_nodes(("a", "b"), *LEASE)
    clients = Clients(a_node.url)
    try:
        alice, bob = await clients.guest(), await clients.guest()
        game = await start_game(alice, bob, "hadron")  # owned by a, alice stays on a
        bob = await on_node(clients, bob, b_node.url)
        game = dataclasses.replace(game, players=(alice, bob))
        rng = random.Random(8)
        for _ in range(2):
            await game.play_quiet_move(rng)
        assert game.mover is alice

        assert a_node.proc is not None
        a_node.proc.send_signal(signal.SIGSTOP)
        move = quiet_move(game, rng)
        late = asyncio.ensure_future(alice.conn.call(p.Move, game_id=game.game_id,
                                                     ply=game.ply, move=move))
        # the lease (2 s) runs out; b's sweep takes the game over
        await eventually(lambda: epoch_is(cluster.db_url, game.game_id, 1), 15, every_s=0.2)
        a_node.proc.send_signal(signal.SIGCONT)
        try:
            first = await asyncio.wait_for(late, 15)
        except Exception as exc:  # refused as not stored: safe to send again
            assert getattr(exc, "code", None) in ("internal_error", "not_stored"), exc
            first = await alice.call(p.Move, game_id=game.game_id, ply=game.ply, move=move)
        assert isinstance(first, p.MoveAck)
        game.state = game.state.play(move)
        await game.play_quiet_move(rng)  # bob, on b, the owner now
        await alice.call(p.Resign, game_id=game.game_id)

        record = await game.record(bob)
        assert [m.ply for m in record.moves] == [0, 1, 2, 3]  # the late move once
        assert record.moves[2].move.lower() == move.lower()
        assert_record_replays(record)
        assert await stored_epoch(cluster.db_url, game.game_id) == 1
        # alice, still on a, ended up following the live owner: she saw bob's move
        moved = [e.ply for e in await alice.game_events(game.game_id) if isinstance(e, p.Moved)]
        assert 3 in moved, moved
    finally:
        await clients.close_all()


async def test_a_stopped_node_hands_its_games_over(cluster: Cluster) -> None:
    """SIGTERM: the node writes what it holds, releases its leases and exits; the game
    goes on on the other node, its player there resuming after reconnecting."""
    a_node, b_node = await cluster.start_nodes(("a", "b"), *LEASE)
    clients = Clients(a_node.url)
    try:
        alice, bob = await clients.guest(), await clients.guest()
        game = await start_game(alice, bob, "hadron")  # owned by a, alice stays on a
        bob = await on_node(clients, bob, b_node.url)
        game = dataclasses.replace(game, players=(alice, bob))
        rng, played = random.Random(9), []
        for _ in range(3):
            move = quiet_move(game, rng)
            await game.play(move)
            played.append(move)
        assert await a_node.stopped(signal.SIGTERM) == 0
        alice = await on_node(clients, alice, b_node.url)  # reconnects to the live node
        game = dataclasses.replace(game, players=(alice, bob))
        for _ in range(3):
            move = quiet_move(game, rng)
            await game.play(move)
            played.append(move)
        await alice.call(p.Resign, game_id=game.game_id)
        record = await game.record(bob)
        assert [m.move.lower() for m in record.moves] == [m.lower() for m in played]
        assert_record_replays(record)
        assert await stored_epoch(cluster.db_url, game.game_id) == 1
    finally:
        await clients.close_all()


async def test_a_late_write_that_reaches_the_database_is_refused_there(cluster: Cluster
                                                                       ) -> None:
    """The fence is the database's: a node whose lease is, by its own clock, still good
    writes under its epoch, and PostgreSQL refuses it once another epoch was taken.

    The takeover is made in the database as another node's would be (``take_over_game``)
    while node a's lease runs on (a minute): a's own view says it owns the game, so the
    move's write reaches the database with epoch 0 and is refused there (``StaleEpoch``).
    Nobody hears of the move, it is not stored, and a resend is played once."""
    (a_node,) = await cluster.start_nodes(("a",), *LONG_LEASE)
    clients = Clients(a_node.url)
    engine = make_engine(cluster.db_url)
    try:
        alice, bob = await clients.guest(), await clients.guest()
        game = await start_game(alice, bob, "hadron")
        rng = random.Random(12)
        await game.play_quiet_move(rng)
        assert await stored_epoch(cluster.db_url, game.game_id) == 0

        assert await Store(engine).take_over_game(game.game_id) == 1  # another node's claim
        move = quiet_move(game, rng)
        mover, waiter = game.mover, game.waiter
        refused = await mover.refused(p.Move, game_id=game.game_id, ply=game.ply, move=move)
        assert refused.code == "internal_error", refused  # not stored: safe to send again
        heard = [e.ply for e in await waiter.drain() if isinstance(e, p.Moved)]
        assert heard == [0]  # the first move only
        async with engine.connect() as conn:
            stored = (await conn.execute(text("SELECT ply FROM moves WHERE game_id = :g "
                                              "ORDER BY ply"), {"g": game.game_id})).all()
        assert [row[0] for row in stored] == [0]
        assert "stale epoch" in a_node.log().lower() or "epoch 0 is stale" in a_node.log()

        # sent again, the move is played once, by the game's owner at a newer epoch
        ack = await mover.call(p.Move, game_id=game.game_id, ply=game.ply, move=move)
        assert isinstance(ack, p.MoveAck), ack
        game.state = game.state.play(move)
        await game.play_quiet_move(rng)
        await alice.call(p.Resign, game_id=game.game_id)
        record = await game.record(bob)
        assert [m.ply for m in record.moves] == [0, 1, 2]
        assert record.moves[1].move.lower() == move.lower()
        assert_record_replays(record)
        assert await stored_epoch(cluster.db_url, game.game_id) >= 2
    finally:
        await clients.close_all()
        await engine.dispose()
