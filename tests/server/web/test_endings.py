"""How a game ends, in real Chromium: why and by how much (the engine's words, live and in
the replay), a pass that would end the game confirmed with its consequence, the only legal
move highlighted, and a rematch with a house bot."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

from .conftest import REPO, Tabs, WebServer
from .pages import Page, Table, fill_offer, game_id_of, login_as_guest, start_by_seek, wait_ply

STATUS = ".move-input .input-status"


def result_of(page: Page) -> str:
    page.wait_for_selector(".game-page[data-status=over]")
    return page.text_content(".game-notice .result strong") or ""


def name_at(table: Table, seat: int) -> str:
    return (table.players[seat].text_content(f'.player[data-seat="{seat}"] .name') or "").strip()


def test_a_pass_that_ends_hexifact_is_confirmed_and_the_result_says_by_how_much(
        tabs: Tabs, web_server: WebServer, shoot: Callable[..., Path]) -> None:
    a, b = tabs.open(), tabs.open()
    table = start_by_seek(a, b, "hexifact", {})
    for move in ("c3", "d3", "e3", "pass"):
        table.play(move)
    black = table.mover  # Black's only legal move is to pass, and it ends the game
    black.wait_for_selector(".move-input button.pass.only-move.ends-game")
    ending = "both passed: Black 1 x 1 = 1, White 0 (one group); the higher score wins"
    status = black.text_content(STATUS) or ""
    assert status == ("Your only legal move is to pass. Your opponent passed: passing now ends "
                      f"the game, and you win ({ending}).")
    assert "marked with a dot" not in status and "ringed" not in status
    white = table.players[1]
    assert "only-move" not in (white.get_attribute(".move-input button.pass", "class") or "")
    shoot(black, "pass-ends-the-game")
    black.click(".move-input button.pass")
    assert black.text_content(".move-input button.pass.armed") == "Confirm pass: you win"
    black.click(".move-input button.pass.armed")
    table.state = table.state.play("pass")
    table.check()
    said = f"Black ({name_at(table, 0)}) wins: {ending}"
    assert [result_of(page) for page in table.pages] == [said, said]
    shoot(black, "result-by-how-much")
    replay = tabs.open(f"/game/{table.game_id}#0")  # the replay says the same
    wait_ply(replay, 0)
    assert result_of(replay) == said


def test_a_pass_that_loses_says_so_before_it_is_made(tabs: Tabs, web_server: WebServer) -> None:
    a, b = tabs.open(), tabs.open()
    table = start_by_seek(a, b, "xodd", {"size": 3})
    table.play("Bb2")
    table.play("pass")
    black = table.mover
    black.wait_for_selector(".move-input button.pass.ends-game")
    ending = "both passed: Black 1 group, White 0; fewer groups wins"
    black.wait_for_function(f"document.querySelector('{STATUS}').textContent.includes('passed')")
    assert (black.text_content(STATUS) or "").endswith(
        f"Your opponent passed: passing now ends the game, and you lose ({ending}).")
    assert "only-move" not in (black.get_attribute(".move-input button.pass", "class") or "")
    black.click(".move-input button.pass")
    assert black.text_content(".move-input button.pass.armed") == "Confirm pass: you lose"
    black.click(".move-input button.pass.armed")
    table.state = table.state.play("pass")
    table.check()
    said = f"White ({name_at(table, 1)}) wins: {ending}"
    assert [result_of(page) for page in table.pages] == [said, said]


def test_a_house_bot_accepts_a_rematch(tabs: Tabs, web_server: WebServer) -> None:
    page = tabs.open()
    login_as_guest(page)
    bot = page.locator('li[data-user="random-bot"] button')
    bot.wait_for(timeout=60_000)  # the server starts its house bot with itself
    fill_offer(page, "hadron", {"size": 4}, "fischer", minutes=3, increment=2)
    bot.click()
    page.wait_for_selector(".board .cell")
    first = game_id_of(page)
    page.click("button.resign")
    page.click("button.resign.armed")
    assert " resigned: " in result_of(page)
    page.click("button.rematch")
    page.wait_for_url(lambda url: not url.endswith(first))
    page.wait_for_selector(".board .cell")
    assert game_id_of(page) != first
    assert "declined" not in (page.text_content(".game-notice") or "")


def test_a_declined_rematch_says_why(tabs: Tabs, web_server: WebServer) -> None:
    """A bot run without --rematch declines, and the page shows its reason."""
    name = f"norematch{uuid.uuid4().hex[:6]}"
    made = subprocess.run([sys.executable, "-m", "server", "admin", "create-bot", name,
                           "--db", web_server.db_url], capture_output=True, text=True,
                          check=True, timeout=60)
    token = re.search(r"token \d+: (\S+)", made.stdout)
    assert token, made.stdout
    bot = subprocess.Popen(
        [sys.executable, "-m", "clients.cli", "bot", "--bot", "random", "--server",
         web_server.ws_url, "--accept-from", "any", "--log-level", "warning"],
        env={**os.environ, "TESSERA_BOT_TOKEN": token[1]}, cwd=REPO)
    try:
        page = tabs.open()
        login_as_guest(page)
        challenge = page.locator(f'li[data-user="{name}"] button')
        challenge.wait_for(timeout=60_000)
        fill_offer(page, "hadron", {"size": 4}, "fischer", minutes=3, increment=2)
        challenge.click()
        page.wait_for_selector(".board .cell")
        page.click("button.resign")
        page.click("button.resign.armed")
        result_of(page)
        page.click("button.rematch")
        note = ".result-actions .muted"
        page.wait_for_selector(note)
        assert page.text_content(note) == (" The rematch was declined: this bot does not play "
                                           "rematches (it runs without --rematch)")
    finally:
        bot.send_signal(signal.SIGTERM)
        try:
            bot.wait(20)
        except subprocess.TimeoutExpired:
            bot.kill()
