"""Moves the server must refuse, or recognise as resent, without changing the game."""

from __future__ import annotations

import dataclasses
import random

import protocol as p

from .conftest import Serve, both_topologies
from .support import Clients, Game, Player, start_game

pytestmark = both_topologies


async def _view(game: Game, spectator: Player) -> tuple[p.Record, p.Snapshot]:
    """What get_game and watch say, minus the running clocks (time passes)."""
    record = await game.record(spectator)
    snapshot = await game.watch(spectator)
    return record, dataclasses.replace(snapshot, clocks_ms=None)


async def test_refused_moves_change_nothing(clients: Clients) -> None:
    a, b, c = await clients.guest(), await clients.guest(), await clients.guest()
    game = await start_game(a, b, "hadron")
    await game.play("a1")
    await game.play("c3")
    for player in (a, b):
        await player.drain(0.1)
    before = await _view(game, c)
    assert before[1].status == "playing" and before[1].ply == 2
    gid = game.game_id

    refusals = [
        (b, {"ply": 2, "move": "b2"}, "not_your_turn"),
        (a, {"ply": 2, "move": "a1"}, "illegal_move"),  # occupied
        (a, {"ply": 2, "move": "zz99"}, "illegal_move"),  # no such cell
        (a, {"ply": 0, "move": "e5"}, "stale_ply"),  # ply 0 was played differently
        (a, {"ply": 4, "move": "e5"}, "stale_ply"),  # the future
        (b, {"ply": 7, "move": "e5"}, "stale_ply"),  # stale before not-your-turn
        (c, {"ply": 2, "move": "e5"}, "forbidden"),  # not c's game
    ]
    for who, fields, code in refusals:
        error = await who.refused(p.Move, game_id=gid, **fields)
        assert (error.code, error.game_id) == (code, gid), (fields, error)
        if code == "illegal_move":
            assert fields["move"] in error.message  # says what was wrong with which move
        assert await _view(game, c) == before

    error = await a.refused(p.Move, game_id="nosuchgame", ply=2, move="e5")
    assert (error.code, error.game_id) == ("not_found", "nosuchgame")
    for player in (a, b):
        assert await player.drain(0.1) == []

    ack = await game.play("e5")  # and the game goes on
    assert ack.seq == 4
    assert a.conn.events.get_nowait().seq == 4  # moved came before move_ack


async def test_a_resent_move_is_acknowledged_again_and_played_once(clients: Clients) -> None:
    a, b, c = await clients.guest(), await clients.guest(), await clients.guest()
    game = await start_game(a, b, "xodd", {"size": 5})
    rng = random.Random(3)
    first = await game.play(rng=rng)
    second = await game.play(rng=rng)
    moves = list(game.state.moves)
    for who in (a, b):
        await who.drain(0.1)
    before = await _view(game, c)

    again = await a.call(p.Move, game_id=game.game_id, ply=0, move=moves[0])
    assert again.seq == first.seq and again.ply == 0
    again = await b.call(p.Move, game_id=game.game_id, ply=1, move=moves[1])
    assert again.seq == second.seq and again.ply == 1
    assert await _view(game, c) == before
    assert [m.move for m in before[0].moves] == moves
    for player in (a, b):  # the resend broadcast nothing
        assert await player.drain(0.1) == []


async def test_moves_after_the_end(clients: Clients) -> None:
    a, b, c = await clients.guest(), await clients.guest(), await clients.guest()
    game = await start_game(a, b, "yodd", {"size": 3})
    rng = random.Random(7)
    while not game.state.is_over:
        last_mover = game.mover
        last = await game.play(rng=rng)
    record = await game.record(c)
    assert record.status == "over"

    final = record.moves[-1]
    again = await last_mover.call(p.Move, game_id=game.game_id, ply=final.ply,
                                  move=final.move)
    assert (again.seq, again.ply) == (last.seq, last.ply)  # a resend is still a resend

    for who in (a, b):
        error = await who.refused(p.Move, game_id=game.game_id, ply=game.ply, move="Ba1")
        assert (error.code, error.game_id) == ("game_over", game.game_id)
    error = await c.refused(p.Move, game_id=game.game_id, ply=game.ply, move="Ba1")
    assert error.code == "forbidden"
    assert await game.record(c) == record


async def test_finished_games_refuse_moves_after_a_restart(serve: Serve) -> None:
    async with serve() as live:
        a, b = await live.clients.guest(), await live.clients.guest()
        c = await live.clients.guest()
        game = await start_game(a, b, "yodd", {"size": 3})
        rng = random.Random(8)
        while not game.state.is_over:
            last = await game.play(rng=rng)
        final = game.state.moves[-1]
        record = await game.record()
    async with serve() as live:  # a restart: finished games are only in the database
        a = await live.clients.with_token(a.token)
        b = await live.clients.with_token(b.token)
        c = await live.clients.with_token(c.token)
        assert a.authed.active_games == b.authed.active_games == ()
        mover = (a, b)[last.ply % 2]
        again = await mover.call(p.Move, game_id=game.game_id, ply=last.ply, move=final)
        assert (again.ply, again.seq) == (last.ply, last.seq)
        for who in (a, b):
            error = await who.refused(p.Move, game_id=game.game_id, ply=game.ply, move="Ba1")
            assert (error.code, error.game_id) == ("game_over", game.game_id)
            for kind in (p.Resign, p.Abort, p.ClaimWin):
                assert (await who.refused(kind, game_id=game.game_id)).code == "game_over"
        error = await c.refused(p.Move, game_id=game.game_id, ply=game.ply, move="Ba1")
        assert error.code == "forbidden"
        assert await game.record(c) == record
