"""Games across nodes: real node processes on the real Redis and PostgreSQL.

The players of a game and its spectator sit on different nodes; each request about the game
goes to the node that owns it and every event reaches every node that has a follower.
"""

from __future__ import annotations

import dataclasses
import random

import protocol as p
from tests.server.support import Clients, Game, Player, assert_record_replays, start_game

from .conftest import Cluster


async def on_node(clients: Clients, player: Player, url: str) -> Player:
    """The same user, logged in again on another node (its first connection closed)."""
    await player.close()
    return await clients.with_token(player.token, url)


async def test_players_and_a_spectator_on_three_nodes_play_a_game_to_its_end(
        cluster: Cluster) -> None:
    a_node, b_node, c_node = [await cluster.start(name) for name in ("a", "b", "c")]
    clients = Clients(a_node.url)
    try:
        alice, bob = await clients.guest(), await clients.guest()
        game = await start_game(alice, bob, "yodd", {"size": 4})
        bob = await on_node(clients, bob, b_node.url)  # the game stays on node a
        assert bob.authed.active_games == (game.game_id,)
        resumed = await bob.call(p.Resume, game_id=game.game_id, since_seq=0)
        # seq 2: bob left (his connection to a closed), 3: bob is back (on b)
        assert isinstance(resumed, p.GameState) and resumed.game.seq == 3
        game = dataclasses.replace(game, players=(alice, bob))
        spectator = await clients.spectator(c_node.url)
        watched = await spectator.call(p.Watch, game_id=game.game_id)
        assert isinstance(watched, p.GameState) and watched.game.ply == 0

        rng = random.Random(11)
        acks = []
        while not game.state.is_over:
            acks.append(await game.play(rng=rng))
        seqs = [ack.seq for ack in acks]
        assert seqs == list(range(4, 4 + len(acks)))

        for follower in (alice.conn, bob.conn, spectator):  # every move, in order, once
            events = []
            while not events or not isinstance(events[-1], p.GameOver):
                event = await follower.next_event(10)
                if getattr(event, "game_id", None) == game.game_id:
                    events.append(event)
            moves = [e for e in events if isinstance(e, p.Moved)]
            assert [m.seq for m in moves] == seqs, cluster.logs()
            assert [m.move for m in moves] == [
                m.move for m in (await game.record(alice)).moves]
            assert events[-1].seq == seqs[-1] + 1

        record = await game.record(spectator)  # asked on node c
        assert record.status == "over" and len(record.moves) == len(acks)
        assert_record_replays(record)
    finally:
        await clients.close_all()


async def test_chat_resign_and_errors_cross_nodes(cluster: Cluster) -> None:
    a_node, b_node = [await cluster.start(name) for name in ("a", "b")]
    clients = Clients(a_node.url)
    try:
        alice, bob = await clients.guest(), await clients.guest()
        game: Game = await start_game(alice, bob, "hadron")
        bob = await on_node(clients, bob, b_node.url)
        await bob.call(p.Resume, game_id=game.game_id, since_seq=0)
        game = dataclasses.replace(game, players=(alice, bob))

        # a refusal from the owner reaches the client as the owner gave it
        error = await bob.refused(p.Move, game_id=game.game_id, ply=0, move="a1")
        assert (error.code, error.game_id) == ("not_your_turn", game.game_id)
        await game.play(rng=random.Random(1))
        said = await bob.call(p.Chat, game_id=game.game_id, text="hello from b")
        assert isinstance(said, p.Ok)
        heard = await alice.wait_for(p.ChatMessage, game_id=game.game_id)
        assert (heard.from_, heard.text) == (bob.name, "hello from b")
        await bob.call(p.Resign, game_id=game.game_id)
        over = await alice.wait_for(p.GameOver, game_id=game.game_id)
        assert (over.winner, over.reason) == (0, "resign")
        assert (await bob.wait_for(p.GameOver, game_id=game.game_id)) == over
        late = await bob.refused(p.Move, game_id=game.game_id, ply=1, move="a1")
        assert late.code == "game_over"
    finally:
        await clients.close_all()
