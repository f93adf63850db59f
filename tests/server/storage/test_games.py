"""Games: creation, moves and chat through the commit queue, finishing, records, history."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from server.storage import (
    ChallengeTerms,
    ChatSent,
    CommitQueue,
    Conflict,
    CoreWriter,
    FinishedStatus,
    GameCreated,
    GameFinished,
    GameNotPlaying,
    InvalidCursor,
    MovePlayed,
    Store,
    User,
    new_game_id,
    open_batch_writer,
)

from .conftest import T0, Database, at

FISCHER = {"kind": "fischer", "base_ms": 60_000, "increment_ms": 1_000}


async def new_game(
    store: Store, players: tuple[User, User], key: str = "xodd", created: float = 0,
    game_id: str | None = None, player_ids: tuple[int, int] | None = None,
) -> str:
    """Store a new game in progress in a transaction of its own (as the commit queue
    would, through the reference writer); Conflict if the id or a player is refused."""
    item = GameCreated(game_id or new_game_id(), key, {"size": 9}, FISCHER, "1",
                       player_ids or (players[0].id, players[1].id), 0, at(created),
                       at(created))
    try:
        async with store.writing:
            await CoreWriter(store.engine).write([item])
    except IntegrityError as exc:
        raise Conflict(f"cannot create game {item.game_id!r}: {exc.orig}") from exc
    return item.game_id


def move(game_id: str, ply: int, text: str = "", at_s: float = 1.0, seq: int = 0) -> MovePlayed:
    return MovePlayed(
        game_id=game_id,
        ply=ply,
        seq=seq or ply + 1,
        move=text or f"Ba{ply + 1}",
        player=ply % 2,
        ms_used=1500,
        clock_ms=59_500 - 500 * ply,
        played_at=at(at_s + ply),
    )


async def test_a_whole_game_is_recorded(
    store: Store, writer: CommitQueue, players: tuple[User, User]
) -> None:
    game_id = await new_game(store, players)
    assert len(game_id) == 10
    for ply in range(3):
        await writer.submit(move(game_id, ply))
    await writer.submit(ChatSent(game_id, 4, players[1].id, "good luck", at(5)))
    await writer.submit(move(game_id, 3, seq=5))
    await writer.submit(GameFinished(game_id, 1, "resign", 6, at(10)))

    record = await store.get_game(game_id)
    assert record is not None
    info = record.info
    assert (info.game_key, info.options, info.clock, info.rules_version) == (
        "xodd", {"size": 9}, FISCHER, "1"
    )
    assert info.players == ("Alice", "Bot9")
    assert info.player_ids == (players[0].id, players[1].id)
    assert (info.status, info.winner, info.reason) == ("over", 1, "resign")
    assert (info.created_at, info.started_at, info.ended_at) == (T0, T0, at(10))
    assert (info.plies, info.last_seq, record.last_seq) == (4, 6, 6)
    assert [(m.ply, m.seq, m.move, m.player) for m in record.moves] == [
        (0, 1, "Ba1", 0), (1, 2, "Ba2", 1), (2, 3, "Ba3", 0), (3, 5, "Ba4", 1)
    ]
    assert record.moves[2].ms_used == 1500 and record.moves[2].clock_ms == 58_500
    assert record.moves[2].played_at == at(3)
    [line] = record.chat
    assert (line.seq, line.user_id, line.user_name, line.text, line.sent_at) == (
        4, players[1].id, "Bot9", "good luck", at(5)
    )
    assert await store.get_game("nosuchgame") is None


async def test_a_game_ends_once(
    store: Store, writer: CommitQueue, players: tuple[User, User]
) -> None:
    game_id = await new_game(store, players)
    await writer.submit(GameFinished(game_id, None, "abort", 1, at(2), "aborted"))
    with pytest.raises(GameNotPlaying):
        await writer.submit(GameFinished(game_id, 0, "resign", 2, at(3)))
    with pytest.raises(GameNotPlaying):
        await writer.submit(GameFinished(game_id, 0, "timeout", 2, at(3)))
    with pytest.raises(GameNotPlaying):
        await writer.submit(GameFinished("nosuchgame", 0, "timeout", 2, at(3)))
    record = await store.get_game(game_id)
    assert record is not None
    assert (record.info.status, record.info.winner, record.info.reason) == (
        "aborted", None, "abort"
    )


async def test_create_game_checks_players_and_ids(
    store: Store, players: tuple[User, User]
) -> None:
    await new_game(store, players, game_id="fixed")
    with pytest.raises(Conflict):
        await new_game(store, players, game_id="fixed")
    with pytest.raises(Conflict):
        await new_game(store, players, player_ids=(1, 999))


async def test_items_are_validated_when_built() -> None:
    with pytest.raises(ValueError, match="aware"):
        MovePlayed("g", 0, 1, "Ba1", 0, 0, None, T0.replace(tzinfo=None))
    with pytest.raises(ValueError, match="seat"):
        MovePlayed("g", 0, 1, "Ba1", 2, 0, None, T0)
    with pytest.raises(ValueError, match="ply"):
        MovePlayed("g", -1, 1, "Ba1", 0, 0, None, T0)
    with pytest.raises(ValueError, match="at most 256"):
        MovePlayed("g", 0, 1, "x" * 300, 0, 0, None, T0)
    with pytest.raises(ValueError, match="empty"):
        MovePlayed("g", 0, 1, "", 0, 0, None, T0)
    with pytest.raises(ValueError, match="no winner"):
        GameFinished("g", 0, "abort", 3, T0, status="aborted")
    with pytest.raises(ValueError, match="over or aborted"):
        GameFinished("g", None, "x", 3, T0, status="playing")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="aware"):
        ChatSent("g", 1, 1, "hi", T0.replace(tzinfo=None))


async def test_active_games_survive_a_restart(db: Database) -> None:
    await db.upgrade()
    first = db.engine()
    store = Store(first)
    alice = await store.create_user("Alice", "human")
    bot = await store.create_user("Bot9", "bot")
    players = (alice, bot)
    playing = [await new_game(store, players, created=n) for n in range(3)]
    done = await new_game(store, players, created=5)
    async with CommitQueue(open_batch_writer(first)) as writer:
        for ply in range(4):
            for game_id in playing[:2]:
                await writer.submit(move(game_id, ply))
        await writer.submit(ChatSent(playing[0], 5, bot.id, "brb", at(9)))
        await writer.submit(move(done, 0))
        await writer.submit(GameFinished(done, 0, "resign", 2, at(9)))
    await first.dispose()  # the "crash": nothing is kept in memory from here on

    restored = await Store(db.engine()).load_active_games()
    assert [r.info.id for r in restored] == playing  # oldest first
    zero, one, two = restored
    assert [m.ply for m in zero.moves] == [0, 1, 2, 3]
    assert [c.text for c in zero.chat] == ["brb"] and one.chat == ()
    assert zero.last_seq == 5 and one.last_seq == 4 and two.last_seq == 0
    assert zero.moves[-1].played_at == at(1 + 3) and two.info.started_at == at(2)
    assert (zero.remaining_ms(0), zero.remaining_ms(1)) == (58_500, 58_000)
    assert two.moves == () and two.remaining_ms(0) is None
    assert all(r.info.status == "playing" and r.info.ended_at is None for r in restored)


async def test_playing_ids_and_counts_name_only_games_in_progress(db: Database) -> None:
    await db.upgrade()
    store = Store(db.engine())
    alice, bot, carol = [await store.create_user(name, "human") for name in ("A", "B", "C")]
    first = await new_game(store, (alice, bot), created=1)
    second = await new_game(store, (bot, alice), created=2)  # alice in seat 1 this time
    done = await new_game(store, (alice, carol), created=3)
    async with CommitQueue(open_batch_writer(store.engine)) as writer:
        await writer.submit(GameFinished(done, 0, "resign", 1, at(9)))
    assert await store.playing_game_ids(alice.id) == [first, second]
    assert await store.playing_game_ids(carol.id) == []
    assert await store.playing_counts([alice.id, carol.id, bot.id]) == {
        alice.id: 2, carol.id: 0, bot.id: 2}
    assert await store.playing_counts([]) == {}


async def test_challenge_terms_read_the_policy_and_any_game_together(db: Database) -> None:
    """Who a user takes challenges from, as stored, and whether two users have a game in
    the records (either seat, in progress or over); an unknown target takes none."""
    await db.upgrade()
    store = Store(db.engine())
    alice, bob, carol = [await store.create_user(name, "human") for name in ("A", "B", "C")]
    assert await store.challenge_terms(alice.id, bob.id) == ChallengeTerms("everyone", False)
    game = await new_game(store, (bob, alice))
    async with CommitQueue(open_batch_writer(store.engine)) as writer:
        await writer.submit(GameFinished(game, 0, "resign", 1, at(9)))
    await store.set_challenge_policy(alice.id, "registered")
    assert await store.challenge_terms(alice.id, bob.id) == ChallengeTerms("registered", True)
    assert await store.challenge_terms(bob.id, alice.id) == ChallengeTerms("everyone", True)
    assert await store.challenge_terms(alice.id, carol.id) == ChallengeTerms("registered",
                                                                             False)
    assert (await store.get_user_by_name("a")).challenge_policy == "registered"  # type: ignore[union-attr]
    assert await store.challenge_terms(carol.id + 100, alice.id) == ChallengeTerms("nobody",
                                                                                   False)
    with pytest.raises(ValueError):
        await store.set_challenge_policy(alice.id, "friends")  # type: ignore[arg-type]


async def history(store: Store, players: tuple[User, User], engine: AsyncEngine) -> list[str]:
    """Seven finished games and one in progress; returns the finished ids, newest first."""
    carol = await store.create_user("Carol", "human")
    alice, bot = players
    plan: list[tuple[str, tuple[User, User], int | None, FinishedStatus, int]] = [
        # (game, seats, winner, status, ended at): two pairs end at the same moment
        ("xodd", (alice, bot), 0, "over", 10),
        ("hadron", (bot, alice), 1, "over", 20),
        ("xodd", (carol, bot), 1, "over", 20),
        ("yodd", (alice, carol), None, "aborted", 30),
        ("xodd", (bot, carol), 0, "over", 40),
        ("hadron", (carol, alice), 0, "over", 50),
        ("xodd", (alice, bot), 1, "over", 50),
    ]
    finished = []
    async with CommitQueue(open_batch_writer(engine)) as writer:
        for n, (key, seats, winner, status, ended) in enumerate(plan):
            game_id = await new_game(store, seats, key, created=n, game_id=f"g{n}")
            await writer.submit(move(game_id, 0))
            await writer.submit(GameFinished(game_id, winner, "x", 3, at(ended), status))
            finished.append((at(ended), game_id))
        await new_game(store, (alice, carol), created=60, game_id="live")
    return [game_id for _, game_id in sorted(finished, reverse=True)]


async def _all_pages(store: Store, limit: int, **filters: Any) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page = await store.list_games(limit=limit, cursor=cursor, **filters)
        assert len(page.games) <= limit
        ids.extend(game.id for game in page.games)
        if page.next_cursor is None:
            return ids
        cursor = page.next_cursor


async def test_history_pages_newest_first_without_gaps_or_repeats(
    store: Store, players: tuple[User, User], engine: AsyncEngine
) -> None:
    newest_first = await history(store, players, engine)
    assert newest_first == ["g6", "g5", "g4", "g3", "g2", "g1", "g0"]
    for limit in (1, 2, 3, 7, 50):
        assert await _all_pages(store, limit) == newest_first
    page = await store.list_games(limit=3)
    assert [g.id for g in page.games] == ["g6", "g5", "g4"] and page.next_cursor
    first = page.games[0]
    assert (first.players, first.winner, first.plies) == (("Alice", "Bot9"), 1, 1)
    assert first.player_kinds == ("human", "bot")
    assert await store.list_game_ids() == [f"g{n}" for n in range(7)] + ["live"]


async def test_history_filters(
    store: Store, players: tuple[User, User], engine: AsyncEngine
) -> None:
    await history(store, players, engine)
    for limit in (1, 2, 10):
        assert await _all_pages(store, limit, player="alice") == ["g6", "g5", "g3", "g1", "g0"]
        assert await _all_pages(store, limit, winner="BOT9") == ["g6", "g4", "g2"]
        assert await _all_pages(store, limit, winner="alice") == ["g1", "g0"]  # both seats
        assert await _all_pages(store, limit, player="Alice", winner="Bot9") == ["g6"]
        assert await _all_pages(store, limit, player="Carol", game_key="xodd") == ["g4", "g2"]
    assert await _all_pages(store, 10, game_key="hadron") == ["g5", "g1"]
    assert await _all_pages(store, 10, status="aborted") == ["g3"]
    assert await _all_pages(store, 10, status="over", player="carol", winner="carol") == ["g5"]
    assert await _all_pages(store, 10, loser="alice") == ["g6", "g5"]  # not g3: aborted
    assert await _all_pages(store, 10, loser="bot9", player="alice") == ["g1", "g0"]
    assert await _all_pages(store, 10, winner="carol", loser="alice") == ["g5"]
    assert await _all_pages(store, 10, player="nobody") == []
    assert await _all_pages(store, 10, game_key="hexifact") == []


async def test_history_refuses_bad_arguments(store: Store) -> None:
    with pytest.raises(InvalidCursor):
        await store.list_games(cursor="not-a-cursor")
    with pytest.raises(ValueError):
        await store.list_games(limit=0)
    with pytest.raises(ValueError):
        await store.list_games(status="playing")  # type: ignore[arg-type]
