"""Replaying a stored game, downloading its records, and coming back to a game in progress
(a reload, a dropped connection) with the server's position and clocks."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import engine
import protocol as p
from clients.records import format_record, from_json, match_record_from_wire
from tests.server.support import Clients, start_game

from .conftest import Tabs, WebServer, ask, run
from .pages import cells_marked, drawn, pick, seats_text, start_by_seek, wait_ply


async def stored_game(server: WebServer, key: str, options: dict[str, Any], seed: int
                      ) -> tuple[p.Record, list[engine.State]]:
    """A game played to its end by two protocol clients: its record and every state."""
    clients = Clients(server.ws_url)
    try:
        a, b = await clients.guest(), await clients.guest()
        game = await start_game(a, b, key, options,
                                clock=p.Fischer(base_ms=300_000, increment_ms=2_000))
        states = [game.state]
        rng = random.Random(seed)
        while not game.state.is_over:
            await game.play(pick(["jump", "pair", "one"])(game.state, rng)
                            if game.ply < 30 else None, rng=rng)
            states.append(game.state)
        return await game.record(), states
    finally:
        await clients.close_all()


def test_replay_steps_through_a_stored_game(tabs: Tabs, web_server: WebServer) -> None:
    record, states = run(stored_game(web_server, "hexifact", {"board": "hex4"}, seed=2))
    moves = [m.move for m in record.moves]
    assert any("-" in m for m in moves), "the game has a jump"
    page = tabs.open(f"/game/{record.game_id}#0")
    page.wait_for_selector(".game-page[data-status=over]")
    wait_ply(page, 0)
    assert drawn(page) == seats_text(states[0])
    for ply in range(1, len(states)):
        if ply % 2:
            page.click('.nav button[title^="Next"]')
        else:
            page.keyboard.press("ArrowRight")
        wait_ply(page, ply)
        assert drawn(page) == seats_text(states[ply]), f"ply {ply}"
        assert cells_marked(page, "last") == set(states[ply - 1].cells_of(moves[ply - 1]))
        assert page.evaluate("location.hash") == f"#{ply}"
    page.keyboard.press("Home")
    wait_ply(page, 0)
    page.keyboard.press("End")
    wait_ply(page, len(moves))
    page.click('.move-list li[data-ply="5"] button')
    wait_ply(page, 5)
    assert drawn(page) == seats_text(states[5])
    page.keyboard.press("ArrowLeft")
    wait_ply(page, 4)
    page.reload()  # the fragment names the ply shown
    wait_ply(page, 4)
    assert drawn(page) == seats_text(states[4])
    page.click(".nav button.autoplay")
    wait_ply(page, 6)
    page.click(".nav button.autoplay")  # stop
    page.wait_for_selector('.nav button.autoplay:text("Autoplay")')  # stopped, as it says
    stopped_at = page.get_attribute(".board", "data-ply")
    assert stopped_at is not None and 6 <= int(stopped_at) <= len(moves), stopped_at
    page.wait_for_timeout(1200)  # more than one step of autoplay: no step was taken
    assert page.get_attribute(".board", "data-ply") == stopped_at


def test_downloads_are_the_records_clients_write(tabs: Tabs, web_server: WebServer,
                                                 tmp_path: Path) -> None:
    record, _ = run(stored_game(web_server, "xodd", {"size": 4}, seed=8))
    page = tabs.open(f"/game/{record.game_id}")
    page.wait_for_selector(".game-page[data-status=over]")
    expected = match_record_from_wire(record, engine.get_game("xodd").rules_version)
    with page.expect_download() as text_download:
        page.click('.downloads button:text("Download .txt")')
    assert text_download.value.suggested_filename == f"{record.game_id}.txt"
    text = Path(text_download.value.path()).read_text(encoding="utf-8")
    assert text == format_record(expected)  # byte for byte what the terminal tools write
    with page.expect_download() as json_download:
        page.click('.downloads button:text("Download .json")')
    assert from_json(Path(json_download.value.path()).read_bytes()) == expected


def test_reload_and_dropped_connection_resume_with_the_servers_clocks(
        tabs: Tabs, web_server: WebServer) -> None:
    a, b = tabs.open(), tabs.open()
    table = start_by_seek(a, b, "hadron", {"size": 5}, "fischer", minutes=5, increment=0)
    rng = random.Random(21)
    for _ in range(3):
        table.play(pick(["one"])(table.state, rng))
    waiting = table.players[0]  # seat 1 is to move: seat 0's clock stands still
    waiting.wait_for_timeout(700)
    waiting.reload()
    wait_ply(waiting, 3)
    assert drawn(waiting) == seats_text(table.state)
    watched = ask(web_server, p.Watch, game_id=table.game_id)
    assert isinstance(watched, p.GameState)
    snap = watched.game
    assert snap.status == "playing" and snap.to_move == 1 and snap.clocks_ms is not None
    clock = lambda seat: int(waiting.get_attribute(f'.clock[data-seat="{seat}"]', "data-ms"))  # noqa: E731
    assert clock(0) == snap.clocks_ms[0]  # the server's figure, to the millisecond
    assert abs(clock(1) - snap.clocks_ms[1]) < 1500  # running: counted down from it
    assert snap.clocks_ms[1] < 300_000 - 700  # and it ran while the page reloaded
    before = clock(1)
    # it ticks (the figure is written once a second): wait for a second to go by on it
    # (polled from here: the page's policy allows no script from a string)
    for _ in range(150):
        if before - clock(1) >= 1000:
            break
        waiting.wait_for_timeout(100)
    assert before - clock(1) >= 1000

    # the connection drops; the opponent moves meanwhile; the page comes back by itself
    waiting.evaluate("window.tessera.conn.reconnect()")
    table.play(pick(["one"])(table.state, rng))  # seat 1 plays: every page catches up
    waiting.wait_for_selector("#net[data-state=open]")
    table.play(pick(["one"])(table.state, rng))  # and the resumed page plays on

    # resigning asks first
    waiting.click(".game-actions button.resign")
    assert waiting.get_attribute(".game-page", "data-status") == "playing"
    waiting.click(".game-actions button.resign.armed")
    for page in table.players:
        page.wait_for_selector(".game-page[data-status=over]")
        assert "resigned" in (page.text_content(".game-notice .result") or "")


def test_a_player_who_left_can_be_claimed_against(tabs: Tabs, web_server: WebServer) -> None:
    a, b = tabs.open(), tabs.open()
    table = start_by_seek(a, b, "hadron", {"size": 3})
    table.play("b2")
    stayer, leaver = table.players
    abort = stayer.locator(".game-actions button.abort")  # still waiting: abort is offered
    assert abort.is_visible()
    leaver.context.close()  # the opponent is gone (the server was started with --grace 2)
    stayer.wait_for_selector(".game-notice .left")
    claim = stayer.locator(".game-actions button.claim")
    assert claim.is_disabled()  # not before the grace period is over
    stayer.wait_for_selector(".game-actions button.claim:not([disabled])", timeout=10_000)
    claim.click()
    stayer.click(".game-actions button.claim.armed")
    stayer.wait_for_selector(".game-page[data-status=over]")
    assert "left the game" in (stayer.text_content(".game-notice .result") or "")
