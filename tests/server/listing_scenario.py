"""One ``list_games`` scenario for any topology: games in progress and finished, asked from
every server of it (one process: one URL; a cluster: a URL per node).

The games are started by players connected to different servers, one of them rated
between players who have a rating already. Every listing (each status, the filters, the
result, and paging at several page sizes) is asked from every server; the answers must be
the same everywhere and hold what was played.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

import engine
import protocol as p
from clients.connection import ServerError

from .support import Clients, Game, Player, start_game

CLOCK = p.Fischer(base_ms=600_000, increment_ms=0)

QUERIES: list[dict[str, Any]] = [
    {}, {"status": "playing"}, {"status": "over"},
    {"player": "Lister-Alice"}, {"player": "lister-bob", "status": "playing"},
    {"player": "lister-carol", "status": "over"}, {"game": "hadron"},
    {"game": "yodd", "status": "playing"}, {"player": "lister-alice", "result": "win"},
    {"player": "lister-alice", "result": "loss"}, {"player": "nobody"},
]


async def rated_game(a: Player, b: Player) -> Game:
    """``a`` challenges ``b`` to a rated hadron game (seat 0), ``b`` accepts."""
    created = await a.call(p.Challenge, to=b.name, game="hadron", options={}, clock=CLOCK,
                           color=0, rated=True)
    await b.wait_for(p.ChallengeReceived, challenge_id=created.challenge_id)
    await b.call(p.AcceptChallenge, challenge_id=created.challenge_id)
    started = await a.wait_for(p.GameStarted)
    assert await b.wait_for(p.GameStarted) == started
    snapshot = started.snapshot
    return Game(snapshot.game_id, "hadron", dict(snapshot.options), (a, b), started,
                engine.new_game("hadron", **snapshot.options))


async def patient_list(conn: Any, **fields: Any) -> p.GameList:
    """``list_games``, asked again after ``retry_after_ms`` when the connection's request
    budget is spent (the scenario asks a few hundred listings on one connection)."""
    while True:
        try:
            reply = await conn.call(p.ListGames, **fields)
        except ServerError as exc:
            if exc.code != "rate_limited":
                raise
            await asyncio.sleep((exc.retry_after_ms or 100) / 1000)
            continue
        assert isinstance(reply, p.GameList)
        return reply


async def pages(conn: Any, limit: int, **filters: Any) -> list[tuple[p.Summary, ...]]:
    """Every page of one listing, following ``next_cursor``."""
    found, cursor = [], None
    while True:
        reply = await patient_list(conn, limit=limit, cursor=cursor, **filters)
        assert isinstance(reply, p.GameList)
        found.append(tuple(reply.games))
        cursor = reply.next_cursor
        if cursor is None:
            return found


async def every_server_lists_alike(clients: Clients, urls: Sequence[str]) -> None:
    """Play the scenario across ``urls`` (cycled) and compare every listing on each."""
    def at(i: int) -> str:
        return urls[i % len(urls)]

    alice = await clients.register("Lister-Alice", "correct horse", at(0))
    bob = await clients.register("lister-bob", "battery staple", at(1))
    carol = await clients.register("lister-carol", "staple horse", at(2))

    first = await rated_game(alice, bob)  # gives both a rating in hadron
    rng = random.Random(5)
    while not first.state.is_over:
        await first.play(rng=rng)
    resigned = await start_game(bob, carol, "yodd", {"size": 3})
    await resigned.play(rng=random.Random(6))
    await carol.call(p.Resign, game_id=resigned.game_id)  # bob wins

    live_rated = await rated_game(bob, alice)  # bob's node pairs it; both are rated now
    await live_rated.play(rng=random.Random(7))
    live_yodd = await start_game(carol, bob, "yodd", {"size": 4})
    live_xodd = await start_game(alice, carol, "xodd", {"size": 5})
    await live_xodd.play(rng=random.Random(8))
    await live_xodd.play(rng=random.Random(9))
    playing = [live_xodd, live_yodd, live_rated]  # newest first

    watchers = [await clients.spectator(url) for url in urls]
    answers: list[dict[str, list[tuple[p.Summary, ...]]]] = []
    for watcher in watchers:
        seen = {}
        for filters in QUERIES:
            for limit in (1, 2, 20):
                seen[f"{filters} limit={limit}"] = await pages(watcher, limit, **filters)
        answers.append(seen)
    for url, answer in zip(urls[1:], answers[1:], strict=True):
        for query, listed in answer.items():
            assert listed == answers[0][query], f"{query} on {url} differs from {urls[0]}"

    [in_progress] = answers[0]["{'status': 'playing'} limit=20"]
    assert [s.game_id for s in in_progress] == [g.game_id for g in playing]
    by_id = {s.game_id: s for s in in_progress}
    for game, plies in ((live_xodd, 2), (live_yodd, 0), (live_rated, 1)):
        snapshot = game.started.snapshot
        summary = by_id[game.game_id]
        assert summary == p.Summary(
            game_id=game.game_id, game=snapshot.game, options=snapshot.options,
            clock=snapshot.clock, players=snapshot.players, status=summary.status,
            ply=plies, created_ms=summary.created_ms, rated=snapshot.rated)
        assert summary.status == ("waiting" if plies < 2 else "playing")
    rated_players = by_id[live_rated.game_id].players
    assert all(user.rating is not None for user in rated_players)  # as the game started
    assert [[s.game_id for s in page] for page in
            answers[0]["{} limit=2"]] == [[live_xodd.game_id, live_yodd.game_id],
                                          [live_rated.game_id, resigned.game_id],
                                          [first.game_id]]
    assert [s.game_id for page in answers[0]["{'player': 'lister-alice', 'result': 'loss'}"
                                             " limit=20"] for s in page] == (
        [first.game_id] if first.state.winner == 1 else [])
