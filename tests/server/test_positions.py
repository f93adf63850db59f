"""Boards, positions and move checks for clients that know no rules, on a real server.

Every answer is compared with the engine's: the geometry with ``Board.describe()``, each
position with the state after replaying the moves, each check with what playing the move
would have answered.
"""

from __future__ import annotations

import random

import pytest

import engine
import protocol as p
from clients.connection import Connection, ServerError

from .conftest import Live, Serve
from .support import TIMEOUT, Clients, Game, RawSocket, start_game

SEATS = ".01"


async def call(conn: Connection, kind: type, **fields: object) -> object:
    import asyncio

    return await asyncio.wait_for(conn.call(kind, **fields), TIMEOUT)


def expected_position(state: engine.State, game_id: str) -> dict[str, object]:
    listed = state.legal_moves_upto(p.MAX_LISTED_MOVES)
    last = state.moves[-1] if state.moves else None
    return {
        "game_id": game_id, "ply": state.ply, "to_move": state.to_move,
        "cells": "".join(SEATS[v] for v in state.cells),
        "last_move_cells": tuple(state.cells_of(last)) if last else (),
        "summary": state.summary(),
        "legal_moves": None if listed is None else tuple(map(str, listed)),
        "after_pass": p.Result.of(ending) if (ending := state.ending_if("pass")) else None,
    }


def as_fields(position: object) -> dict[str, object]:
    assert isinstance(position, p.Position), position
    return {name: getattr(position, name) for name in
            ("game_id", "ply", "to_move", "cells", "last_move_cells", "summary", "legal_moves",
             "after_pass")}


@pytest.mark.parametrize("key", list(engine.GAMES))
async def test_get_board_is_the_engines_geometry(server: Live, key: str) -> None:
    conn = await server.clients.spectator()  # no login needed
    game = engine.get_game(key)
    for option in game.options:
        if option.kind == "int":
            assert option.minimum is not None
            values: list[int | str] = [option.minimum, option.default]
        else:
            values = list(option.choices)
        for value in values:
            reply = await call(conn, p.GetBoard, game=key, options={option.name: value})
            assert isinstance(reply, p.Board)
            options = game.normalize_options({option.name: value})
            assert (reply.game, dict(reply.options)) == (key, options)
            assert reply.geometry == game.board(options).describe()


async def test_get_board_refuses_unknown_games_and_options(server: Live) -> None:
    raw = await RawSocket.open(server.url)  # the client library refuses to build these
    try:
        for game, options, words in (("chess", {}, "unknown game"),
                                     ("hadron", {"size": 99}, "size")):
            reply = await raw.request({"t": "get_board", "id": 7, "game": game,
                                       "options": options})
            assert isinstance(reply, p.ErrorReply) and reply.id == 7, reply
            assert reply.code == "bad_request" and words in reply.message
    finally:
        await raw.close()


@pytest.mark.parametrize(("key", "options"), [("hadron", {"size": 5}), ("hexifact", {}),
                                              ("yodd", {"size": 3}), ("xodd", {"size": 4})])
async def test_positions_at_every_ply_are_the_engines(
        clients: Clients, key: str, options: dict[str, object]) -> None:
    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, key, options)
    spectator = await clients.spectator()
    rng = random.Random(f"positions-{key}")
    states = [game.state]
    while not game.state.is_over and game.ply < 40:
        await game.play(rng=rng)
        states.append(game.state)
        latest = await call(spectator, p.GetPosition, game_id=game.game_id)
        assert as_fields(latest) == expected_position(game.state, game.game_id)
    # every earlier ply, in any order, from a live game
    for ply in rng.sample(range(len(states)), len(states)):
        reply = await call(spectator, p.GetPosition, game_id=game.game_id, ply=ply)
        assert as_fields(reply) == expected_position(states[ply], game.game_id)
    with pytest.raises(ServerError) as refused:
        await call(spectator, p.GetPosition, game_id=game.game_id, ply=len(states))
    assert refused.value.code == "not_found"
    # and once the game is over
    if not game.state.is_over:
        await a.call(p.Resign, game_id=game.game_id)
    for ply in (0, len(states) // 2, len(states) - 1):
        reply = await call(spectator, p.GetPosition, game_id=game.game_id, ply=ply)
        assert as_fields(reply) == expected_position(states[ply], game.game_id)


async def test_xodd_lists_few_moves_and_checks_the_rest(clients: Clients) -> None:
    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, "xodd", {"size": 9})
    start = await call(b.conn, p.GetPosition, game_id=game.game_id)
    assert isinstance(start, p.Position) and start.legal_moves is not None
    assert len(start.legal_moves) == 162  # any single stone of either colour on 81 cells
    await game.play("Bc3")
    await game.play("Be5,Wd4")
    after = await call(a.conn, p.GetPosition, game_id=game.game_id)
    assert isinstance(after, p.Position) and after.legal_moves is None  # thousands
    assert after.last_move_cells == ("d4", "e5")

    legal = await call(a.conn, p.CheckMove, game_id=game.game_id, ply=2, move="wg7,bf6")
    assert legal == p.MoveCheck(id=legal.id, game_id=game.game_id, ply=2,  # type: ignore
                                move="Bf6,Wg7", legal=True)
    for candidate in ("Wf6", "Bc3", "Bz9", "c3", "pass,pass", "Bf6,Bf6"):
        checked = await call(b.conn, p.CheckMove, game_id=game.game_id, ply=2, move=candidate)
        assert isinstance(checked, p.MoveCheck)
        assert (checked.legal, checked.move) == (False, candidate)
        with pytest.raises(ServerError) as refused:  # what playing it answers, word for word
            await a.call(p.Move, game_id=game.game_id, ply=2, move=candidate)
        assert refused.value.code == "illegal_move"
        assert checked.reason == refused.value.message
    assert game.state.ply == 2  # checks played nothing
    position = await call(a.conn, p.GetPosition, game_id=game.game_id)
    assert isinstance(position, p.Position) and position.ply == 2

    earlier = await call(b.conn, p.CheckMove, game_id=game.game_id, ply=0, move="Wa1")
    assert isinstance(earlier, p.MoveCheck) and earlier.legal
    with pytest.raises(ServerError) as refused:
        await call(b.conn, p.CheckMove, game_id=game.game_id, ply=3, move="pass")
    assert refused.value.code == "not_found"


async def test_unknown_games_are_not_found(server: Live) -> None:
    conn = await server.clients.spectator()
    for kind, fields in ((p.GetPosition, {}), (p.CheckMove, {"ply": 0, "move": "pass"})):
        with pytest.raises(ServerError) as refused:
            await call(conn, kind, game_id="nosuchgame", **fields)
        assert refused.value.code == "not_found"


async def test_positions_of_a_finished_game_after_a_restart(serve: Serve) -> None:
    async with serve() as live:
        a, b = await live.clients.guest(), await live.clients.guest()
        game: Game = await start_game(a, b, "hadron", {"size": 3})
        rng = random.Random(4)
        while not game.state.is_over:
            await game.play(rng=rng)
        final = game.state
    async with serve() as live:  # a new server on the same database: from storage
        conn = await live.clients.spectator()
        reply = await call(conn, p.GetPosition, game_id=game.game_id)
        assert as_fields(reply) == expected_position(final, game.game_id)
        assert isinstance(reply, p.Position) and reply.legal_moves == ()
        first = await call(conn, p.GetPosition, game_id=game.game_id, ply=1)
        assert as_fields(first) == expected_position(
            engine.replay("hadron", {"size": 3}, final.moves[:1]), game.game_id)
        over = await call(conn, p.CheckMove, game_id=game.game_id, ply=final.ply, move="a1")
        assert isinstance(over, p.MoveCheck) and over.reason == "the game is over"
