"""``max_games_per_user`` on a cluster: a user's games are counted on every node, and the
lobby refuses a new game past the cap as a lone server does (real node processes)."""

from __future__ import annotations

import protocol as p
from tests.server.support import Clients, start_game

from .conftest import Cluster

CLOCK = p.Fischer(base_ms=600_000, increment_ms=0)


async def test_a_user_at_the_cap_on_one_node_cannot_start_a_game_on_another(
        cluster: Cluster) -> None:
    a_node, b_node = await cluster.start_nodes(("a", "b"), "--max-games-per-user", "1")
    clients = Clients(a_node.url)
    try:
        alice, bob = await clients.guest(), await clients.guest(b_node.url)
        await start_game(alice, bob, "hadron")  # accepted on b: b owns it
        carol = await clients.guest(b_node.url)
        error = await alice.refused(p.Seek, game="hadron", options={}, clock=CLOCK)
        assert error.code == "conflict" and "you have 1 games" in str(error)
        error = await carol.refused(p.Challenge, to=alice.name, game="hadron", options={},
                                    clock=CLOCK, color=0)
        assert error.code == "conflict" and f"{alice.name} has 1 games" in str(error)
        # a seek of a user at the cap stays open; one of a free user is taken
        opened = await carol.call(p.Seek, game="hadron", options={}, clock=CLOCK)
        error = await alice.refused(p.AcceptSeek, seek_id=opened.seek_id)
        assert error.code == "conflict" and "you have 1 games" in str(error)
        dave, erin = await clients.guest(), await clients.guest(b_node.url)
        challenge = await dave.call(p.Challenge, to=erin.name, game="hadron", options={},
                                    clock=CLOCK, color=0)  # dave is free yet
        assert isinstance(await dave.call(p.AcceptSeek, seek_id=opened.seek_id), p.Ok)
        started = await dave.wait_for(p.GameStarted)
        assert (await carol.wait_for(p.GameStarted)).game_id == started.game_id
        # now at the cap, dave's challenge cannot be accepted, and it stays pending
        error = await erin.refused(p.AcceptChallenge, challenge_id=challenge.challenge_id)
        assert error.code == "conflict" and f"{dave.name} has 1 games" in str(error)
        assert isinstance(await erin.call(p.DeclineChallenge,
                                          challenge_id=challenge.challenge_id), p.Ok)
    finally:
        await clients.close_all()
