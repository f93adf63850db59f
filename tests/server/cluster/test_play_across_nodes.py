"""Games across nodes: real node processes on the real Redis and PostgreSQL.

The players of a game and its spectator sit on different nodes; each request about the game
goes to the node that owns it and every event reaches every node that has a follower.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import urllib.request

import engine
import protocol as p
from tests.server.support import Clients, Game, Player, assert_record_replays, start_game

from .conftest import Cluster


async def metrics(port: int | None) -> dict[str, float]:
    """A node's /metrics, the samples without labels."""
    def fetch() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            return str(reply.read().decode())
    found = {}
    for line in (await asyncio.to_thread(fetch)).splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, value = line.split()
            found[name] = float(value)
    return found


async def on_node(clients: Clients, player: Player, url: str) -> Player:
    """The same user, logged in again on another node (its first connection closed)."""
    await player.close()
    return await clients.with_token(player.token, url)


async def test_players_and_a_spectator_on_three_nodes_play_a_game_to_its_end(
        cluster: Cluster) -> None:
    a_node, b_node, c_node = await cluster.start_nodes(("a", "b", "c"))
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

        a_metrics, b_metrics = [await metrics(node.port) for node in (a_node, b_node)]
        assert a_metrics["tessera_cluster_owned_games"] == 0  # released at the end
        assert a_metrics["tessera_cluster_served_requests_total"] >= len(acks) // 2
        assert b_metrics["tessera_cluster_forwarded_requests_total"] >= len(acks) // 2
        assert b_metrics["tessera_cluster_request_seconds_count"] == b_metrics[
            "tessera_cluster_forwarded_requests_total"]
    finally:
        await clients.close_all()


async def test_a_forwarded_move_crosses_redis_once_each_way(cluster: Cluster) -> None:
    """A player on node b plays on a game node a owns: each move is served by a, and b
    gets no reply for it (a's ``moved`` on the game's channel acknowledges it), yet the
    player sees ``moved`` then ``move_ack``, and ``game_over`` before the ack of the move
    that ends the game, as on one server."""
    a_node, b_node = await cluster.start_nodes(("a", "b"))
    clients = Clients(a_node.url)
    try:
        alice, bob = await clients.guest(), await clients.guest()
        game = await start_game(alice, bob, "hadron", {"size": 5})
        bob = await on_node(clients, bob, b_node.url)
        await bob.call(p.Resume, game_id=game.game_id, since_seq=0)
        game = dataclasses.replace(game, players=(alice, bob))
        before = [await metrics(node.port) for node in (a_node, b_node)]

        rng = random.Random(5)  # bob (seat 1) plays the last move
        bob_moves = 0
        while not game.state.is_over:
            if game.mover is not bob:
                await game.play(rng=rng)
                continue
            await bob.drain(0.05)
            ack = await game.play(rng=rng)
            bob_moves += 1
            queued = []  # what bob got before the ack, in order
            while not bob.conn.events.empty():
                queued.append(bob.conn.events.get_nowait())
            assert isinstance(queued[0], p.Moved), queued
            assert (queued[0].seq, queued[0].ply) == (ack.seq, ack.ply), queued
            if game.state.is_over:
                assert isinstance(queued[1], p.GameOver), queued
        assert game.mover is alice, "bob played the last move"

        after = [await metrics(node.port) for node in (a_node, b_node)]
        served = [after[0][name] - before[0][name] for name in (
            "tessera_cluster_served_requests_total",)]
        assert served[0] >= bob_moves
        forwarded = after[1]["tessera_cluster_forwarded_moves_total"] - before[1][
            "tessera_cluster_forwarded_moves_total"]
        assert forwarded == bob_moves
        replies = after[1]["tessera_cluster_replies_total"] - before[1][
            "tessera_cluster_replies_total"]
        assert replies == 0, (bob_moves, cluster.logs())
    finally:
        await clients.close_all()


async def test_chat_resign_and_errors_cross_nodes(cluster: Cluster) -> None:
    a_node, b_node = await cluster.start_nodes(("a", "b"))
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


async def _first_moves(game: Game) -> None:
    """Each player moves once: both are seated, wherever the game runs."""
    rng = random.Random(3)
    for _ in range(2):
        await game.play_quiet_move(rng)
    for player in game.players:
        seen = [e.seq for e in await player.drain(0.3) if isinstance(e, p.Moved)]
        assert seen[-1:] == [3], seen


async def test_a_seek_made_on_one_node_is_taken_from_another(cluster: Cluster) -> None:
    a_node, b_node, c_node = await cluster.start_nodes(("a", "b", "c"))
    clients = Clients(a_node.url)
    try:
        watcher = await clients.guest(c_node.url)
        listing = await watcher.call(p.LobbySubscribe)
        assert listing.seeks == ()
        alice = await clients.guest()
        bob = await clients.guest(b_node.url)
        clock = p.Fischer(base_ms=600_000, increment_ms=0)
        created = await alice.call(p.Seek, game="yodd", options={"size": 4}, clock=clock)
        added = await watcher.wait_for(p.SeekAdded)
        assert (added.seek.seek_id, added.seek.user.name) == (created.seek_id, alice.name)
        assert [s.seek_id for s in (await bob.call(p.LobbySubscribe)).seeks] == [
            created.seek_id]

        assert isinstance(await bob.call(p.AcceptSeek, seek_id=created.seek_id), p.Ok)
        started = await bob.wait_for(p.GameStarted)
        assert (await alice.wait_for(p.GameStarted)).game_id == started.game_id
        taken = await alice.wait_for(p.SeekTaken, seek_id=created.seek_id)
        assert taken.game_id == started.game_id
        assert (await watcher.wait_for(p.SeekRemoved)).seek_id == created.seek_id
        again = await alice.refused(p.AcceptSeek, seek_id=created.seek_id)
        assert again.code == "not_found"

        snapshot = started.snapshot
        by_name = {alice.name: alice, bob.name: bob}
        players = (by_name[snapshot.players[0].name], by_name[snapshot.players[1].name])
        await _first_moves(Game(snapshot.game_id, "yodd", dict(snapshot.options), players,
                                started, engine.new_game("yodd", **snapshot.options)))
    finally:
        await clients.close_all()


async def test_seeks_on_two_nodes_pair_and_a_challenge_crosses_nodes(
        cluster: Cluster) -> None:
    a_node, b_node = await cluster.start_nodes(("a", "b"))
    clients = Clients(a_node.url)
    try:
        alice = await clients.guest()
        bob = await clients.guest(b_node.url)
        clock = p.Fischer(base_ms=600_000, increment_ms=0)
        first = await alice.call(p.Seek, game="hadron", options={}, clock=clock)
        second = await bob.call(p.Seek, game="hadron", options={}, clock=clock)
        for player, seek in ((alice, first), (bob, second)):  # game_started, then seek_taken
            started = await player.wait_for(p.GameStarted)
            taken = await player.wait_for(p.SeekTaken)
            assert (taken.seek_id, taken.game_id) == (seek.seek_id, started.game_id)

        # a challenge from b to a user on a, accepted there: the game is a's
        game = await start_game(bob, alice, "yodd", {"size": 4})
        await _first_moves(game)
        declined = await bob.call(p.Challenge, to=alice.name, game="yodd", options={},
                                  clock=clock, color=0)
        await alice.wait_for(p.ChallengeReceived, challenge_id=declined.challenge_id)
        await alice.call(p.DeclineChallenge, challenge_id=declined.challenge_id,
                         message="not now")
        ended = await bob.wait_for(p.ChallengeEnded, challenge_id=declined.challenge_id)
        assert (ended.reason, ended.message) == ("declined", "not now")
        nobody = await bob.refused(p.Challenge, to="nobody-here", game="yodd", options={},
                                   clock=clock, color=0)
        assert nobody.code == "not_found"
    finally:
        await clients.close_all()


async def test_a_game_followed_on_no_other_node_publishes_nothing_until_one_watches(
        cluster: Cluster) -> None:
    """Both players on the owner: their moves cost Redis no publish. A spectator on another
    node then watches: from then on every event is published, and it sees each move."""
    a_node, b_node = await cluster.start_nodes(("a", "b"))
    clients = Clients(a_node.url)
    try:
        alice, bob = await clients.guest(), await clients.guest()
        game = await start_game(alice, bob, "hadron", {"size": 7})
        rng = random.Random(5)
        for _ in range(4):
            await game.play(rng=rng)
        before = await metrics(a_node.port)
        assert before["tessera_cluster_events_published_total"] == 0
        assert before["tessera_cluster_events_unpublished_total"] >= 4

        spectator = await clients.spectator(b_node.url)
        watched = await spectator.call(p.Watch, game_id=game.game_id)
        assert isinstance(watched, p.GameState) and watched.game.ply == 4
        acks = [await game.play(rng=rng) for _ in range(3)]
        seen = []
        while len(seen) < len(acks):
            event = await spectator.next_event(10)
            if isinstance(event, p.Moved) and event.game_id == game.game_id:
                seen.append(event.seq)
        assert seen == [ack.seq for ack in acks], cluster.logs()
        after = await metrics(a_node.port)
        assert after["tessera_cluster_events_published_total"] >= len(acks)
    finally:
        await clients.close_all()
