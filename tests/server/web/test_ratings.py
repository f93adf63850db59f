"""Ratings in real Chromium: a rated game from the lobby with the rating changes shown at
its end, a rematch from the game page (colours swapped), ratings beside names in the lobby,
a profile with its rating history drawn in SVG, and a leaderboard."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import protocol as p
from clients.connection import Connection

from .conftest import Tabs, WebServer, run
from .pages import fill_offer, game_id_of, seat_of, wait_ply

Page = Any


def register(page: Page, name: str) -> None:
    page.click("button.login-open")
    page.fill("dialog.login input[name=username]", name)
    page.fill("dialog.login input[name=password]", "correct horse battery")
    page.click("dialog.login button:text-is('Register')")
    page.wait_for_selector(f".account .me:text-is('{name}')")


def log_in(page: Page, name: str) -> None:
    page.click("button.login-open")
    page.fill("dialog.login input[name=username]", name)
    page.fill("dialog.login input[name=password]", "correct horse battery")
    page.click("dialog.login button[type=submit]")
    page.wait_for_selector(f".account .me:text-is('{name}')")


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:6]}"


def test_a_rated_game_its_changes_and_a_rematch(tabs: Tabs, web_server: WebServer,
                                                shoot: Callable[..., Path]) -> None:
    a, b = tabs.open(), tabs.open()
    names = unique("ra"), unique("rb")
    register(a, names[0])
    register(b, names[1])
    fill_offer(a, "hadron", {"size": 5}, "fischer", minutes=5, increment=3)
    a.check("form.new-game input[name=rated]")
    a.click("form.new-game button[type=submit]")
    row = b.locator("table.seeks tr[data-seek]", has=b.locator(f'td.who:text-is("{names[0]}")'))
    assert "rated" in (row.text_content() or "")
    row.locator("button").click()
    for page in (a, b):
        page.wait_for_selector(".board .cell")
        wait_ply(page, 0)
    first_game = game_id_of(a)
    loser = a
    loser.click("button.resign")
    loser.click("button.resign.armed")
    for page in (a, b):
        page.wait_for_selector(".game-notice .rating-changes li >> nth=1")
        changes = page.eval_on_selector_all(".rating-changes li .change",
                                            "els => els.map(e => e.textContent)")
        assert all(text.startswith("1500 → ") for text in changes), changes
    shoot(a, "rated-game-over")
    seats = {names[0]: seat_of(a), names[1]: seat_of(b)}
    # a rematch: offered on one page, accepted on the other; both go to the new game
    b.click("button.rematch")
    a.wait_for_selector("button.accept-rematch")
    assert names[1] in (a.text_content(".rematch-status") or "")
    a.click("button.accept-rematch")
    for page in (a, b):
        page.wait_for_url(lambda url: not url.endswith(first_game))
        page.wait_for_selector(".board .cell")
    assert game_id_of(a) == game_id_of(b) != first_game
    assert seat_of(a) == 1 - seats[names[0]] and seat_of(b) == 1 - seats[names[1]]
    # the new game shows the ratings the first one left, provisional: with ?
    name_row = a.text_content(f'.player[data-seat="{seat_of(b)}"] .name') or ""
    assert name_row.startswith(names[1] + " 1") and name_row.endswith("?"), name_row


def test_ratings_beside_names_in_the_lobby_and_a_profile_chart(
        tabs: Tabs, web_server: WebServer, shoot: Callable[..., Path]) -> None:
    name, other = unique("pa"), unique("pb")
    played = run(_rated_games(web_server, name, other, 3))
    lobby = tabs.open("/")
    lobby.wait_for_selector("table.seeks")
    # a seek of the rated player's (on a page of theirs) shows their Hadron rating beside
    # their name in the lobby, and the online list shows it too
    theirs = tabs.open("/")
    log_in(theirs, name)
    fill_offer(theirs, "hadron", {"size": 5}, "fischer", minutes=7, increment=7)
    theirs.click("form.new-game button[type=submit]")
    row = lobby.locator("table.seeks tr[data-seek] td.who", has_text=name)
    row.wait_for()
    text = row.text_content() or ""
    online = lobby.locator(f'ul.players li[data-user="{name}"]')
    online.wait_for()
    assert "Hadron 1" in (online.text_content() or "")
    theirs.context.close()  # the seek goes with its page, before other tests seek
    assert text.startswith(name + " ") and text.split()[-1].rstrip("?").isdigit(), text
    # the profile: the pool's line and its history drawn, one point a game
    profile = tabs.open(f"/profile/{name}")
    profile.wait_for_selector("svg.rating-chart")
    assert profile.get_attribute("svg.rating-chart", "data-points") == str(played)
    assert profile.locator("svg.rating-chart circle.point").count() == played
    assert profile.locator("svg.rating-chart polyline.rating-line").count() == 1
    line = profile.text_content('table.pools tr[data-game="hadron"]') or ""
    assert f"{played}" in line
    assert profile.locator("ul.game-links li").count() == played
    shoot(profile, "profile")


def test_the_leaderboard_lists_established_ratings(tabs: Tabs, web_server: WebServer,
                                                   shoot: Callable[..., Path]) -> None:
    people = [unique("la"), unique("lb"), unique("lc")]
    bot = unique("lbot")
    for name in people:
        run(_register(web_server, name))
    with sqlite3.connect(web_server.db_url.split("///", 1)[1]) as db:
        db.execute("INSERT INTO users (name, name_key, kind, created_at) VALUES (?, ?, 'bot', ?)",
                   (bot, bot.casefold(), "2026-12-01 00:00:00.000000"))
        ids = {name: db.execute("SELECT id FROM users WHERE name = ?", (name,)).fetchone()[0]
               for name in [*people, bot]}
        now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        for name, rating, deviation in [(people[0], 2901.0, 60.0), (people[1], 2903.0, 200.0),
                                        (people[2], 2902.0, 70.0), (bot, 2904.0, 50.0)]:
            db.execute("INSERT INTO ratings (user_id, pool, rating, deviation, volatility, "
                       "rated_at, games, wins, losses, draws) VALUES (?, 'yodd', ?, ?, 0.06, ?, "
                       "20, 12, 8, 0)", (ids[name], rating, deviation, now))
    page = tabs.open("/")
    page.click("nav.top-nav a")
    page.wait_for_selector(".leaderboard")
    page.click(".pools-nav a:text-is('Yodd')")
    page.wait_for_selector("table.standings")
    top = page.eval_on_selector_all("table.standings tbody tr",
                                    "els => els.slice(0, 3).map(e => e.dataset.user)")
    assert top == [bot, people[2], people[0]]  # people[1] is provisional: not listed
    shoot(page, "leaderboard")
    page.check(".leaderboard input[name=humans]")
    page.wait_for_selector(f'table.standings tbody tr:first-child[data-user="{people[2]}"]')
    page.click(f"table.standings a:text-is('{people[2]}')")
    page.wait_for_selector(".profile table.pools")
    assert "2902" in (page.text_content('table.pools tr[data-game="yodd"]') or "")


# -- protocol helpers (a client of the test's own) -----------------------------------------------
async def _register(server: WebServer, name: str) -> Connection:
    conn = await Connection.open(server.ws_url, client="web-test")
    await conn.call(p.Register, username=name, password="correct horse battery")
    return conn


async def _rated_games(server: WebServer, name: str, other: str, count: int) -> int:
    a, b = await _register(server, name), await _register(server, other)
    try:
        for index in range(count):
            created = await a.call(p.Challenge, to=other, game="hadron", options={"size": 5},
                                   clock=p.Fischer(base_ms=300_000, increment_ms=0), color=0,
                                   rated=True)
            await b.call(p.AcceptChallenge, challenge_id=created.challenge_id)
            started = await a.wait_for(p.GameStarted)
            await (a if index % 2 else b).call(p.Resign, game_id=started.game_id)
            await a.wait_for(p.GameOver, game_id=started.game_id)
    finally:
        await a.close()
        await b.close()
    return count


