"""Rated games in storage: both updates stored with the game's end, once, equal to the
recomputation; aborted and casual games change nothing."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from server.ratings import glicko2
from server.ratings.verify import verify
from server.storage import (
    CommitQueue,
    GameFinished,
    GameNotPlaying,
    RatedPlayers,
    Store,
    User,
)

from .conftest import at
from .test_games import new_game

DAY_S = 86_400.0


async def finish(writer: CommitQueue, store: Store, players: tuple[User, User],
                 winner: int | None, when: float, *, rated: bool = True,
                 status: str = "over", seats: tuple[int, int] = (0, 1)) -> object:
    game_id = await new_game(store, (players[seats[0]], players[seats[1]]), created=when - 1)
    ids = (players[seats[0]].id, players[seats[1]].id)
    return await writer.submit(GameFinished(
        game_id, winner, "normal" if status == "over" else "abort", 9, at(when),
        status,  # type: ignore[arg-type]
        rated=RatedPlayers("xodd", ids, DAY_S) if rated else None))


async def test_a_rated_game_rates_both_players_once(
        writer: CommitQueue, store: Store, players: tuple[User, User]) -> None:
    changes = await finish(writer, store, players, 0, 10)
    assert isinstance(changes, tuple)
    first, second = changes
    assert first.before == second.before == glicko2.DEFAULT
    expected = [r.rounded() for r in glicko2.rate_game(glicko2.DEFAULT, glicko2.DEFAULT, 1.0)]
    assert (first.after, second.after) == tuple(expected)
    stored = await store.ratings.of_users([players[0].id, players[1].id])
    winner, loser = stored[players[0].id][0], stored[players[1].id][0]
    assert (winner.rating, winner.games, winner.wins, winner.losses) == (expected[0], 1, 1, 0)
    assert (loser.rating, loser.games, loser.wins, loser.losses) == (expected[1], 1, 0, 1)
    assert await verify(store, DAY_S) == []


async def test_ratings_follow_games_in_order_and_equal_the_recomputation(
        writer: CommitQueue, store: Store, players: tuple[User, User]) -> None:
    for index, winner in enumerate([0, 1, None, 0, 0, 1, 0]):
        seats = (0, 1) if index % 2 == 0 else (1, 0)
        await finish(writer, store, players, winner, 10 + index * 5000.0, seats=seats)
    await finish(writer, store, players, None, 90_000, status="aborted")  # nothing changes
    await finish(writer, store, players, 1, 95_000, rated=False)  # casual: nothing changes
    stored = await store.ratings.of_users([players[0].id])
    assert stored[players[0].id][0].games == 7
    history = await store.ratings.history(players[0].id)
    assert len(history) == 7
    assert history[-1].rating == stored[players[0].id][0].rating
    assert await verify(store, DAY_S) == []
    # a verification with another period length recomputes other values: it can fail
    assert await verify(store, DAY_S / 100) != []


async def test_verify_finds_a_rating_row_that_is_not_the_recomputation(
        writer: CommitQueue, store: Store, players: tuple[User, User],
        engine: AsyncEngine) -> None:
    await finish(writer, store, players, 0, 10)
    async with engine.begin() as conn:
        await conn.exec_driver_sql("UPDATE ratings SET rating = rating + 1")
    found = await verify(store, DAY_S)
    assert len(found) == 2 and all("recomputed" in line for line in found)


async def test_a_game_already_over_rates_no_one(
        writer: CommitQueue, store: Store, players: tuple[User, User]) -> None:
    game_id = await new_game(store, players)
    rated = RatedPlayers("xodd", (players[0].id, players[1].id), DAY_S)
    assert await writer.submit(GameFinished(game_id, 0, "normal", 5, at(5), "over", rated=rated))
    try:
        await writer.submit(GameFinished(game_id, 1, "normal", 6, at(6), "over", rated=rated))
    except GameNotPlaying:
        pass
    else:
        raise AssertionError("a second end was stored")
    stored = await store.ratings.of_users([players[0].id])
    assert stored[players[0].id][0].games == 1
    record = await store.get_game(game_id)
    assert record is not None and record.ratings is not None
    assert record.info.rated is False  # created casual by the helper; the end rated it
