"""Group commit: many games' moves share transactions; failures reject only what failed."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import Connection, Engine, event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from server.storage import (
    ChatSent,
    CommitQueue,
    Conflict,
    GameCreated,
    GameFinished,
    Item,
    RatedPlayers,
    SeqAdvanced,
    Store,
    User,
    WriteFailed,
    WriterClosed,
    current_revision,
    head_revision,
    make_write_lock,
    open_batch_writer,
    open_storage,
)
from server.storage.db import make_blocking_engine
from server.storage.statements import CoreStatements, SqliteTextStatements, write_batch

from .conftest import Database, at, sqlite_url
from .test_games import FISCHER, move, new_game


@contextmanager
def counting_commits(engine: AsyncEngine) -> Iterator[list[int]]:
    """Count the COMMITs issued on the engine's database while the block runs (by any
    engine: on SQLite the commit queue writes through a blocking twin of its own)."""
    commits: list[int] = []

    def on_commit(connection: Connection) -> None:
        if connection.engine.url.database == engine.url.database:
            commits.append(1)

    event.listen(Engine, "commit", on_commit)
    try:
        yield commits
    finally:
        event.remove(Engine, "commit", on_commit)


async def stored_moves(engine: AsyncEngine) -> set[tuple[str, int]]:
    async with engine.connect() as conn:
        rows = await conn.execute(text("SELECT game_id, ply FROM moves"))
        return {(game_id, ply) for game_id, ply in rows}


async def test_concurrent_submits_share_few_transactions(
    store: Store, engine: AsyncEngine, players: tuple[User, User]
) -> None:
    games = [await new_game(store, players, created=n) for n in range(40)]
    items = [move(game_id, ply) for ply in range(5) for game_id in games]
    sizes: list[int] = []
    with counting_commits(engine) as commits:
        async with CommitQueue(open_batch_writer(engine), max_batch=64,
                               on_commit=sizes.append) as writer:
            await asyncio.gather(*(writer.submit(item) for item in items))
    assert await stored_moves(engine) == {(i.game_id, i.ply) for i in items}
    assert len(commits) == writer.stats.transactions == len(sizes) <= 5  # 200 items / 64
    assert max(sizes) == 64 and sum(sizes) == writer.stats.stored == 200


async def test_games_moving_one_at_a_time_are_batched_together(
    store: Store, engine: AsyncEngine, writer: CommitQueue, players: tuple[User, User]
) -> None:
    # Each game waits for its move to be stored before the next, as a game room does; the
    # 20 games together still need only about one commit per round, not one per move.
    games = [await new_game(store, players, created=n) for n in range(20)]

    async def play(game_id: str) -> None:
        for ply in range(10):
            await writer.submit(move(game_id, ply))

    with counting_commits(engine) as commits:
        await asyncio.gather(*(play(game_id) for game_id in games))
    assert len(await stored_moves(engine)) == 200
    assert len(commits) <= 25


async def test_a_bad_item_is_rejected_and_the_rest_of_its_batch_stored(
    store: Store, engine: AsyncEngine, writer: CommitQueue, players: tuple[User, User]
) -> None:
    first, second = await new_game(store, players), await new_game(store, players, created=1)
    await writer.submit(move(first, 0))
    batch: list[Item] = [
        move(second, 0),
        move(first, 0, "Bz9", seq=7),  # ply 0 of `first` is already stored
        move(first, 1),
        move("nosuchgame", 0),  # unknown game: foreign key
        ChatSent(second, 2, players[1].id, "hi", move(second, 0).played_at),
        move(second, 1, seq=3),
        move(second, 2, seq=3),  # seq 3 of `second` taken within the same batch
    ]
    outcomes = await asyncio.gather(
        *(writer.submit(item) for item in batch), return_exceptions=True
    )
    assert [type(o).__name__ for o in outcomes] == [
        "NoneType", "Conflict", "NoneType", "Conflict", "NoneType", "NoneType", "Conflict"
    ]
    assert await stored_moves(engine) == {(first, 0), (first, 1), (second, 0), (second, 1)}
    record = await store.get_game(first)
    assert record is not None and record.moves[0].move == "Ba1"  # the original, not "Bz9"
    assert writer.stats.isolated == 1 and writer.stats.failed == 3
    await writer.submit(move(first, 2))  # and the queue carries on
    assert (first, 2) in await stored_moves(engine)


async def test_a_database_failure_fails_the_whole_batch(
    store: Store, engine: AsyncEngine, writer: CommitQueue, players: tuple[User, User]
) -> None:
    game_id = await new_game(store, players)
    async with engine.begin() as conn:
        await conn.execute(text("DROP TABLE chat"))
    said = ChatSent(game_id, 2, players[0].id, "hi", move(game_id, 0).played_at)
    batch: list[Item] = [move(game_id, 0), said]
    outcomes = await asyncio.gather(
        *(writer.submit(item) for item in batch), return_exceptions=True
    )
    assert all(isinstance(outcome, WriteFailed) for outcome in outcomes)
    assert await stored_moves(engine) == set()  # nothing acknowledged, nothing stored
    await writer.submit(move(game_id, 0))
    assert await stored_moves(engine) == {(game_id, 0)}


async def test_close_writes_everything_queued_then_refuses(
    store: Store, engine: AsyncEngine, players: tuple[User, User]
) -> None:
    game_id = await new_game(store, players)
    writer = CommitQueue(open_batch_writer(engine), max_batch=8)
    with pytest.raises(WriterClosed):
        await writer.submit(move(game_id, 0))  # not started yet
    writer.start()
    pending = [asyncio.ensure_future(writer.submit(move(game_id, ply))) for ply in range(30)]
    await asyncio.sleep(0)  # every submit has queued its item
    await writer.close()
    assert all(task.done() and task.exception() is None for task in pending)
    assert len(await stored_moves(engine)) == 30
    with pytest.raises(WriterClosed):
        await writer.submit(move(game_id, 30))
    await writer.close()  # closing twice is harmless
    assert not writer.running


async def test_a_cancelled_submitter_does_not_withdraw_its_item(
    store: Store, engine: AsyncEngine, writer: CommitQueue, players: tuple[User, User]
) -> None:
    game_id = await new_game(store, players)
    task = asyncio.ensure_future(writer.submit(move(game_id, 0)))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await writer.close()
    assert await stored_moves(engine) == {(game_id, 0)}


async def test_submit_refuses_what_it_cannot_store(writer: CommitQueue) -> None:
    with pytest.raises(TypeError):
        await writer.submit("Ba1")  # type: ignore[arg-type]


async def test_conflict_is_a_storage_error() -> None:
    from server.storage import StorageError

    assert issubclass(Conflict, StorageError) and issubclass(WriteFailed, StorageError)


async def test_open_storage_migrates_serves_and_flushes(db: Database) -> None:
    async with open_storage(db.url, connect_args=db.connect_args) as storage:
        assert storage.writer.running
        alice = await storage.store.create_user("Alice", "human")
        bot = await storage.store.create_user("Bot9", "bot")
        game_id = await new_game(storage.store, (alice, bot))
        pending = asyncio.ensure_future(storage.writer.submit(move(game_id, 0)))
        await asyncio.sleep(0)
    assert pending.done() and pending.exception() is None
    assert not storage.writer.running
    engine = db.engine()
    assert await current_revision(engine) == head_revision()
    assert await stored_moves(engine) == {(game_id, 0)}


async def test_a_cancelled_writer_fails_what_it_could_not_write(engine: AsyncEngine) -> None:
    writer = CommitQueue(open_batch_writer(engine))
    writer.start()
    await asyncio.sleep(0)  # the task waits for work
    assert writer._task is not None
    writer._task.cancel()  # as when the event loop shuts down without close()
    await asyncio.sleep(0)
    with pytest.raises(WriterClosed):
        await writer.submit(move("g", 0))
    assert not writer.running


async def test_a_numbered_event_without_a_row_advances_the_stored_seq(
    store: Store, writer: CommitQueue, players: tuple[User, User]
) -> None:
    from server.storage import SeqAdvanced

    game_id = await new_game(store, players)
    await writer.submit(move(game_id, 0))
    before = await store.get_game(game_id)
    assert before is not None
    await writer.submit(SeqAdvanced(game_id, before.last_seq + 1))
    await writer.submit(SeqAdvanced(game_id, before.last_seq))  # older: never goes back
    after = await store.get_game(game_id)
    assert after is not None and after.last_seq == before.last_seq + 1


async def test_games_are_created_in_the_batches_of_other_games_moves(
    store: Store, engine: AsyncEngine, writer: CommitQueue, players: tuple[User, User]
) -> None:
    running = await new_game(store, players)
    when = move(running, 0).played_at

    def created(game_id: str) -> GameCreated:
        return GameCreated(game_id, "hadron", {"size": 5}, FISCHER, "1",
                           (players[0].id, players[1].id), 1, when, when)

    with counting_commits(engine) as commits:
        outcomes = await asyncio.gather(
            writer.submit(created("newgame1")), writer.submit(move(running, 0)),
            writer.submit(created("newgame2")), writer.submit(created(running)),  # taken
            return_exceptions=True)
    assert [type(o).__name__ for o in outcomes] == ["NoneType", "NoneType", "NoneType",
                                                     "Conflict"]
    record = await store.get_game("newgame1")
    assert record is not None and record.info.status == "playing"
    assert record.info.options == {"size": 5} and record.info.last_seq == 1
    await writer.submit(move("newgame2", 0))  # a created game takes moves at once
    assert len(commits) <= 4  # one batch, then the three items retried one by one
    assert await stored_moves(engine) == {(running, 0), ("newgame2", 0)}


async def test_the_store_and_the_queue_take_turns_to_write(db: Database) -> None:
    # Writers of one process wait for each other in the event loop, not in SQLite's busy
    # handler: with no busy timeout at all, a store writing while the queue commits moves
    # would fail at once with "database is locked".
    await db.upgrade()
    engine = db.engine(busy_timeout_ms=0)
    lock = make_write_lock(engine)
    store = Store(engine, write_lock=lock)
    players = (await store.create_user("Alice", "human"),
               await store.create_user("Bob", "human"))
    games = [await new_game(store, players, created=n) for n in range(10)]
    async with CommitQueue(open_batch_writer(engine), write_lock=lock) as writer:

        async def play(game_id: str) -> None:
            for ply in range(20):
                await writer.submit(move(game_id, ply))

        async def start_games() -> list[str]:
            return [await new_game(store, players, created=n) for n in range(20)]

        async def sign_up() -> None:
            for n in range(20):
                await store.create_user(f"guest{n}", "guest")

        _, started, _ = await asyncio.gather(
            asyncio.gather(*(play(g) for g in games)), start_games(), sign_up())
    assert len(set(started)) == 20
    assert len(await stored_moves(engine)) == 200


async def test_sqlite_text_statements_store_what_core_stores(tmp_path: Path) -> None:
    """On SQLite the commit queue writes moves and updates as SQL text of its own; the rows
    must be byte for byte those Core statements write, and the outcomes the same."""
    ids = ("aaaaaaaaaa", "bbbbbbbbbb")
    rated_ids = ("dddddddddd", "eeeeeeeeee")
    games = [GameCreated(game_id, "xodd", {"size": 9}, FISCHER, "1", (1, 2), 1, at(0), at(0),
                         rated=game_id in rated_ids)
             for game_id in (*ids, *rated_ids)]
    rated = RatedPlayers("xodd", (1, 2), 86_400.0)
    moves = [dataclasses.replace(move(game_id, ply), clock_ms=None if ply % 7 == 3 else 500)
             for ply in range(115) for game_id in ids]  # 230 moves: three INSERTs of text
    items: list[Item] = [
        *games, *moves,
        ChatSent(ids[0], 250, 1, "héllo ✓", at(3)),
        ChatSent(ids[1], 251, 2, "gg", at(3)),
        SeqAdvanced(ids[0], 300),
        SeqAdvanced(ids[0], 200),  # behind: changes nothing
        GameFinished(ids[1], 0, "normal", 400, at(500.123456), "over"),
        GameFinished(ids[1], None, "abort", 401, at(501), "aborted"),  # already over
        GameFinished("cccccccccc", 1, "normal", 5, at(502), "over"),  # no such game
        # rated: the first inserts both rating rows, the second updates them
        GameFinished(rated_ids[0], 0, "normal", 2, at(600.5), "over", rated=rated),
        GameFinished(rated_ids[1], None, "normal", 2, at(7000.25), "over", rated=rated),
    ]
    dumps = []
    for core in (True, False):
        database = Database("sqlite", sqlite_url(tmp_path / f"core-{core}.db"))
        await database.upgrade()
        engine = database.engine()
        store = Store(engine)
        for name in ("ann", "bob"):
            await store.create_user(name, "human")
        twin = make_blocking_engine(engine.url)
        assert twin is not None
        statements = CoreStatements() if core else SqliteTextStatements(twin.dialect)
        with twin.connect() as conn, conn.begin():
            outcomes = write_batch(conn, items, statements)
        twin.dispose()
        await _dispose_all(database)
        with contextlib.closing(sqlite3.connect(tmp_path / f"core-{core}.db")) as raw:
            dumps.append((
                [type(outcome).__name__ for outcome in outcomes],
                raw.execute("SELECT * FROM moves ORDER BY game_id, ply").fetchall(),
                raw.execute("SELECT * FROM games ORDER BY id").fetchall(),
                raw.execute("SELECT * FROM chat ORDER BY game_id, seq").fetchall(),
                raw.execute("SELECT * FROM ratings ORDER BY user_id").fetchall(),
                raw.execute("SELECT * FROM game_ratings ORDER BY id").fetchall()))
    assert dumps[0] == dumps[1]
    outcomes, stored_moves_, stored_games, stored_chat, ratings, game_ratings = dumps[1]
    assert len(stored_chat) == 2
    assert outcomes[-4:] == ["GameNotPlaying", "GameNotPlaying", "tuple", "tuple"]
    assert outcomes.count("NoneType") == len(items) - 4
    assert len(stored_moves_) == 230
    assert len(stored_games) == 4
    assert [row[-4:] for row in ratings] == [(2, 1, 0, 1), (2, 0, 1, 1)]  # games, w, l, d
    assert len(game_ratings) == 4
    with contextlib.closing(sqlite3.connect(tmp_path / "core-False.db")) as raw:
        assert raw.execute("SELECT id, last_seq, status FROM games ORDER BY id").fetchall() == [
            (ids[0], 300, "playing"), (ids[1], 400, "over"), (rated_ids[0], 2, "over"),
            (rated_ids[1], 2, "over")]


async def _dispose_all(database: Database) -> None:
    for engine in database.engines:
        await engine.dispose()
