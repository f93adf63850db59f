"""Rated games end to end on a real server, on SQLite and PostgreSQL: ratings move with
rated results only, both updates are stored with the game's end and equal the
recomputation, the lobby and profiles show them, rematches, and what is refused."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert

import engine
import protocol as p
from server.ratings import glicko2
from server.ratings.verify import verify
from server.storage.models import RatingRow

from .conftest import Live, both_topologies
from .support import FAST_CLOCK, Clients, Game, Player, _started_and_ended

pytestmark = both_topologies

PERIOD_S = 86_400.0  # the test settings' rating period (the default)


async def rated_game(a: Player, b: Player, key: str = "hadron", *, rated: bool = True,
                     clock: p.TimeControl = FAST_CLOCK) -> Game:
    """``a`` challenges ``b`` (seat 0) to a rated game; ``b`` accepts."""
    created = await a.call(p.Challenge, to=b.name, game=key, options={}, clock=clock,
                           color=0, rated=rated or None)
    received = await b.wait_for(p.ChallengeReceived, challenge_id=created.challenge_id)
    assert received.rated is (True if rated else None)
    await b.call(p.AcceptChallenge, challenge_id=received.challenge_id)
    ended = p.ChallengeEnded(challenge_id=created.challenge_id, reason="accepted")
    started = await _started_and_ended(a, ended)
    await _started_and_ended(b, ended)
    snapshot = started.snapshot
    assert snapshot.rated is (True if rated else None)
    state = engine.new_game(key, **snapshot.options)
    return Game(snapshot.game_id, key, dict(snapshot.options), (a, b), started, state)


async def play_out(game: Game, rng: random.Random) -> p.GameOver:
    while not game.state.is_over:
        await game.play(rng=rng)
    return await game.players[0].wait_for(p.GameOver, game_id=game.game_id)


async def both_registered(clients: Clients) -> tuple[Player, Player]:
    return (await clients.register("alice", "correct horse"),
            await clients.register("bob", "battery staple"))


def expected_after(before: tuple[glicko2.Rating, glicko2.Rating], winner: int
                   ) -> tuple[glicko2.Rating, glicko2.Rating]:
    a, b = glicko2.rate_game(before[0], before[1], 1.0 if winner == 0 else 0.0)
    return a.rounded(), b.rounded()


def rating(update: p.RatingUpdate, when: str) -> glicko2.Rating:
    return glicko2.Rating(getattr(update, f"rating_{when}"),
                          getattr(update, f"deviation_{when}"),
                          getattr(update, f"volatility_{when}"))


async def test_rated_games_move_ratings_and_equal_the_recomputation(server: Live) -> None:
    alice, bob = await both_registered(server.clients)
    rng = random.Random(14)
    # 1. a rated game played to its end: both start as new players
    game = await rated_game(alice, bob)
    assert all(player.rating is None for player in game.started.snapshot.players)
    over = await play_out(game, rng)
    assert over.winner is not None and over.rating_changes is not None
    befores = tuple(rating(change, "before") for change in over.rating_changes)
    assert befores == (glicko2.DEFAULT, glicko2.DEFAULT)
    afters = tuple(rating(change, "after") for change in over.rating_changes)
    assert afters == expected_after((glicko2.DEFAULT, glicko2.DEFAULT), over.winner)
    assert afters[over.winner].rating > 1500 > afters[1 - over.winner].rating
    # the record carries the changes too
    record = await game.record()
    assert record.rated is True and record.rating_changes == over.rating_changes
    # 2. a rated game resigned: the next game starts from the last one's afters
    game = await rated_game(bob, alice)
    assert [u.rating is not None for u in game.started.snapshot.players] == [True, True]
    await game.play(rng=rng)
    await game.players[1].call(p.Resign, game_id=game.game_id)
    resigned = await bob.wait_for(p.GameOver, game_id=game.game_id)
    assert resigned.winner == 0 and resigned.rating_changes is not None
    assert rating(resigned.rating_changes[0], "after").rating > rating(
        resigned.rating_changes[0], "before").rating
    # 3. an aborted rated game and 4. a casual game change nothing
    game = await rated_game(alice, bob)
    await alice.call(p.Abort, game_id=game.game_id)
    aborted = await alice.wait_for(p.GameOver, game_id=game.game_id)
    assert aborted.rating_changes is None
    game = await rated_game(alice, bob, rated=False)
    casual = await play_out(game, rng)
    assert casual.rating_changes is None
    # what is stored is what a replay of the stored games gives
    store = server.running.app.store
    assert await verify(store, PERIOD_S) == []
    pools = await store.ratings.all_pools()
    assert sorted((pool.name, pool.games, pool.wins + pool.losses) for pool in pools) == [
        ("alice", 2, 2), ("bob", 2, 2)]
    # a new login carries the ratings; the profile has the record and the history
    again = await server.clients.with_token(alice.token)
    [shown] = again.authed.user.ratings or ()
    assert (shown.game, shown.provisional) == ("hadron", True)
    profile = await bob.call(p.GetProfile, name="alice")
    assert isinstance(profile, p.ProfileInfo)
    [pool] = profile.user.ratings or ()
    assert (pool.games, (pool.wins or 0) + (pool.losses or 0)) == (2, 2)
    assert len(profile.history) == 2 and len(profile.recent) == 4
    assert profile.history[-1].rating == pool.rating
    # provisional ratings stay off the leaderboard
    board = await bob.call(p.GetLeaderboard, game="hadron")
    assert isinstance(board, p.LeaderboardPage) and board.standings == ()


async def test_abandonment_counts_as_a_loss(server: Live) -> None:
    alice, bob = await both_registered(server.clients)
    game = await rated_game(alice, bob)
    await game.play(rng=random.Random(1))
    await game.play(rng=random.Random(2))
    await bob.close()
    await alice.wait_for(p.OpponentLeft, game_id=game.game_id)
    for _ in range(100):
        try:
            await alice.call(p.ClaimWin, game_id=game.game_id)
            break
        except Exception as exc:  # too early: the grace period is short in tests
            assert "claim in" in str(exc)
            await asyncio.sleep(0.1)
    over = await alice.wait_for(p.GameOver, game_id=game.game_id)
    assert over.reason == "abandon" and over.winner == 0
    assert over.rating_changes is not None
    assert over.rating_changes[1].rating_after < over.rating_changes[1].rating_before
    assert await verify(server.running.app.store, PERIOD_S) == []


async def test_guests_and_unlimited_clocks_play_casual(server: Live) -> None:
    alice = await server.clients.register("alice", "correct horse")
    guest = await server.clients.guest()
    error = await guest.refused(p.Seek, game="hadron", options={}, clock=FAST_CLOCK,
                                rated=True)
    assert error.code == "forbidden" and "guests play casual games only" in str(error)
    error = await alice.refused(p.Challenge, to=guest.name, game="hadron", options={},
                                clock=FAST_CLOCK, rated=True)
    assert error.code == "forbidden" and guest.name in str(error)
    error = await alice.refused(p.Seek, game="hadron", options={}, clock=p.Unlimited(),
                                rated=True)
    assert error.code == "bad_request" and "casual" in str(error)
    # a guest cannot take a rated seek either
    created = await alice.call(p.Seek, game="hadron", options={}, clock=FAST_CLOCK,
                               rated=True)
    error = await guest.refused(p.AcceptSeek, seek_id=created.seek_id)
    assert error.code == "forbidden"


async def test_seeks_pair_rated_with_rated_and_within_their_ranges(server: Live) -> None:
    alice, bob = await both_registered(server.clients)
    watcher = await server.clients.spectator()
    lobby = await watcher.call(p.LobbySubscribe)
    assert isinstance(lobby, p.Lobby)
    # bob (a new player: 1500) is below alice's range: no pairing, no taking
    high = await alice.call(p.Seek, game="hadron", options={}, clock=FAST_CLOCK, rated=True,
                            rating_min=1600)
    added = await watcher.wait_for(p.SeekAdded)
    assert (added.seek.rated, added.seek.rating_min) == (True, 1600)
    casual = await bob.call(p.Seek, game="hadron", options={}, clock=FAST_CLOCK)
    mine = await bob.call(p.Seek, game="hadron", options={}, clock=FAST_CLOCK, rated=True)
    assert len({high.seek_id, casual.seek_id, mine.seek_id}) == 3  # none paired
    error = await bob.refused(p.AcceptSeek, seek_id=high.seek_id)
    assert error.code == "forbidden" and "1600" in str(error)
    # a rated seek in range pairs with bob's rated one, not his casual one
    await alice.call(p.CancelSeek, seek_id=high.seek_id)
    await alice.call(p.Seek, game="hadron", options={}, clock=FAST_CLOCK, rated=True,
                     rating_max=1600)
    started = await alice.wait_for(p.GameStarted)
    assert started.snapshot.rated is True
    taken = await bob.wait_for(p.SeekTaken, game_id=started.game_id)
    assert taken.seek_id == mine.seek_id


async def test_a_rematch_across_a_reconnect_swaps_colours(server: Live) -> None:
    alice, bob = await both_registered(server.clients)
    game = await rated_game(alice, bob)
    over = await play_out(game, random.Random(5))
    # bob drops and comes back on a new connection after the game
    await bob.close()
    bob = await server.clients.with_token(bob.token)
    await alice.call(p.OfferRematch, game_id=game.game_id)
    offered = await bob.wait_for(p.RematchOffered, game_id=game.game_id)
    assert offered.by == 0
    await bob.call(p.AcceptRematch, game_id=game.game_id)
    started = await bob.wait_for(p.GameStarted)
    ended = await alice.wait_for(p.RematchEnded, game_id=game.game_id)
    assert (ended.reason, ended.new_game_id) == ("accepted", started.game_id)
    snapshot = started.snapshot
    assert [u.name for u in snapshot.players] == ["bob", "alice"]  # colours swapped
    assert (snapshot.game, snapshot.options, snapshot.clock, snapshot.rated) == (
        game.key, game.options, FAST_CLOCK, True)
    # the new game's players carry the ratings the first game left
    assert over.rating_changes is not None
    assert snapshot.players[1].rating is not None
    assert snapshot.players[1].rating.rating == round(over.rating_changes[0].rating_after)


async def test_a_rematch_offer_lapses_when_a_player_leaves(server: Live) -> None:
    alice, bob = await both_registered(server.clients)
    game = await rated_game(alice, bob, rated=False)
    await play_out(game, random.Random(6))
    await bob.call(p.OfferRematch, game_id=game.game_id)
    await alice.wait_for(p.RematchOffered, game_id=game.game_id, by=1)
    await bob.close()
    lapsed = await alice.wait_for(p.RematchEnded, game_id=game.game_id)
    assert lapsed.reason == "lapsed"
    error = await alice.refused(p.AcceptRematch, game_id=game.game_id)
    assert error.code == "not_found"
    error = await alice.refused(p.OfferRematch, game_id=game.game_id)
    assert error.code == "conflict" and "bob is not online" in str(error)


async def test_the_leaderboard_lists_established_ratings_best_first(server: Live) -> None:
    """Established ratings take many games: they are written straight into storage here
    (as the commit queue writes them), then read through the protocol."""
    names = ["ann", "bea", "cid", "dot", "eve"]
    players = [await server.clients.register(name, "long enough pw") for name in names]
    bot_conn = players[0]
    store = server.running.app.store
    ids = {name: (await store.get_user_by_name(name)).id for name in names}  # type: ignore
    now = datetime.now(UTC)
    rows: list[dict[str, Any]] = [
        {"user_id": ids[name], "pool": "xodd", "rating": rating_, "deviation": deviation,
         "volatility": 0.06, "rated_at": now, "games": 30, "wins": 15, "losses": 15,
         "draws": 0}
        for name, rating_, deviation in [("ann", 1700.0, 60.0), ("bea", 1800.0, 200.0),
                                         ("cid", 1650.0, 90.0), ("dot", 1900.0, 80.0),
                                         ("eve", 1650.0, 50.0)]]
    async with store.engine.begin() as conn:
        await conn.execute(insert(RatingRow), rows)
    board = await bot_conn.call(p.GetLeaderboard, game="xodd")
    assert [(s.rank, s.user.name) for s in board.standings] == [
        (1, "dot"), (2, "ann"), (3, "cid"), (4, "eve")]  # bea is provisional
    top = board.standings[0].user.rating
    assert top is not None and (top.rating, top.games, top.provisional) == (1900, 30, False)


def run_verify(db_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server", "ratings", "verify", "--db", db_url],
                          capture_output=True, text=True, timeout=120)


async def test_ratings_verify_exits_1_on_a_difference(server: Live) -> None:
    alice, bob = await both_registered(server.clients)
    game = await rated_game(alice, bob)
    await play_out(game, random.Random(7))
    run = await asyncio.to_thread(run_verify, server.settings.db_url)
    assert run.returncode == 0, run.stderr
    assert "1 rated games, 0 differences" in run.stdout
    store = server.running.app.store
    async with store.engine.begin() as conn:
        await conn.exec_driver_sql("UPDATE game_ratings SET rating_after = rating_after + 0.01"
                                   " WHERE seat = 1")
    run = await asyncio.to_thread(run_verify, server.settings.db_url)
    assert run.returncode == 1
    assert f"game {game.game_id} seat 1: after" in run.stdout
    assert "1 differences" in run.stderr


async def test_export_carries_the_rating_changes(server: Live) -> None:
    alice, bob = await both_registered(server.clients)
    game = await rated_game(alice, bob)
    over = await play_out(game, random.Random(8))
    assert over.rating_changes is not None

    def export(fmt: str) -> str:
        run = subprocess.run([sys.executable, "-m", "clients.cli", "export", game.game_id,
                              "--db", server.settings.db_url, "--format", fmt],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        return run.stdout

    data = json.loads(await asyncio.to_thread(export, "json"))
    assert data["rated"] is True
    assert [c["rating_after"] for c in data["rating_changes"]] == [
        c.rating_after for c in over.rating_changes]
    text = await asyncio.to_thread(export, "text")
    assert '[Rated "yes"]' in text
    red = over.rating_changes[0]
    assert f'[RedRating "1500 350 0.06 -> {red.rating_after!r}' in text


async def test_the_lobby_lists_the_new_ratings_on_every_node(server: Live) -> None:
    """A page of the lobby is kept until the lobby changes; a rated game's end changes its
    players' ratings, wherever it ran: every node lists them anew (no lobby event says so:
    ``Reach.relist``)."""
    alice, bob = await both_registered(server.clients)
    watchers = [await server.clients.spectator() for _ in server.nodes]
    for watcher in watchers:  # a page packed on every node, before the game
        listed = {u.name: u for u in (await watcher.call(p.LobbySubscribe)).players}
        assert listed["alice"].ratings is None and listed["bob"].ratings is None
    game = await rated_game(alice, bob)
    await game.play()
    await alice.call(p.Resign, game_id=game.game_id)
    over = await bob.wait_for(p.GameOver, game_id=game.game_id)
    assert over.rating_changes is not None
    after = round(over.rating_changes[1].rating_after)
    for watcher in watchers:
        deadline = asyncio.get_running_loop().time() + 10
        while True:  # the other nodes hear of it through Redis, a moment later
            listed = {u.name: u for u in (await watcher.call(p.LobbySubscribe)).players}
            ratings = listed["bob"].ratings
            if ratings is not None:
                break
            assert asyncio.get_running_loop().time() < deadline, "the old ratings still"
            await asyncio.sleep(0.05)
        assert [(pool.game, pool.rating) for pool in ratings] == [("hadron", after)]
