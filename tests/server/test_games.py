"""Whole games of every kind, watched by a spectator, then found in the history."""

from __future__ import annotations

import random
from typing import Any

import pytest

import engine
import protocol as p
from clients.connection import ServerError

from .conftest import Live, both_topologies
from .listing_scenario import every_server_lists_alike
from .support import Clients, Game, Player, assert_record_replays, start_game

pytestmark = both_topologies

CLOCK = p.Fischer(base_ms=600_000, increment_ms=2_000)

GAMES = [
    ("xodd", {"size": 5}),
    ("yodd", {"size": 4}),
    ("hadron", {}),
    ("hexifact", {}),
]


@pytest.mark.parametrize(("key", "options"), GAMES, ids=[key for key, _ in GAMES])
async def test_a_whole_game_seen_alike_by_players_and_spectator(
        clients: Clients, key: str, options: dict[str, Any]) -> None:
    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, key, options, clock=CLOCK)
    assert game.options == engine.get_game(key).normalize_options(options)  # defaults filled
    started = game.started.snapshot
    assert (started.status, started.ply, started.moves, started.seq) == ("waiting", 0, (), 1)

    spectator = await clients.spectator()
    watched = await game.watch(spectator)
    assert watched == started  # nothing happened yet, and no clock runs while waiting

    rng = random.Random(f"{key}-e2e")
    acks = []
    while not game.state.is_over:
        acks.append(await game.play(rng=rng))
    assert [ack.seq for ack in acks] == list(range(2, 2 + len(acks)))

    seen = [await who.game_events(game.game_id) for who in (a, b)]
    seen.append(await _events_of(spectator, game.game_id))
    assert seen[0] == seen[1] == seen[2]
    events = seen[0]
    *moved, over = events
    assert all(isinstance(m, p.Moved) for m in moved)
    assert [m.seq for m in events] == list(range(2, 3 + len(moved)))
    assert [m.move for m in moved] == list(game.state.moves)
    assert [(m.ply, m.by) for m in moved] == [(i, i % 2) for i in range(len(moved))]
    ending = game.state.ending  # why and by how much: the engine's words and scores
    assert ending is not None
    assert over == p.GameOver(game_id=game.game_id, seq=len(moved) + 2,
                              winner=game.state.winner, reason="normal",
                              ending=p.Ending.of(ending))

    record = await game.record(spectator)
    assert_record_replays(record)
    assert (record.status, record.result) == ("over", p.Result.of(ending))
    finished = await game.watch(spectator)
    assert finished.result == record.result
    assert record.players == started.players
    assert (record.game, record.options, record.clock) == (key, game.options, started.clock)
    assert [m.move for m in record.moves] == list(game.state.moves)
    left = [CLOCK.base_ms, CLOCK.base_ms]
    for played, event in zip(record.moves, moved, strict=True):
        assert played.ms_used == event.ms_used >= 0
        if played.ply >= 2:  # the clocks run once both have moved: Fischer arithmetic
            left[played.by] += CLOCK.increment_ms - played.ms_used
        assert played.clock_ms == left[played.by]
        assert event.clocks_ms == (left[0], left[1])
    assert record.ended_ms is not None and record.ended_ms >= record.created_ms

    listing = await a.call(p.ListGames, player=a.name)
    assert listing.next_cursor is None
    [summary] = listing.games
    assert summary == p.Summary(
        game_id=game.game_id, game=key, options=game.options, clock=record.clock,
        players=record.players, status="over", ply=len(record.moves),
        result=p.Result(winner=ending.winner, reason="normal"),  # a list replays no game
        created_ms=record.created_ms)

    for conn in (a, b):  # nothing else was sent
        assert await conn.drain() == []


async def _events_of(conn: Any, game_id: str) -> list[Any]:
    events = []
    while True:
        event = await conn.next_event(10)
        if getattr(event, "game_id", None) == game_id:
            events.append(event)
            if isinstance(event, p.GameOver):
                return events


async def _resigned(a: Player, b: Player, key: str, options: dict[str, Any] | None = None,
                    *, loser: int) -> Game:
    game = await start_game(a, b, key, options)
    await game.play(rng=random.Random(1))
    await game.play(rng=random.Random(2))
    await game.players[loser].call(p.Resign, game_id=game.game_id)
    return game


async def test_list_games_filters_and_pages(server: Live, clients: Clients) -> None:
    a, b, c = await clients.guest(), await clients.guest(), await clients.guest()
    g1 = await _resigned(a, b, "xodd", {"size": 4}, loser=1)  # a wins
    g2 = await _resigned(a, c, "hadron", {"size": 3}, loser=0)  # c wins
    g3 = await _resigned(b, c, "hadron", {"size": 3}, loser=0)  # c wins
    live = await start_game(a, b, "yodd", {"size": 3})  # still being played
    await live.play(rng=random.Random(3))
    watcher = await clients.spectator()

    async def ids(**filters: Any) -> list[str]:
        reply = await watcher.call(p.ListGames, **filters)
        assert isinstance(reply, p.GameList)
        assert reply.next_cursor is None
        return [s.game_id for s in reply.games]

    assert await ids(status="over") == [g3.game_id, g2.game_id, g1.game_id]  # newest first
    assert await ids(player=a.name, status="over") == [g2.game_id, g1.game_id]
    assert await ids(player=a.name.upper(), status="over") == [g2.game_id, g1.game_id]
    assert await ids(game="hadron") == [g3.game_id, g2.game_id]
    assert await ids(player=a.name, game="hadron") == [g2.game_id]
    assert await ids(player=c.name, result="win") == [g3.game_id, g2.game_id]
    assert await ids(player=a.name, result="win") == [g1.game_id]
    assert await ids(player=a.name, result="loss") == [g2.game_id]
    assert await ids(player="nobody") == []
    assert await ids(game="yodd", status="over") == []
    assert await ids(status="playing") == [live.game_id]
    [summary] = (await watcher.call(p.ListGames, status="playing")).games
    assert (summary.status, summary.ply, summary.result) == ("waiting", 1, None)

    async def pages(limit: int, **filters: Any) -> list[list[str]]:
        found, cursor = [], None
        while True:
            reply = await watcher.call(p.ListGames, limit=limit, cursor=cursor, **filters)
            found.append([s.game_id for s in reply.games])
            cursor = reply.next_cursor
            if cursor is None:
                return found

    assert await pages(1, status="over") == [[g3.game_id], [g2.game_id], [g1.game_id]]
    assert await pages(1) == [[live.game_id], [g3.game_id], [g2.game_id], [g1.game_id]]
    assert await pages(2) == [[live.game_id, g3.game_id], [g2.game_id, g1.game_id]]
    assert await pages(1, player=b.name, game="hadron") == [[g3.game_id]]

    with pytest.raises(ServerError) as info:
        await watcher.call(p.ListGames, cursor="not-a-cursor")
    assert info.value.code == "bad_request"


async def test_unwatch_and_unknown_games(clients: Clients) -> None:
    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, "hadron")
    spectator = await clients.spectator()
    await game.watch(spectator)
    await game.play("a1")
    assert isinstance(await spectator.next_event(5), p.Moved)
    await spectator.call(p.Unwatch, game_id=game.game_id)
    await spectator.call(p.Unwatch, game_id=game.game_id)  # not watching: ok all the same
    await game.play("e5")
    await b.call(p.Unwatch, game_id=game.game_id)  # a player stays attached to their game
    await game.play("c3")
    assert [e.ply for e in await b.drain(0.1)] == [0, 1, 2]
    assert spectator.events.empty()

    for kind in (p.Watch, p.GetGame):
        with pytest.raises(ServerError) as info:
            await spectator.call(kind, game_id="nosuchgame")
        assert (info.value.code, info.value.game_id) == ("not_found", "nosuchgame")


async def test_list_games_of_every_kind_with_ratings_as_games_started(clients: Clients) -> None:
    """The scenario the cluster runs on three nodes (``test_list_games_across_nodes.py``)."""
    await every_server_lists_alike(clients, [clients.url])


def packed(live: Live) -> float:
    """Game states packed so far, over every node (/metrics)."""
    return sum(node.app.metrics.registry.get_sample_value(
        "tessera_snapshots_packed_total", {"what": "game"}) or 0.0 for node in live.nodes)


async def test_spectators_share_a_state_packed_once_per_event(server: Live,
                                                              clients: Clients) -> None:
    """Many spectators of a game get its state packed once until its next event, on the
    node that runs it (spectators on other nodes get theirs through it), each with the
    clocks as they are when asked."""
    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, "hadron", clock=CLOCK)
    await game.play()
    await game.play()  # both moved: the clock runs
    spectators = [await clients.spectator() for _ in range(2 * len(server.nodes))]
    mark = packed(server)
    seen = [await game.watch(spectator) for spectator in spectators]
    assert packed(server) - mark == 1
    for snapshot in seen:
        assert (snapshot.seq, snapshot.ply, len(snapshot.moves)) == (seen[0].seq, 2, 2)
        assert snapshot.players == seen[0].players
        assert snapshot.clocks_ms is not None and snapshot.clocks_ms[0] <= CLOCK.base_ms
    clocks = [snapshot.clocks_ms[game.state.to_move] for snapshot in seen  # type: ignore
              if snapshot.clocks_ms is not None]
    assert clocks == sorted(clocks, reverse=True)  # the mover's clock, as it runs
    await game.play()
    mark = packed(server)
    after = [await game.watch(spectator) for spectator in spectators]
    assert packed(server) - mark == 1
    assert {(s.seq, s.ply) for s in after} == {(seen[0].seq + 1, 3)}
