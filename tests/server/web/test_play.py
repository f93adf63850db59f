"""Whole games played by clicking in real Chromium, one per game, every position checked
against the engine on every page (the players' and a spectator's)."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack

import engine
import protocol as p

from .conftest import Tabs, WebServer, ask
from .pages import (
    Table,
    cells_marked,
    click_move,
    drawn,
    pick,
    seats_text,
    start_by_seek,
    wait_ply,
)


def finish(table: Table, server: WebServer) -> p.Record:
    """The game is over on every page, with the engine's winner, and stored as played."""
    assert table.state.is_over
    colours = table.state.game.players
    for page in table.pages:
        page.wait_for_selector(".game-page[data-status=over]")
        result = page.text_content(".game-notice .result")
        assert result is not None and result.startswith(f"{colours[table.state.winner]} (")
    reply = ask(server, p.GetGame, game_id=table.game_id)
    assert isinstance(reply, p.GameRecord)
    record = reply.record
    assert [m.move for m in record.moves] == list(table.state.moves)
    assert table.state.ending is not None
    assert record.result == p.Result.of(table.state.ending)
    return record


def test_hadron_by_clicking_watched_by_a_spectator(tabs: Tabs, web_server: WebServer,
                                                   shoot: Callable[..., Path]) -> None:
    a, b = tabs.open(), tabs.open()
    table = start_by_seek(a, b, "hadron", {"size": 5}, "fischer", minutes=5, increment=3)
    spectator = tabs.open(f"/game/{table.game_id}")
    table.watchers.append(spectator)
    table.check()
    rng = random.Random(15)
    table.play_out(pick(["one"]), rng, limit=8)
    assert cells_marked(table.mover, "legal") == _texts(table.state)  # legal squares marked
    shoot(table.mover, "hadron")
    table.play_out(pick(["one"]), rng)
    finish(table, web_server)
    moves = spectator.eval_on_selector_all(".move-list .mv", "els => els.map(e => e.textContent)")
    assert moves == list(table.state.moves)


def test_xodd_with_double_drops_and_passes(tabs: Tabs, web_server: WebServer,
                                           shoot: Callable[..., Path]) -> None:
    a, b = tabs.open(), tabs.open()
    table = start_by_seek(a, b, "xodd", {"size": 5})
    rng = random.Random(5)
    table.play("Bc3")
    # an illegal pair: the page asks the server and shows the engine's reason, no play
    state = table.state
    mover = table.mover
    bad = next(m for m in ("Wa1,Wa2", "Ba1,Bb1", "Wa5,Wb5")
               if not _legal(state, m))
    for drop in bad.split(","):
        mover.click(f'.piece-choice[data-piece="{drop[0]}"]')
        mover.click(f'.board .cell[data-cell="{drop[1:]}"]')
    reason = _reason(state, bad)
    mover.wait_for_selector(f'.input-status:text-is("{reason}")')
    assert mover.is_disabled(".move-input button.confirm")
    mover.click(".move-input button.clear")
    pairs = 0
    while not table.state.is_over:
        move = pick(["pair"] if pairs < 4 else ["one"])(table.state, rng)
        pairs += "," in move
        if table.state.ply > 9:
            move = "pass" if "pass" in _texts(table.state) else move
        table.play(move)
        if table.state.ply == 6:
            shoot(table.mover, "xodd")
    assert pairs >= 3 and table.state.moves[-2:] == ("pass", "pass")
    finish(table, web_server)


def test_hexifact_with_a_jump_by_drag_and_by_clicks(tabs: Tabs, web_server: WebServer,
                                                    shoot: Callable[..., Path]) -> None:
    a, b = tabs.open(), tabs.open()
    table = start_by_seek(a, b, "hexifact", {"board": "hex3-4", "jumps": "after-placing"})
    rng = random.Random(7)
    jumps = 0
    while jumps < 2 and not table.state.is_over:
        move = pick(["jump", "one"])(table.state, rng)
        if "-" in move:
            starts = {m.split("-")[0] for m in _texts(table.state) if "-" in m}
            assert cells_marked(table.mover, "movable") == starts  # the jumpers are ringed
            if jumps == 0:
                shoot(table.mover, "hexifact")
            table.play(move, drag=jumps == 0)
            jumps += 1
        else:
            table.play(move)
    assert jumps == 2, "no jump came up"
    while not table.state.is_over:
        table.play("pass")
    finish(table, web_server)


def test_yodd_to_its_end(tabs: Tabs, web_server: WebServer,
                         shoot: Callable[..., Path]) -> None:
    a, b = tabs.open(), tabs.open()
    table = start_by_seek(a, b, "yodd", {"size": 3})
    rng = random.Random(11)
    while not table.state.is_over:
        move = pick(["pair", "one"])(table.state, rng)
        if table.state.ply >= 8 and "pass" in _texts(table.state):
            move = "pass"
        table.play(move)
        if table.state.ply == 5:
            shoot(table.mover, "yodd")
    finish(table, web_server)
    for page in table.pages:
        wait_ply(page, table.state.ply)
        assert drawn(page) == seats_text(table.state)


def _texts(state: engine.State) -> set[str]:
    return {str(m) for m in state.legal_moves()}


def _legal(state: engine.State, move: str) -> bool:
    try:
        state.parse_move(move)
    except engine.IllegalMove:
        return False
    return True


def _reason(state: engine.State, move: str) -> str:
    try:
        state.parse_move(move)
    except engine.IllegalMove as exc:
        return str(exc)
    raise AssertionError(f"{move} is legal")


def test_a_move_the_server_did_not_store_is_sent_again(tabs: Tabs,
                                                       web_server: WebServer) -> None:
    """SQLite's write lock held by another connection (for real) while a move is clicked:
    the server refuses it as not_stored, the page says so and sends it again by itself;
    it is played once the lock is gone (issue 23.19)."""
    a, b = tabs.open(), tabs.open()
    table = start_by_seek(a, b, "hadron", {"size": 5}, "fischer", minutes=5, increment=3)
    holder = sqlite3.connect(web_server.db_url.split("///", 1)[1], isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        click_move(table.mover, table.state, "c3")
        table.mover.locator(".input-status", has_text="could not store c3").wait_for(
            timeout=30_000)
        holder.execute("ROLLBACK")
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()
    table.state = table.state.play("c3")
    table.check()  # both pages show it, played once
    reply = ask(web_server, p.GetGame, game_id=table.game_id)
    assert [m.move for m in reply.record.moves] == ["c3"]


def test_a_move_that_arrives_while_the_page_is_built_waits_for_it(tabs: Tabs) -> None:
    """The opponent's page is reloaded and its board geometry request held back until the
    mover has played: the `moved` that arrives while the page is still being built is shown
    once it is (it used to reach half-built clocks: a script error, caught by ``tabs``)."""
    a, b = tabs.open(), tabs.open()
    table = start_by_seek(a, b, "hadron", {"size": 5}, "fischer", minutes=5, increment=3)
    mover, waiter = table.mover, table.players[1 - table.state.to_move]
    held: list[Callable[[], None]] = []

    def route(ws: Any) -> None:
        server = ws.connect_to_server()

        def to_server(message: str | bytes) -> None:
            if isinstance(message, bytes) and msgpack.unpackb(message).get("t") == "get_board":
                held.append(lambda: server.send(message))
            else:
                server.send(message)

        ws.on_message(to_server)

    waiter.route_web_socket("**/ws", route)
    waiter.reload()
    for _ in range(200):
        if held:
            break
        waiter.wait_for_timeout(50)
    assert held, "the reloaded page never asked for the board"
    click_move(mover, table.state, "c3")
    table.state = table.state.play("c3")
    wait_ply(mover, 1)
    held[0]()  # the board's geometry now: `moved` came first
    table.check()
