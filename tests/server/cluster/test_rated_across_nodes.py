"""Rated games across nodes: real node processes on the real Redis and PostgreSQL.

Two registered players on different nodes: a rated seek pairs with a rated one only (never a
casual one), within the ranges; the game starts rated on the node that paired it and its end
changes both rating rows, equal to ``tessera ratings verify``'s recomputation; the lobby on
every node lists the rated flag, the range and the owner's rating as a lone server does; a
rated challenge crosses nodes with the players' new ratings; a rematch crosses nodes; the
ladder pairs bots connected to different nodes.
"""

from __future__ import annotations

import asyncio
import json
import random

import engine
import protocol as p
from clients.bots.random_bot import RandomBot
from clients.sdk import BotRunner, Policy
from tests.server.support import Clients, Game, Player, run_cli

from .conftest import Cluster

CLOCK = p.Fischer(base_ms=600_000, increment_ms=0)


def game_of(started: p.GameStarted, *players: Player) -> Game:
    """The test's view of a started game, its players in their seats."""
    snapshot = started.snapshot
    by_name = {player.name: player for player in players}
    seated = (by_name[snapshot.players[0].name], by_name[snapshot.players[1].name])
    return Game(snapshot.game_id, snapshot.game, dict(snapshot.options), seated, started,
                engine.new_game(snapshot.game, **snapshot.options))


async def play_out(game: Game, rng: random.Random) -> p.GameOver:
    while not game.state.is_over:
        await game.play(rng=rng)
    over = await game.players[0].wait_for(p.GameOver, game_id=game.game_id)
    assert await game.players[1].wait_for(p.GameOver, game_id=game.game_id) == over
    return over


async def test_a_rated_game_between_nodes_rates_both_players(cluster: Cluster) -> None:
    a_node, b_node = await cluster.start_nodes(("a", "b"))
    clients = Clients(a_node.url)
    try:
        alice = await clients.register("alice", "correct horse")
        bob = await clients.register("bob", "battery staple", b_node.url)
        watcher = await clients.spectator(b_node.url)
        assert isinstance(await watcher.call(p.LobbySubscribe), p.Lobby)

        # a guest may not make or take a rated offer on a cluster either
        guest = await clients.guest(b_node.url)
        refused = await guest.refused(p.Seek, game="hadron", options={}, clock=CLOCK,
                                      rated=True)
        assert refused.code == "forbidden"

        # alice's rated seek is listed (on b) as on one process: rated, range, rating
        wanted = await alice.call(p.Seek, game="hadron", options={}, clock=CLOCK,
                                  rated=True, rating_max=1600)
        added = await watcher.wait_for(p.SeekAdded)
        assert (added.seek.seek_id, added.seek.rated, added.seek.rating_max) == (
            wanted.seek_id, True, 1600)
        error = await guest.refused(p.AcceptSeek, seek_id=wanted.seek_id)
        assert error.code == "forbidden" and "guests" in str(error)
        # bob (a new player: 1500) may not take a seek for 1600 and up, from node b
        high = await alice.call(p.Seek, game="hadron", options={}, clock=CLOCK,
                                rated=True, rating_min=1600)
        error = await bob.refused(p.AcceptSeek, seek_id=high.seek_id)
        assert error.code == "forbidden" and "1600" in str(error)
        await alice.call(p.CancelSeek, seek_id=high.seek_id)
        # bob's casual seek of the same offer does not pair with it
        casual = await bob.call(p.Seek, game="hadron", options={}, clock=CLOCK)
        assert casual.seek_id != wanted.seek_id
        listed = (await bob.call(p.LobbySubscribe)).seeks
        assert [(s.seek_id, s.rated) for s in listed] == [
            (wanted.seek_id, True), (casual.seek_id, None)]
        # bob's rated one does (on node b: b owns the game)
        mine = await bob.call(p.Seek, game="hadron", options={}, clock=CLOCK, rated=True)
        started = await bob.wait_for(p.GameStarted)
        assert started.snapshot.rated is True
        assert (await alice.wait_for(p.GameStarted)) == started
        assert (await alice.wait_for(p.SeekTaken)).seek_id == wanted.seek_id
        assert (await bob.wait_for(p.SeekTaken)).seek_id == mine.seek_id
        game = game_of(started, alice, bob)

        over = await play_out(game, random.Random(14))
        assert over.winner is not None and over.rating_changes is not None, cluster.logs()
        changes = {game.players[seat].name: change
                   for seat, change in enumerate(over.rating_changes)}
        for change in changes.values():
            assert change.rating_before == 1500 and change.rating_after != 1500
        record = await game.record(alice)  # asked on node a
        assert record.rated is True and record.rating_changes == over.rating_changes

        # both rows changed, and equal the recomputation from the stored games
        for player in (alice, bob):
            profile = await alice.call(p.GetProfile, name=player.name)
            [pool] = profile.user.ratings or ()
            assert (pool.game, pool.games) == ("hadron", 1)
            assert pool.rating == round(changes[player.name].rating_after)
        verified = await run_cli("ratings", "verify", "--db", cluster.db_url)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        # the online list shows both ratings, on either node
        for node in (a_node, b_node):
            onlookers = await clients.spectator(node.url)
            players = {u.name: u for u in (await onlookers.call(p.LobbySubscribe)).players}
            for player in (alice, bob):
                [pool] = players[player.name].ratings or ()
                assert pool.rating == round(changes[player.name].rating_after)
            assert players[guest.name].ratings is None

        # alice's node learns her new rating though b played the game: her next seek
        # shows it, and a rated challenge from b to a carries both new ratings
        again = await alice.call(p.Seek, game="hadron", options={}, clock=CLOCK, rated=True)
        relisted = [s for s in (await bob.call(p.LobbySubscribe)).seeks
                    if s.seek_id == again.seek_id]
        assert relisted[0].user.rating is not None
        assert relisted[0].user.rating.rating == round(changes[alice.name].rating_after)
        await alice.call(p.CancelSeek, seek_id=again.seek_id)
        created = await bob.call(p.Challenge, to=alice.name, game="hadron", options={},
                                 clock=CLOCK, color=0, rated=True)
        received = await alice.wait_for(p.ChallengeReceived,
                                        challenge_id=created.challenge_id)
        assert received.rated is True and received.from_.rating is not None
        await alice.call(p.AcceptChallenge, challenge_id=created.challenge_id)
        second = await bob.wait_for(p.GameStarted)
        assert second.snapshot.rated is True
        assert [u.rating.rating if u.rating else None for u in second.snapshot.players] == [
            round(changes[bob.name].rating_after), round(changes[alice.name].rating_after)]
        await bob.call(p.Resign, game_id=second.game_id)
        resigned = await alice.wait_for(p.GameOver, game_id=second.game_id)
        assert resigned.winner == 1 and resigned.rating_changes is not None
        verified = await run_cli("ratings", "verify", "--db", cluster.db_url)
        assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        await clients.close_all()


async def test_a_rematch_crosses_nodes_and_lapses_when_a_player_leaves(
        cluster: Cluster) -> None:
    a_node, b_node = await cluster.start_nodes(("a", "b"))
    clients = Clients(a_node.url)
    try:
        alice = await clients.register("alice", "correct horse")
        bob = await clients.register("bob", "battery staple", b_node.url)
        # a rated challenge from a, accepted on b: b owns the game
        created = await alice.call(p.Challenge, to=bob.name, game="hadron", options={},
                                   clock=CLOCK, color=0, rated=True)
        await bob.wait_for(p.ChallengeReceived, challenge_id=created.challenge_id)
        await bob.call(p.AcceptChallenge, challenge_id=created.challenge_id)
        game = game_of(await alice.wait_for(p.GameStarted), alice, bob)
        over = await play_out(game, random.Random(5))
        assert over.rating_changes is not None

        # offered on a, the game b played: bob hears it on b and accepts there
        await alice.call(p.OfferRematch, game_id=game.game_id)
        offered = await bob.wait_for(p.RematchOffered, game_id=game.game_id)
        assert offered.by == 0
        assert (await alice.wait_for(p.RematchOffered, game_id=game.game_id)) == offered
        await bob.call(p.AcceptRematch, game_id=game.game_id)
        started = await alice.wait_for(p.GameStarted)  # on a, before rematch_ended
        ended = await alice.wait_for(p.RematchEnded, game_id=game.game_id)
        assert (ended.reason, ended.new_game_id) == ("accepted", started.game_id)
        assert (await bob.wait_for(p.RematchEnded, game_id=game.game_id)) == ended
        snapshot = started.snapshot
        assert [u.name for u in snapshot.players] == ["bob", "alice"]  # colours swapped
        assert (snapshot.game, snapshot.options, snapshot.clock, snapshot.rated) == (
            "hadron", game.options, CLOCK, True)
        assert [u.rating.rating if u.rating else None for u in snapshot.players] == [
            round(over.rating_changes[1].rating_after),
            round(over.rating_changes[0].rating_after)]
        error = await alice.refused(p.AcceptRematch, game_id=game.game_id)
        assert error.code == "not_found"  # taken once
        rematch = game_of(started, alice, bob)
        await rematch.play(rng=random.Random(1))  # the rematch plays across the nodes
        await alice.call(p.Resign, game_id=rematch.game_id)
        await bob.wait_for(p.GameOver, game_id=rematch.game_id)

        # declined on b, both hear it; then an offer lapses when its maker leaves
        await alice.call(p.OfferRematch, game_id=rematch.game_id)
        await bob.wait_for(p.RematchOffered, game_id=rematch.game_id, by=1)
        await bob.call(p.DeclineRematch, game_id=rematch.game_id)
        declined = await alice.wait_for(p.RematchEnded, game_id=rematch.game_id)
        assert declined.reason == "declined"
        await bob.call(p.OfferRematch, game_id=rematch.game_id)
        await alice.wait_for(p.RematchOffered, game_id=rematch.game_id, by=0)
        await bob.close()
        lapsed = await alice.wait_for(p.RematchEnded, game_id=rematch.game_id)
        assert lapsed.reason == "lapsed"
        error = await alice.refused(p.AcceptRematch, game_id=rematch.game_id)
        assert error.code == "not_found"
        error = await alice.refused(p.OfferRematch, game_id=rematch.game_id)
        assert error.code == "conflict" and "bob is not online" in str(error)
        verified = await run_cli("ratings", "verify", "--db", cluster.db_url)
        assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        await clients.close_all()


async def test_the_ladder_pairs_bots_on_different_nodes(cluster: Cluster) -> None:
    nodes = await cluster.start_nodes(("a", "b"), "--ladder-round", "0.3")
    names = ("lc-ann", "lc-bea", "lc-cid", "lc-dot")  # two on each node
    runners = []
    for index, name in enumerate(names):
        made = await run_cli("admin", "create-bot", name, "--db", cluster.db_url)
        assert made.returncode == 0, made.stderr
        token = next(line.split(": ", 1)[1] for line in made.stdout.splitlines()
                     if line.startswith("token "))
        runners.append(BotRunner(RandomBot(seed=index), url=nodes[index // 2].url,
                                 token=token, backoff_s=(0.1, 0.5),
                                 policy=Policy(ladder=("hadron",),
                                               accept_from=frozenset())))
    tasks = [asyncio.create_task(runner.run()) for runner in runners]
    clients = Clients(nodes[0].url)
    try:
        await asyncio.wait_for(asyncio.gather(*(r.ready.wait() for r in runners)), 30)
        for _ in range(1200):  # six games, each counted by both of its bots
            if sum(len(r.results) for r in runners) >= 12:
                break
            await asyncio.sleep(0.1)
        # the standings on either node list the four bots, wherever they joined
        for node in nodes:
            spectator = await clients.spectator(node.url)
            standings = await spectator.call(p.GetStandings, game="hadron")
            assert sorted(s.user.name for s in standings.standings) == sorted(names)
    finally:
        for runner in runners:
            runner.stop()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
        await clients.close_all()
    dump = await run_cli("dump", "--all", "--db", cluster.db_url)
    records = [json.loads(line) for line in dump.stdout.splitlines()]
    assert len(records) >= 6, cluster.logs()
    assert all(record.get("rated") for record in records)
    node_of = {name: index // 2 for index, name in enumerate(names)}
    pairs = [tuple(player["name"] for player in record["players"]) for record in records]
    assert any(node_of[a] != node_of[b] for a, b in pairs), pairs  # across nodes
    assert all(a != b for a, b in pairs)
    verified = await run_cli("ratings", "verify", "--db", cluster.db_url)
    assert verified.returncode == 0, verified.stdout + verified.stderr


async def test_both_players_offering_a_rematch_at_once_start_one_game(
        cluster: Cluster) -> None:
    a_node, b_node = await cluster.start_nodes(("a", "b"))
    clients = Clients(a_node.url)
    try:
        alice = await clients.register("alice", "correct horse")
        bob = await clients.register("bob", "battery staple", b_node.url)
        created = await alice.call(p.Challenge, to=bob.name, game="hadron", options={},
                                   clock=CLOCK, color=0)
        await bob.wait_for(p.ChallengeReceived, challenge_id=created.challenge_id)
        await bob.call(p.AcceptChallenge, challenge_id=created.challenge_id)
        game = game_of(await alice.wait_for(p.GameStarted), alice, bob)
        await alice.call(p.Resign, game_id=game.game_id)
        await bob.wait_for(p.GameOver, game_id=game.game_id)
        # each offers on their own node at once: one offer, one acceptance, one game
        replies = await asyncio.gather(alice.call(p.OfferRematch, game_id=game.game_id),
                                       bob.call(p.OfferRematch, game_id=game.game_id))
        assert all(isinstance(reply, p.Ok) for reply in replies)
        ended = await alice.wait_for(p.RematchEnded, game_id=game.game_id)
        assert ended.reason == "accepted"
        assert (await bob.wait_for(p.RematchEnded, game_id=game.game_id)) == ended
        dump = await run_cli("dump", "--all", "--db", cluster.db_url)
        ids = sorted(json.loads(line)["game_id"] for line in dump.stdout.splitlines())
        assert ids == sorted([game.game_id, ended.new_game_id]), ids
    finally:
        await clients.close_all()
