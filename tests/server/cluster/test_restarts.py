"""Redis, or PostgreSQL, restarted during play across two nodes: the requests made while it
is away fail with ``internal_error`` (safe to send again), nothing acknowledged is lost,
nothing is stored twice, and play carries on by itself once it is back.

Each test runs its own server to restart (``private_redis``, ``private_postgres``), never
the machine's shared ones.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import protocol as p
from clients.connection import ServerError
from tests.server.support import Clients, Game, assert_record_replays, start_game

from .conftest import Cluster, PrivatePostgres, PrivateRedis

LEASE = ("--lease-ms", "3000")


async def persist(call: Callable[[], Awaitable[Any]], timeout_s: float = 40.0) -> Any:
    """Send a request again while the server says internal_error or not_stored (what a
    client does)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return await call()
        except ServerError as exc:
            if exc.code not in ("internal_error", "not_stored") or (
                    time.monotonic() > deadline):
                raise
            await asyncio.sleep(0.3)


def quiet_move(game: Game, rng: random.Random) -> str:
    for _ in range(200):
        move = str(game.state.random_move(rng))
        if not game.state.play(move).is_over:
            return move
    raise AssertionError(f"no quiet move at ply {game.ply}")


async def play(game: Game, rng: random.Random, played: list[str]) -> None:
    move = quiet_move(game, rng)
    ack = await persist(lambda: game.mover.call(p.Move, game_id=game.game_id, ply=game.ply,
                                                 move=move))
    assert isinstance(ack, p.MoveAck) and ack.ply == len(played)
    game.state = game.state.play(move)
    played.append(move)


async def two_node_game(cluster: Cluster, clients: Clients) -> Game:
    """A game owned by node a, alice on a and bob on b."""
    a_node, b_node = await cluster.start_nodes(("a", "b"), *LEASE)
    clients.url = a_node.url
    alice, bob = await clients.guest(), await clients.guest()
    game = await start_game(alice, bob, "hadron")
    await bob.close()
    bob = await clients.with_token(bob.token, b_node.url)
    await bob.call(p.Resume, game_id=game.game_id, since_seq=0)
    return dataclasses.replace(game, players=(alice, bob))


async def finish_and_check(game: Game, played: list[str], logs: Callable[[], str]) -> None:
    alice, bob = game.players
    await persist(lambda: alice.call(p.Resign, game_id=game.game_id))
    record = await persist(lambda: game.record(bob))
    assert [m.move.lower() for m in record.moves] == [m.lower() for m in played]
    assert record.result is not None and record.result.reason == "resign"
    assert_record_replays(record)
    for player in (alice, bob):  # each saw every move and the end, by events or a snapshot
        seen: set[int] = set()
        while True:
            event = await player.conn.next_event(10)
            if getattr(event, "game_id", None) == game.game_id and isinstance(event, p.Moved):
                seen.add(event.ply)
            elif isinstance(event, p.GameState) and event.game.game_id == game.game_id:
                seen.update(range(len(event.game.moves)))
                if event.game.status == "over":
                    break
            if isinstance(event, p.GameOver) and event.game_id == game.game_id:
                break
        assert seen == set(range(len(played))), (player.name, sorted(seen), logs())


async def test_redis_restarted_during_play(cluster: Cluster, private_redis: PrivateRedis
                                           ) -> None:
    cluster.redis_url = private_redis.url
    clients = Clients("")
    try:
        game = await two_node_game(cluster, clients)
        rng, played = random.Random(4), []
        for _ in range(3):
            await play(game, rng, played)
        private_redis.stop()  # forgets everything: leases, presence, subscriptions
        await asyncio.sleep(0.5)
        private_redis.start()
        for _ in range(6):
            await play(game, rng, played)
        await finish_and_check(game, played, cluster.logs)
    finally:
        await clients.close_all()


async def test_postgres_restarted_during_play(cluster: Cluster,
                                              private_postgres: PrivatePostgres) -> None:
    cluster.db_url = private_postgres.url
    clients = Clients("")
    try:
        game = await two_node_game(cluster, clients)
        rng, played = random.Random(6), []
        for _ in range(3):
            await play(game, rng, played)
        private_postgres.stop("immediate")  # a crash: recovery from the WAL at the start
        waiting = asyncio.ensure_future(play(game, rng, played))  # sent while it is down
        await asyncio.sleep(1.0)
        await asyncio.to_thread(private_postgres.start)
        await waiting
        for _ in range(5):
            await play(game, rng, played)
        await finish_and_check(game, played, cluster.logs)
    finally:
        await clients.close_all()
