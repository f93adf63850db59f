"""How games end other than by the rules: time, resignation, abort, abandonment."""

from __future__ import annotations

import asyncio
import time

import pytest

import protocol as p
from clients.connection import Connection
from protocol.limits import MIN_CLOCK_MS

from .conftest import GRACE_MS, both_topologies
from .support import TIMEOUT, Clients, Game, Player, start_game

pytestmark = both_topologies

CLOCKS = {
    "per_move": p.PerMove(per_move_ms=MIN_CLOCK_MS),
    "fischer": p.Fischer(base_ms=MIN_CLOCK_MS, increment_ms=0),
}


async def _over(game: Game, *spectators: Player | Connection) -> list[p.GameOver]:
    """The game_over each player and spectator got."""
    conns = [w.conn if isinstance(w, Player) else w for w in (*game.players, *spectators)]
    return [await conn.wait_for(p.GameOver, TIMEOUT, game_id=game.game_id) for conn in conns]


@pytest.mark.parametrize("kind", list(CLOCKS))
async def test_running_out_of_time_loses(clients: Clients, kind: str) -> None:
    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, "hadron", clock=CLOCKS[kind])
    spectator = await clients.spectator()
    await game.watch(spectator)

    await asyncio.sleep(MIN_CLOCK_MS / 1000 + 0.2)  # no clock runs while the game waits
    await game.play("a1")
    await game.play("e5")
    playing = time.monotonic()  # from now a's clock runs, and a does not move

    over = await _over(game, spectator)
    waited = time.monotonic() - playing
    assert over == [p.GameOver(game_id=game.game_id, seq=4, winner=1, reason="timeout")] * 3
    assert MIN_CLOCK_MS / 1000 - 0.05 <= waited < MIN_CLOCK_MS / 1000 + 2

    record = await game.record()
    assert (record.status, record.result) == ("over", p.Result(winner=1, reason="timeout"))
    assert [m.move for m in record.moves] == ["a1", "e5"]
    assert [m.clock_ms for m in record.moves] == [MIN_CLOCK_MS, MIN_CLOCK_MS]
    error = await a.refused(p.Move, game_id=game.game_id, ply=2, move="c3")
    assert error.code == "game_over"
    snapshot = await game.watch(spectator)
    assert snapshot.status == "over" and snapshot.result == record.result
    for who in (a.conn, b.conn, spectator):  # nothing came after game_over
        assert who.events.empty()


async def test_resign(clients: Clients) -> None:
    a, b, c = await clients.guest(), await clients.guest(), await clients.guest()
    game = await start_game(a, b, "hadron")
    await game.watch(c)
    for move in ("a1", "d4"):
        await game.play(move)

    assert (await c.refused(p.Resign, game_id=game.game_id)).code == "forbidden"
    assert (await c.refused(p.Resign, game_id="nosuchgame")).code == "not_found"
    await b.call(p.Resign, game_id=game.game_id)  # not b's turn: allowed all the same
    ended = p.GameOver(game_id=game.game_id, seq=4, winner=0, reason="resign")
    assert await _over(game, c) == [ended] * 3

    for who in (a, b):
        assert (await who.refused(p.Resign, game_id=game.game_id)).code == "game_over"
    record = await game.record()
    assert (record.status, record.result) == ("over", p.Result(winner=0, reason="resign"))
    assert len(record.moves) == 2
    for who in (a, b, c):
        assert await who.drain(0.1) == []


async def test_abort_only_while_waiting(clients: Clients) -> None:
    a, b = await clients.guest(), await clients.guest()
    first = await start_game(a, b, "hadron")
    await first.play("b2")
    await b.call(p.Abort, game_id=first.game_id)  # one move played: still waiting
    aborted = p.GameOver(game_id=first.game_id, seq=3, winner=None, reason="abort")
    assert await _over(first) == [aborted] * 2
    record = await first.record()
    assert (record.status, record.result) == ("over", p.Result(reason="abort"))
    assert (await a.refused(p.Abort, game_id=first.game_id)).code == "game_over"

    second = await start_game(a, b, "hadron")
    await second.play("b2")
    await second.play("d4")
    for who in (a, b):
        error = await who.refused(p.Abort, game_id=second.game_id)
        assert (error.code, error.game_id) == ("conflict", second.game_id)
    assert (await second.record()).status == "playing"
    await second.play("c3")  # the game goes on

    listed = await a.call(p.ListGames, player=a.name, status="over")
    assert [(s.game_id, s.result) for s in listed.games] == [
        (first.game_id, p.Result(reason="abort"))]
    assert [(type(e), e.game_id) for e in await b.drain(0.1)] == [
        (p.Moved, second.game_id)] * 3


async def test_claim_win_after_the_opponent_left_for_the_grace_period(
        clients: Clients) -> None:
    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, "hadron")
    await game.play("b2")
    await game.play("d4")
    await a.drain(0.05)

    error = await a.refused(p.ClaimWin, game_id=game.game_id)
    assert error.code == "conflict"  # b is here
    await b.close()
    left = await a.wait_for(p.OpponentLeft)
    assert (left.game_id, left.player, left.claim_after_ms) == (game.game_id, 1, GRACE_MS)
    error = await a.refused(p.ClaimWin, game_id=game.game_id)
    assert error.code == "conflict"  # too early
    assert error.retry_after_ms is not None and 0 < error.retry_after_ms <= GRACE_MS

    await asyncio.sleep(GRACE_MS / 1000 + 0.05)
    await a.call(p.ClaimWin, game_id=game.game_id)
    over = await a.wait_for(p.GameOver)
    assert (over.winner, over.reason) == (0, "abandon")
    assert over.seq == left.seq + 1
    record = await game.record()
    assert (record.status, record.result) == ("over", p.Result(winner=0, reason="abandon"))
    assert (await a.refused(p.ClaimWin, game_id=game.game_id)).code == "game_over"
