"""The server builds its schema on an empty database, and ``db upgrade`` is idempotent."""

from __future__ import annotations

import protocol as p
from server.storage import current_revision, head_revision

from .conftest import Serve, TestDatabase
from .support import run_cli, start_game


async def test_a_fresh_database_then_db_upgrade_then_a_restart(
        database: TestDatabase, serve: Serve) -> None:
    assert await current_revision(database.url) is None  # nothing there yet
    async with serve() as live:  # the server migrates the empty database on start
        a, b = await live.clients.guest(), await live.clients.guest()
        game = await start_game(a, b, "hadron")
        await game.play("c3")
    assert await current_revision(database.url) == head_revision()

    for _ in range(2):  # at head already: nothing to do, nothing broken
        done = await run_cli("db", "upgrade", "--db", database.url)
        assert done.returncode == 0, done.stderr
        assert "database at head" in done.stdout
        assert await current_revision(database.url) == head_revision()

    async with serve() as live:  # what was stored is still there
        a2 = await live.clients.with_token(a.token)
        assert a2.authed.active_games == (game.game_id,)
        record = (await a2.call(p.GetGame, game_id=game.game_id)).record
        assert [m.move for m in record.moves] == ["c3"]


async def test_db_upgrade_on_an_empty_database(database: TestDatabase, serve: Serve) -> None:
    done = await run_cli("db", "upgrade", "--db", database.url)
    assert done.returncode == 0, done.stderr
    assert await current_revision(database.url) == head_revision()
    async with serve() as live:
        player = await live.clients.guest()
        listing = await player.call(p.ListGames)
        assert listing.games == ()
