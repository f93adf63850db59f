"""The bot ladder: six SDK bots join it and the server pairs them in rounds, into rated
games, by rating nearness, with no immediate repeats and the first seat balanced; the
standings over the protocol and from ``tessera ladder standings``."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import time
from collections import Counter, defaultdict

import engine
import protocol as p
from clients.bots.base import TimeBudget
from clients.bots.random_bot import RandomBot
from clients.sdk import BotRunner, Policy
from server.ratings.verify import verify

from .conftest import Live, Serve, both_topologies

pytestmark = both_topologies

BOTS = ("lb-ann", "lb-bea", "lb-cid", "lb-dot", "lb-eve", "lb-fay")
GAMES_WANTED = 18  # six rounds' worth: three games a round


async def test_six_bots_over_several_rounds(serve: Serve) -> None:
    async with serve(ladder_round_s=0.2) as live:
        store = live.running.app.store
        runners = []
        for index, name in enumerate(BOTS):
            user = await store.create_user(name, "bot")
            token, _ = await store.create_token(user.id, "bot", "test")
            runners.append(BotRunner(RandomBot(seed=index), url=live.url, token=token,
                                     policy=Policy(ladder=("hadron",), accept_from=frozenset()),
                                     backoff_s=(0.1, 0.5)))
        tasks = [asyncio.create_task(runner.run()) for runner in runners]
        try:
            await asyncio.wait_for(asyncio.gather(*(r.ready.wait() for r in runners)), 15)
            for _ in range(1200):
                if sum(len(r.results) for r in runners) >= 2 * GAMES_WANTED:
                    break
                await asyncio.sleep(0.1)
            standings = await standings_now(live)
            cli = await asyncio.to_thread(subprocess.run, [
                sys.executable, "-m", "clients.cli", "ladder", "standings", "hadron",
                "--server", live.url], capture_output=True, text=True, timeout=60)
        finally:
            for runner in runners:
                runner.stop()
            await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
        assert live.running.app.ladder.rounds >= 6
        # every bot's games, in the order they started
        page = await store.list_games(game_key="hadron", limit=200)
        games = sorted(page.games, key=lambda info: (info.created_at, info.id))
        assert len(games) >= GAMES_WANTED
        assert all(info.rated for info in games)
        opponents: dict[str, list[str]] = defaultdict(list)
        firsts: Counter[str] = Counter()
        for info in games:
            first, second = info.players
            opponents[first].append(second)
            opponents[second].append(first)
            firsts[first] += 1
            firsts[second] -= 1
        assert set(opponents) == set(BOTS)
        for name, faced in opponents.items():
            assert all(a != b for a, b in itertools.pairwise(faced)), (name, faced)
            assert len(set(faced)) >= 2
        assert all(abs(balance) <= 2 for balance in firsts.values()), firsts
        assert await verify(store, live.settings.rating_period_s) == []
        # the standings: all six, by rating
        assert sorted(s.user.name for s in standings.standings) == sorted(BOTS)
        assert all(s.user.kind == "bot" for s in standings.standings)
        ratings = [s.user.rating.rating for s in standings.standings if s.user.rating]
        assert ratings == sorted(ratings, reverse=True) and len(ratings) == 6
        assert cli.returncode == 0, cli.stderr
        assert "hadron ladder: 6 bot(s)" in cli.stdout
        assert all(f"{name} [bot]" in cli.stdout for name in BOTS)


async def standings_now(live: Live) -> p.LeaderboardPage:
    spectator = await live.clients.spectator()
    reply = await spectator.call(p.GetStandings, game="hadron")
    assert isinstance(reply, p.LeaderboardPage)
    return reply


async def test_only_bots_join_the_ladder(server: Live) -> None:
    human = await server.clients.register("alice", "correct horse")
    error = await human.refused(p.LadderJoin, games=("hadron",))
    assert error.code == "forbidden" and "bots" in str(error)


async def test_sdk_policies_for_rated_challenges_and_rematches(server: Live) -> None:
    """A bot that plays rated games only declines a casual challenge, saying why; with
    ``rematches`` it accepts the rematch its opponent offers."""
    store = server.running.app.store
    user = await store.create_user("lb-pol", "bot")
    token, _ = await store.create_token(user.id, "bot", "test")
    runner = BotRunner(RandomBot(seed=3), url=server.url, token=token, backoff_s=(0.1, 0.5),
                       policy=Policy(rated="rated", rematches=True))
    task = asyncio.create_task(runner.run())
    try:
        await asyncio.wait_for(runner.ready.wait(), 15)
        alice = await server.clients.register("alice", "correct horse")
        clock = p.Fischer(base_ms=60_000, increment_ms=0)
        casual = await alice.call(p.Challenge, to="lb-pol", game="hadron", options={},
                                  clock=clock)
        ended = await alice.wait_for(p.ChallengeEnded, challenge_id=casual.challenge_id)
        assert ended.reason == "declined" and ended.message == "only rated games are played"
        await alice.call(p.Challenge, to="lb-pol", game="hadron", options={}, clock=clock,
                         rated=True, color=0)
        started = await alice.wait_for(p.GameStarted)
        assert started.snapshot.rated is True
        await alice.call(p.Resign, game_id=started.game_id)
        await alice.wait_for(p.GameOver, game_id=started.game_id)
        await alice.call(p.OfferRematch, game_id=started.game_id)
        again = await alice.wait_for(p.GameStarted)  # game_started, then rematch_ended
        ended_rematch = await alice.wait_for(p.RematchEnded, game_id=started.game_id)
        assert (ended_rematch.reason, ended_rematch.new_game_id) == ("accepted", again.game_id)
        assert [u.name for u in again.snapshot.players] == ["lb-pol", "alice"]
    finally:
        runner.stop(resign=True)
        await asyncio.wait_for(task, 30)



class SlowBot(RandomBot):
    """A random bot that thinks 0.5 s a move, so that its games last several seconds."""

    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        time.sleep(0.5)
        return super().choose_move(state, budget)


async def test_a_stopped_bot_leaves_the_ladder_at_once(serve: Serve) -> None:
    """``BotRunner.stop`` in the middle of a ladder game leaves the ladder at once (the
    game is played to its end): a pairing made between the game's end and the bot's
    disconnect used to start a game nobody would play, and a stop that waited on it."""
    async with serve(ladder_round_s=0.1) as live:
        store = live.running.app.store
        ladder = live.running.app.ladder
        runners, ids = [], []
        for index, name in enumerate(("lb-gus", "lb-hal")):
            user = await store.create_user(name, "bot")
            token, _ = await store.create_token(user.id, "bot", "test")
            ids.append(user.id)
            runners.append(BotRunner(SlowBot(seed=index), url=live.url, token=token,
                                     policy=Policy(ladder=("hadron",), accept_from=frozenset()),
                                     backoff_s=(0.1, 0.5)))
        leaving, staying = runners
        tasks = [asyncio.create_task(runner.run()) for runner in runners]
        try:
            await asyncio.wait_for(asyncio.gather(*(r.ready.wait() for r in runners)), 15)
            for _ in range(300):
                if leaving.active():
                    break
                await asyncio.sleep(0.05)
            assert leaving.active(), "the ladder paired nobody"
            leaving.stop()
            for _ in range(100):
                await ladder.refresh()
                if ids[0] not in ladder.members("hadron"):
                    break
                await asyncio.sleep(0.05)
            assert ids[0] not in ladder.members("hadron")
            assert leaving.active() and not tasks[0].done()  # still playing when it left
            await asyncio.wait_for(tasks[0], 60)
        finally:
            staying.stop()
            leaving.stop()
            await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
