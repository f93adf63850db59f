"""The game page's layout in real Chromium, measured (issue 23, items 4 and 5).

A phone (360 x 740, touch): every game at the options the lobby offers by default has
cells a fingertip wide (44 px, as Apple's and Google's guidelines ask), the page opens at
its top, and the move buttons and the result stay in view in a bar at the bottom. A laptop
(1366 x 768): the board and both players' rows fit the window's height, and the board does
not move when the game ends; the result is shown once, beside the board.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import engine

from .conftest import Tabs, WebServer
from .pages import Table, seat_of, start_by_seek, wait_ply

Page = Any
PHONE = {"viewport": {"width": 360, "height": 740}, "is_mobile": True, "has_touch": True,
         "device_scale_factor": 2}
LAPTOP = {"viewport": {"width": 1366, "height": 768}}
FINGERTIP = 44  # px: the smallest target a finger hits reliably
GAMES = sorted(engine.GAMES)  # every game, at its default options


def smallest_cell(page: Page) -> float:
    """The smallest width or height of a board cell as drawn, in CSS pixels."""
    return float(page.eval_on_selector_all(".board .cell .bg", """els => Math.min(...els.map(e => {
        const r = e.getBoundingClientRect(); return Math.min(r.width, r.height); }))"""))


def box(page: Page, selector: str) -> dict[str, float]:
    found = page.locator(selector).first.bounding_box()
    assert found is not None, f"{selector} is not shown"
    return dict(found)


def in_view(page: Page, selector: str) -> bool:
    """Whether every element matching ``selector`` that is shown lies inside the window."""
    return bool(page.eval_on_selector_all(selector, """els => els
        .filter(e => e.offsetParent !== null)
        .every(e => { const r = e.getBoundingClientRect();
                      return r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight
                             && r.right <= innerWidth; })"""))


def result_count(page: Page, text: str) -> int:
    """How many times ``text`` is shown in the page's main part."""
    return int(page.evaluate("t => document.querySelector('main').innerText.split(t).length - 1",
                             text))


def resign(page: Page) -> None:
    page.click(".game-actions button.resign")
    page.click(".game-actions button.resign.armed")


def first_legal_move(table: Table) -> str:
    """The first legal move of one cell (a placement, or a drop of one stone)."""
    return sorted(str(m) for m in table.state.legal_moves()
                  if str(m) != "pass" and "-" not in str(m) and "," not in str(m))[0]


@pytest.mark.parametrize("key", GAMES)
def test_a_phone_has_fingertip_cells_opens_at_the_top_and_keeps_its_buttons_in_view(
        key: str, tabs: Tabs, web_server: WebServer, shoot: Callable[..., Path]) -> None:
    phone, other = tabs.open(**PHONE), tabs.open()
    table = start_by_seek(other, phone, key, {})  # the lobby's default options
    assert phone.evaluate("scrollY") == 0
    assert smallest_cell(phone) >= FINGERTIP
    assert phone.evaluate("document.documentElement.scrollWidth") <= 360  # no sideways page
    if phone.is_visible(".game-head button.zoom"):  # a board larger than the screen
        phone.tap(".game-head button.zoom")  # the whole board at once
        assert box(phone, ".board")["width"] <= 360 and smallest_cell(phone) < FINGERTIP
        phone.tap(".game-head button.zoom")
        assert smallest_cell(phone) >= FINGERTIP
    # a few moves, then the game opened afresh (a reload, a link): it opens at its top
    for _ in range(3):
        table.play(first_legal_move(table))
    phone.reload()
    wait_ply(phone, table.state.ply)
    assert phone.evaluate("scrollY") == 0
    # the buttons to move, pass and resign are in view; a move comes without a jump
    assert in_view(phone, ".play-panel button")
    if seat_of(phone) != table.state.to_move:
        table.play(first_legal_move(table))
    assert phone.evaluate("scrollY") == 0
    if key == "xodd":
        shoot(phone, "phone-xodd", whole=True)
    # a move by taps: a cell (scrolled into view if it must be), and Play where a turn asks
    move = first_legal_move(table)
    if move[0].isupper():  # a drop: its colour first
        phone.tap(f'.piece-choice[data-piece="{move[0]}"]')
    phone.tap(f'.board .cell[data-cell="{move.lstrip("BW")}"]')
    if move[0].isupper():
        phone.tap(".move-input button.confirm:not([disabled])")
    table.state = table.state.play(move)
    table.check()
    resign(phone)
    phone.wait_for_selector(".game-page[data-status=over]")
    assert in_view(phone, ".game-notice .result")


@pytest.mark.parametrize("key", GAMES)
def test_a_laptop_fits_the_board_in_the_window_and_it_stays_still(
        key: str, tabs: Tabs, web_server: WebServer, shoot: Callable[..., Path]) -> None:
    a, b = tabs.open(**LAPTOP), tabs.open(**LAPTOP)
    table = start_by_seek(a, b, key, {})
    page = table.players[0]
    height = page.evaluate("innerHeight")
    clock = box(page, ".player.me .clock")
    assert clock["y"] + clock["height"] <= height - 16, "the own clock is at the window's edge"
    assert box(page, ".player.me")["y"] + box(page, ".player.me")["height"] <= height - 8
    board = box(page, ".board")
    assert board["height"] >= 0.55 * height  # sized to the window's height, not a stamp
    resign(page)
    page.wait_for_selector(".game-page[data-status=over]")
    assert box(page, ".board") == board, "the board moved when the game ended"
    result = page.text_content(".game-notice .result strong") or ""
    assert result and result_count(page, result) == 1
    side = box(page, ".side")
    notice = box(page, ".game-notice .result")
    assert notice["x"] >= side["x"], "the result is not in the side panel"
    empty = page.eval_on_selector_all(".game-page .card", """els => els
        .filter(e => e.offsetParent !== null && !e.innerText.trim()).length""")
    assert empty == 0, "an empty card is shown"
    if key == "hadron":
        shoot(page, "laptop-over", whole=True)
