"""Driving the page as a person does (clicks, keys, taps) and reading what it draws.

What a board shows is read from its cells' data attributes (``data-cell``, ``data-state``:
``.``, ``0`` or ``1``), in the order of the board's geometry, which is the engine's cell
order: a test compares it with ``engine.State.cells`` without looking at pixels. The test
side knows the rules (the engine chooses its moves); the page does not.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import engine

Page = Any  # playwright.sync_api.Page, imported only where Playwright is installed


def seats_text(state: engine.State) -> str:
    """A state's cells as the page's data-state values: "." empty, "0"/"1" by seat."""
    return "".join(".01"[v] for v in state.cells)


def drawn(page: Page) -> str:
    """The cells the page's board shows, in the geometry's (the engine's) order."""
    return str(page.eval_on_selector_all(".board .cell",
                                         "els => els.map(e => e.dataset.state).join('')"))


def cells_marked(page: Page, mark: str) -> set[str]:
    """The names of the cells the board marks with class ``mark`` (legal, movable, last)."""
    return set(page.eval_on_selector_all(f".board .cell.{mark}",
                                         "els => els.map(e => e.dataset.cell)"))


def wait_ply(page: Page, ply: int) -> None:
    """Wait until the board shows the position after ``ply`` moves."""
    page.wait_for_selector(f'.board[data-ply="{ply}"]')


def login_as_guest(page: Page) -> str:
    page.click("button.guest")
    return str(page.text_content(".account .me"))


def fill_offer(page: Page, key: str, options: dict[str, Any], clock: str = "unlimited",
               **clock_fields: float) -> None:
    """Set the lobby's new-game form: game, options, clock kind and its numbers."""
    page.select_option("select[name=game]", key)
    for name, value in options.items():
        field_ = page.locator(f"[data-option={name}]")
        if field_.evaluate("e => e.tagName") == "SELECT":
            field_.select_option(str(value))
        else:
            field_.fill(str(value))
    page.select_option("select[name=clock]", clock)
    for name, value in clock_fields.items():
        page.fill(f".clock-fields [name={name}]", str(value))


def seat_of(page: Page) -> int:
    return int(page.get_attribute(".player.me", "data-seat"))


def game_id_of(page: Page) -> str:
    match = re.search(r"/game/([0-9A-Za-z_-]+)", page.url)
    assert match, page.url
    return match[1]


def click_move(page: Page, state: engine.State, move: str, *, drag: bool = False) -> None:
    """Make ``move`` on the page by clicking (or dragging) as a player would."""
    parsed = state.parse_move(move)
    names = [state.board.name(x) for x in parsed.cells]
    cell = lambda name: f'.board .cell[data-cell="{name}"]'  # noqa: E731
    if parsed.kind == "pass":
        page.click(".move-input button.pass")
        page.click(".move-input button.pass.armed")
    elif parsed.kind == "place":
        page.click(cell(names[0]))
    elif parsed.kind == "jump":
        if drag:
            page.drag_and_drop(cell(names[0]), cell(names[1]))
        else:
            page.click(cell(names[0]))
            page.wait_for_selector(cell(names[0]) + ".selected")
            page.click(cell(names[1]))
    elif parsed.kind == "drop":
        for i, name in enumerate(names):
            letter = "BW"[parsed.args[2 * i + 1] - 1]
            page.click(f'.piece-choice[data-piece="{letter}"]')
            page.click(cell(name))
        page.click(".move-input button.confirm:not([disabled])")
    else:
        raise AssertionError(f"no way to click {parsed.kind}")


@dataclass
class Table:
    """A game between two pages, watched by others, as the engine sees it."""

    players: tuple[Page, Page]  # by seat
    state: engine.State
    watchers: list[Page] = field(default_factory=list)

    @property
    def mover(self) -> Page:
        return self.players[self.state.to_move]

    @property
    def game_id(self) -> str:
        return game_id_of(self.players[0])

    @property
    def pages(self) -> list[Page]:
        return [*self.players, *self.watchers]

    def play(self, move: str, *, drag: bool = False) -> None:
        """The player to move makes ``move`` by clicking; every page then shows the
        engine's position."""
        click_move(self.mover, self.state, move, drag=drag)
        self.state = self.state.play(move)
        self.check()

    def check(self) -> None:
        for page in self.pages:
            wait_ply(page, self.state.ply)
            assert drawn(page) == seats_text(self.state), page.url

    def play_out(self, choose: Callable[[engine.State, random.Random], str],
                 rng: random.Random, *, limit: int = 400) -> None:
        while not self.state.is_over and limit:
            self.play(choose(self.state, rng))
            limit -= 1


def start_by_seek(owner: Page, taker: Page, key: str, options: dict[str, Any],
                  clock: str = "unlimited", **clock_fields: float) -> Table:
    """``owner`` opens a seek in the lobby, ``taker`` accepts it; both land on the game
    page (seats are drawn at random: the table is by seat)."""
    name = login_as_guest(owner)
    login_as_guest(taker)
    fill_offer(owner, key, options, clock, **clock_fields)
    owner.click("form.new-game button[type=submit]")
    row = taker.locator("table.seeks tr[data-seek]", has=taker.locator(f'td.who:text-is("{name}")'))
    row.locator("button").click()
    for page in (owner, taker):
        page.wait_for_selector(".board .cell")
        wait_ply(page, 0)
    by_seat = sorted((owner, taker), key=seat_of)
    return Table((by_seat[0], by_seat[1]), engine.get_game(key).new(**options))


def pick(kinds: Sequence[str]) -> Callable[[engine.State, random.Random], str]:
    """A move chooser preferring moves whose text marks them as one of ``kinds``
    (``pair`` for two drops, ``jump``), and passing only when nothing else is legal."""

    def kind(move: str) -> str:
        return "pass" if move == "pass" else "pair" if "," in move else "jump" if "-" in move \
            else "one"

    def choose(state: engine.State, rng: random.Random) -> str:
        moves = sorted(str(m) for m in state.legal_moves())
        for wanted in kinds:
            some = [m for m in moves if kind(m) == wanted]
            if some:
                return rng.choice(some)
        others = [m for m in moves if m != "pass"]
        return rng.choice(others) if others else "pass"

    return choose
