"""The page as a whole: what its first load costs and where it comes from, text from other
people shown as text, a phone, and the computer as an opponent."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import engine

from .conftest import Tabs, WebServer
from .pages import (
    cells_marked,
    drawn,
    fill_offer,
    login_as_guest,
    seat_of,
    seats_text,
    start_by_seek,
    wait_ply,
)

FIRST_LOAD_BUDGET = 150_000  # bytes transferred, headers included
PAYLOAD = '<img src=x onerror="window.__xss=1">'
SHORT = "<img src=x>"  # short enough for the server to quote it back in its refusal


def test_the_first_load_is_small_and_from_this_server_only(browser: Any,
                                                          web_server: WebServer) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        sizes: dict[str, int] = {}
        urls: list[str] = []
        cdp.on("Network.requestWillBeSent", lambda e: urls.append(e["request"]["url"]))
        cdp.on("Network.loadingFinished",
               lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]))
        response = page.goto(web_server.url + "/")
        page.wait_for_selector("#net[data-state=open]")
        page.wait_for_selector(".lobby table.seeks")
        page.wait_for_load_state("networkidle")
        total = sum(sizes.values())
        print(f"\nfirst load of /: {total} bytes transferred in {len(sizes)} responses")
        assert total <= FIRST_LOAD_BUDGET
        assert urls and all(url.startswith(web_server.url + "/") or url.startswith("data:")
                            for url in urls), urls
        headers = response.headers
        assert headers["content-security-policy"].startswith("default-src 'self';")

        sizes.clear()  # a second visit: the page revalidated, its files from the cache
        page.reload()
        page.wait_for_selector("#net[data-state=open]")
        page.wait_for_load_state("networkidle")
        print(f"a second load: {sum(sizes.values())} bytes")
        assert sum(sizes.values()) < total / 10
    finally:
        context.close()


def test_chat_and_names_are_shown_as_text(tabs: Tabs, web_server: WebServer) -> None:
    a, b = tabs.open(), tabs.open()
    table = start_by_seek(a, b, "hadron", {"size": 3})
    a.fill(".chat-form input", PAYLOAD)
    a.click(".chat-form button")
    for page in table.players:
        page.wait_for_selector(".chat-lines li")
        assert page.locator(".chat-lines .said").last.text_content() == PAYLOAD
        assert page.locator(".chat-lines img").count() == 0

    # a user name holding it is refused by the server; the page shows the refusal as text
    c = tabs.open()
    c.click("button.login-open")
    c.fill("dialog input[name=username]", SHORT)
    c.fill("dialog input[name=password]", "correct horse")
    c.click('dialog button:text("Register")')
    c.wait_for_function("() => document.querySelector('dialog .form-status').textContent")
    status = c.text_content("dialog .form-status") or ""
    assert f"got str '{SHORT}'" in status and c.locator("dialog img").count() == 0

    # names as a server might send them (the protocol forbids them; the page must not care)
    c.click('dialog button:text("Cancel")')
    hostile = {"name": PAYLOAD, "kind": "human"}
    c.evaluate("u => window.tessera.onEvent({t: 'player_online', user: u})", hostile)
    c.evaluate("""u => window.tessera.onEvent({t: 'challenge_received', challenge_id: 9,
        from: u, game: 'hadron', options: {size: 5}, clock: {kind: 'unlimited'}, color: 0})""",
               hostile)
    names = c.eval_on_selector_all(".players li .who", "els => els.map(e => e.textContent)")
    assert PAYLOAD in names
    assert PAYLOAD in (c.text_content(".challenges .challenge") or "")
    for page in (a, b, c):
        assert page.locator("main img, .challenges img").count() == 0
        assert page.evaluate("window.__xss") is None


def test_a_phone_plays_a_move(tabs: Tabs, web_server: WebServer,
                              shoot: Callable[..., Path]) -> None:
    phone = tabs.open(viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True,
                      device_scale_factor=2)
    desktop = tabs.open()
    table = start_by_seek(phone, desktop, "hadron", {"size": 5})
    if seat_of(phone) == 1:
        table.play("c3")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 360  # no sideways scroll
    board = phone.locator(".board").bounding_box()
    assert board is not None and board["width"] <= 360
    cell = phone.locator('.board .cell[data-cell="a1"] .bg').bounding_box()
    assert cell is not None and min(cell["width"], cell["height"]) >= 40  # a fingertip
    shoot(phone, "phone", whole=True)
    move = sorted(cells_marked(phone, "legal"))[0]
    phone.tap(f'.board .cell[data-cell="{move}"]')
    table.state = table.state.play(move)
    table.check()


def test_play_the_computer_from_the_lobby(tabs: Tabs, web_server: WebServer,
                                         shoot: Callable[..., Path]) -> None:
    page = tabs.open()
    login_as_guest(page)
    bot = page.locator('.bots li[data-user="random-bot"] button')
    bot.wait_for(timeout=60_000)  # the server starts its house bot with itself
    fill_offer(page, "hadron", {"size": 4}, "fischer", minutes=3, increment=2)
    shoot(page, "lobby", whole=True)
    page.select_option("select[name=colour]", "0")
    bot.click()
    page.wait_for_selector(".board .cell")
    state = engine.new_game("hadron", size=4)
    rng = random.Random(4)
    assert seat_of(page) == 0
    while not state.is_over:
        if state.to_move == 0:
            wait_ply(page, state.ply)  # the bot has moved: nobody moves until we do
            assert drawn(page) == seats_text(state)
            move = rng.choice(sorted(cells_marked(page, "legal")))
            page.click(f'.board .cell[data-cell="{move}"]')
        else:  # the bot's move, as the page lists it
            item = f'.move-list li[data-ply="{state.ply + 1}"] .mv'
            move = page.locator(item).text_content() or ""
        state = state.play(move)
    wait_ply(page, state.ply)
    assert drawn(page) == seats_text(state)
    page.wait_for_selector(".game-page[data-status=over]")
    assert page.text_content(".player[data-seat='1'] .name") == "random-bot (bot)"
