"""Fencing on SQLite and PostgreSQL: the epoch migration, takeovers, and writes under a
stale epoch refused by the database itself."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from server.cluster.errors import StaleEpoch
from server.cluster.fencing import Fenced, write_fenced
from server.storage import (
    ChatSent,
    CommitQueue,
    CoreWriter,
    GameCreated,
    GameFinished,
    GameNotPlaying,
    MovePlayed,
    SeqAdvanced,
    StorageError,
    Store,
    downgrade,
    new_game_id,
    upgrade,
)
from tests.server.storage.conftest import Database

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
CLOCK = {"kind": "fischer", "base_ms": 60_000, "increment_ms": 0}


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def move(game_id: str, ply: int, seq: int, notation: str = "c3") -> MovePlayed:
    return MovePlayed(game_id, ply, seq, notation, ply % 2, 100, 59_900, at(ply))


async def setup(db: Database) -> tuple[AsyncEngine, Store, tuple[int, int]]:
    await db.upgrade()
    engine = db.engine()
    store = Store(engine)
    a = await store.create_user("alice", "human", now=T0)
    b = await store.create_user("bob", "human", now=T0)
    return engine, store, (a.id, b.id)


async def new_game(store: Store, players: tuple[int, int]) -> str:
    """A game in progress, stored as the commit queue stores one (the reference writer)."""
    game_id = new_game_id()
    item = GameCreated(game_id, "hadron", {"size": 5}, CLOCK, "1", players, 1, T0, T0)
    assert await CoreWriter(store.engine).write([item]) == [None]
    return game_id


async def write(engine: AsyncEngine, *batch: Fenced) -> list[StorageError | None]:
    async with engine.begin() as conn:
        return await write_fenced(conn, batch)


async def epoch_and_seq(engine: AsyncEngine, game_id: str) -> tuple[int, int]:
    async with engine.connect() as conn:
        row = (await conn.execute(text("SELECT epoch, last_seq FROM games WHERE id = :id"),
                                  {"id": game_id})).one()
    return int(row[0]), int(row[1])


async def test_the_migration_gives_existing_games_epoch_zero(db: Database) -> None:
    await db.upgrade()
    engine = db.engine()
    store = Store(engine)
    players = ((await store.create_user("alice", "human", now=T0)).id,
               (await store.create_user("bob", "human", now=T0)).id)
    game_id = await new_game(store, players)
    await downgrade(engine, "0002")  # the schema before fencing, with a game in it
    async with engine.connect() as conn:
        columns = (await conn.execute(text("SELECT * FROM games"))).keys()
    assert "epoch" not in columns
    await upgrade(engine)
    assert await epoch_and_seq(engine, game_id) == (0, 1)
    assert await store.take_over_game(game_id) == 1


async def test_take_over_bumps_the_epoch_of_live_games_only(db: Database) -> None:
    engine, store, players = await setup(db)
    game_id = await new_game(store, players)
    assert await epoch_and_seq(engine, game_id) == (0, 1)
    assert await store.take_over_game(game_id) == 1
    assert await store.take_over_game(game_id) == 2
    assert await store.take_over_game("nosuchgame") is None
    assert await write(engine, Fenced(GameFinished(game_id, 0, "resign", 3, at(5)), 2)) == [
        None]
    assert await store.take_over_game(game_id) is None
    assert await epoch_and_seq(engine, game_id) == (2, 3)


async def test_the_owner_at_the_current_epoch_writes_everything(db: Database) -> None:
    engine, store, players = await setup(db)
    created = GameCreated("g1", "hadron", {"size": 5}, CLOCK, "1", players, 1, T0, T0)
    outcomes = await write(engine, Fenced(created, 0), Fenced(move("g1", 0, 2), 0),
                           Fenced(ChatSent("g1", 3, players[0], "hi", at(1)), 0),
                           Fenced(SeqAdvanced("g1", 4), 0), Fenced(move("g1", 1, 5), 0))
    assert outcomes == [None] * 5
    assert await epoch_and_seq(engine, "g1") == (0, 5)  # the fence advanced last_seq
    record = await store.get_game("g1")
    assert record is not None
    assert [m.seq for m in record.moves] == [2, 5] and [c.seq for c in record.chat] == [3]
    assert await write(engine, Fenced(GameFinished("g1", 1, "resign", 6, at(9)), 0)) == [None]
    record = await store.get_game("g1")
    assert record is not None and record.info.status == "over" and record.info.winner == 1


async def test_after_a_takeover_the_old_owners_writes_are_refused(db: Database) -> None:
    engine, store, players = await setup(db)
    taken, other = await new_game(store, players), await new_game(store, players)
    assert await write(engine, Fenced(move(taken, 0, 2), 0)) == [None]
    assert await store.take_over_game(taken) == 1

    late = [Fenced(move(taken, 1, 3, "d4"), 0),
            Fenced(ChatSent(taken, 4, players[1], "still here?", at(2)), 0),
            Fenced(SeqAdvanced(taken, 5), 0),
            Fenced(GameFinished(taken, 1, "resign", 6, at(3)), 0),
            Fenced(move(other, 0, 2), 0)]  # another game of the same batch: written
    outcomes = await write(engine, *late)
    assert [type(outcome) for outcome in outcomes] == [StaleEpoch] * 4 + [type(None)]
    assert "epoch 0 is stale (the game is at 1)" in str(outcomes[0])
    record = await store.get_game(taken)
    assert record is not None
    assert [m.move for m in record.moves] == ["c3"] and record.chat == ()
    assert record.info.status == "playing"
    assert await epoch_and_seq(engine, taken) == (1, 2)  # the stale seq advance was refused

    # the new owner, at epoch 1, carries on from what was stored
    assert await write(engine, Fenced(move(taken, 1, 3, "b2"), 1)) == [None]
    record = await store.get_game(taken)
    assert record is not None and [m.move for m in record.moves] == ["c3", "b2"]


async def test_writes_to_a_finished_or_unknown_game_are_refused(db: Database) -> None:
    engine, store, players = await setup(db)
    game_id = await new_game(store, players)
    outcomes = await write(engine, Fenced(GameFinished(game_id, 0, "resign", 2, at(1)), 0),
                           Fenced(GameFinished(game_id, 1, "resign", 3, at(2)), 0))
    assert outcomes[0] is None and isinstance(outcomes[1], GameNotPlaying)
    [late] = await write(engine, Fenced(move(game_id, 0, 4), 0))
    assert isinstance(late, GameNotPlaying) and not isinstance(late, StaleEpoch)
    [unknown] = await write(engine, Fenced(move("nosuchgame", 0, 2), 0))
    assert isinstance(unknown, GameNotPlaying)


async def test_a_takeover_waits_for_the_old_owners_open_transaction(db: Database) -> None:
    """The race the fence's row lock closes: the old owner's transaction has written a move
    but not committed when the takeover starts. The takeover must wait, so the record the
    new owner loads has that move, and the old owner's next write is refused."""
    engine, store, players = await setup(db)
    game_id = await new_game(store, players)
    other_store = Store(db.engine())  # the node taking over: its own engine and lock
    async with engine.begin() as conn:
        assert await write_fenced(conn, [Fenced(move(game_id, 0, 2), 0)]) == [None]
        takeover = asyncio.ensure_future(other_store.take_over_game(game_id))
        await asyncio.sleep(0.5)
        assert not takeover.done()  # waiting for the old owner's row lock
    assert await asyncio.wait_for(takeover, 10) == 1
    record = await other_store.get_game(game_id)
    assert record is not None and [m.ply for m in record.moves] == [0]
    [late] = await write(engine, Fenced(move(game_id, 1, 3), 0))
    assert isinstance(late, StaleEpoch)


def test_an_epoch_is_never_negative() -> None:
    with pytest.raises(ValueError, match="epoch"):
        Fenced(SeqAdvanced("g", 1), -1)


async def test_the_commit_queue_fences_the_items_that_carry_an_epoch(db: Database) -> None:
    """The queue a node writes through: items with an epoch are fenced, in the same batch
    as unfenced ones (a lone server's), and a stale one fails only its own submitter."""
    engine, store, players = await setup(db)
    fenced_id = new_game_id()
    async with CommitQueue(CoreWriter(engine)) as queue:
        await queue.submit(GameCreated(fenced_id, "hadron", {"size": 5}, CLOCK, "1", players,
                                       1, T0, T0, epoch=0))
        plain_id = await new_game(store, players)
        await asyncio.gather(queue.submit(replace(move(fenced_id, 0, 2), epoch=0)),
                             queue.submit(move(plain_id, 0, 2)))
        assert await store.take_over_game(fenced_id) == 1
        late = replace(move(fenced_id, 1, 3), epoch=0)
        outcomes = await asyncio.gather(queue.submit(late), queue.submit(move(plain_id, 1, 3)),
                                        return_exceptions=True)
        assert isinstance(outcomes[0], StaleEpoch) and outcomes[1] is None
        await queue.submit(replace(move(fenced_id, 1, 3, "d4"), epoch=1))
        await queue.submit(GameFinished(fenced_id, 0, "resign", 4, at(9), epoch=1))
    stored = await store.get_game(fenced_id)
    assert stored is not None
    assert [(m.ply, m.move) for m in stored.moves] == [(0, "c3"), (1, "d4")]
    assert (stored.info.status, stored.last_seq) == ("over", 4)
    assert [m.ply for m in (await store.get_game(plain_id)).moves] == [0, 1]  # type: ignore


async def test_a_batch_of_fenced_moves_alone_is_fenced_per_game(db: Database) -> None:
    """Moves alone (PostgreSQL writes them in one statement): a stale game's refused, the
    others' stored, a duplicate ply refused alone."""
    engine, store, players = await setup(db)
    games = [new_game_id() for _ in range(3)]
    async with CommitQueue(CoreWriter(engine)) as queue:
        for game_id in games:
            await queue.submit(GameCreated(game_id, "hadron", {"size": 5}, CLOCK, "1",
                                           players, 1, T0, T0, epoch=0))
        assert await store.take_over_game(games[1]) == 1
        outcomes = await asyncio.gather(
            *(queue.submit(replace(move(game_id, 0, 2), epoch=0)) for game_id in games),
            queue.submit(replace(move(games[2], 1, 3), epoch=0)), return_exceptions=True)
        assert [type(o).__name__ for o in outcomes] == ["NoneType", "StaleEpoch",
                                                        "NoneType", "NoneType"]
        again = await asyncio.gather(queue.submit(replace(move(games[0], 0, 2), epoch=0)),
                                     queue.submit(replace(move(games[0], 1, 3), epoch=0)),
                                     return_exceptions=True)
        assert type(again[0]).__name__ == "Conflict" and again[1] is None
    assert [[m.ply for m in (await store.get_game(g)).moves]  # type: ignore[union-attr]
            for g in games] == [[0, 1], [], [0, 1]]
    assert [(await epoch_and_seq(engine, g)) for g in games] == [(0, 3), (1, 1), (0, 3)]
