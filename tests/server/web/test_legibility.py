"""What a player reads and hears (issue 23, items 6 and 7): "Your games" in the lobby says
who, what, which clock and whose move; the marks on the board stand out (a contrast of 3:1
at least, WCAG's rule for marks that carry meaning); a move and a game's end are heard,
unless the switch says no, which the browser remembers; a replay shows the clocks as they
stood and the time each move took; a profile says which games its player won and lost, and
has no "drawn" column where no game can be drawn."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import protocol as p
from clients.connection import Connection

from .conftest import Tabs, WebServer, ask, run
from .pages import pick, start_by_seek, wait_ply

Page = Any
MARK_CONTRAST = 3.0

# the WCAG contrast of the marks a cell shows, each over what lies under it (the piece
# under a mark inside the piece, the board beyond it); the largest is the mark's
CONTRAST_JS = """([cell, kind]) => {
  const parse = (c) => { const v = c.match(/rgba?\\(([^)]+)\\)/)[1].split(/[\\s,\\/]+/)
                                   .filter(Boolean).map(Number);
                         return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
  const lum = (rgb) => { const f = (x) => { x /= 255;
      return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(rgb[0]) + 0.7152 * f(rgb[1]) + 0.0722 * f(rgb[2]); };
  const over = (top, alpha, under) => [0, 1, 2].map(i => top[i] * alpha + under[i] * (1 - alpha));
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((m, n) => n - m);
                            return (x + 0.05) / (y + 0.05); };
  const g = document.querySelector(`.board .cell[data-cell="${cell}"]`);
  const board = parse(getComputedStyle(g.querySelector('.bg')).fill);
  const piece = g.querySelector('.piece');
  const shown = getComputedStyle(piece).display !== 'none';
  const pieceR = shown ? piece.getBoundingClientRect().width / 2 : 0;
  const stone = shown ? parse(getComputedStyle(piece).fill) : board;
  let best = 0;
  for (const c of g.querySelectorAll('circle')) {
    const st = getComputedStyle(c);
    if (c === piece || st.display === 'none') continue;
    const paint = kind === 'stroke' ? st.stroke : st.fill;
    if (!paint || paint === 'none') continue;
    const col = parse(paint);
    const alpha = col[3] * Number(st.opacity)
      * Number(kind === 'stroke' ? st.strokeOpacity : st.fillOpacity);
    const r = c.getBoundingClientRect().width / 2;
    const under = r > pieceR ? board : stone;
    best = Math.max(best, ratio(over(col, alpha, under), under));
  }
  return best;
}"""


def contrast(page: Page, cell: str, kind: str) -> float:
    return float(page.evaluate(CONTRAST_JS, [cell, kind]))


def test_your_games_say_who_what_which_clock_and_whose_move(
        tabs: Tabs, web_server: WebServer, shoot: Callable[..., Path]) -> None:
    a, b = tabs.open(), tabs.open()
    table = start_by_seek(a, b, "hadron", {"size": 5}, "fischer", minutes=5, increment=3)
    table.play("c3")
    game_id = table.game_id
    lobby = table.players[0]  # Red, who moved: Blue's move now
    opponent = lobby.text_content(".player:not(.me) .name") or ""
    lobby.click("a.brand")
    line = lobby.locator(f'.my-games li[data-game="{game_id}"]')
    line.wait_for()
    text = line.text_content() or ""
    assert opponent in text and "Hadron" in text and "5m+3s" in text, text
    assert "Their move" in text and game_id not in text, text
    # the opponent moves: the line says so without a reload
    click = table.players[1]
    table.state = table.state.play("a1")
    click.click('.board .cell[data-cell="a1"]')
    lobby.wait_for_selector(f'.my-games li[data-game="{game_id}"] .turn:text-is("Your move")')
    shoot(lobby, "your-games", part=".lobby-side .card")
    lobby.click(f'.my-games li[data-game="{game_id}"] a')
    wait_ply(lobby, 2)


def test_legal_dots_and_the_ring_of_a_black_stone_that_can_jump_stand_out(
        tabs: Tabs, web_server: WebServer, shoot: Callable[..., Path]) -> None:
    a, b = tabs.open(), tabs.open()
    table = start_by_seek(a, b, "hexifact", {"board": "hex3-4", "jumps": "after-placing"})
    black = table.players[0]
    legal = sorted(str(m) for m in table.state.legal_moves() if str(m) != "pass")
    black.wait_for_selector(f'.board .cell.legal[data-cell="{legal[0]}"]')
    assert contrast(black, legal[0], "fill") >= MARK_CONTRAST  # a legal cell's dot
    rng = random.Random(0)
    while not any("-" in str(m) for m in table.state.legal_moves()) or table.state.to_move:
        table.play(pick(["one"])(table.state, rng))
    jumper = sorted(str(m) for m in table.state.legal_moves() if "-" in str(m))[0].split("-")[0]
    black.wait_for_selector(f'.board .cell.movable[data-cell="{jumper}"][data-state="0"]')
    assert contrast(black, jumper, "stroke") >= MARK_CONTRAST  # the ring of a black stone
    shoot(black, "marks", part=".board-box")


SOUNDS_JS = """() => {
  window.__tones = 0;
  const Real = window.AudioContext;
  window.AudioContext = class extends Real {
    createOscillator() {
      const osc = super.createOscillator();
      const start = osc.start.bind(osc);
      osc.start = (...args) => { window.__tones += 1; return start(...args); };
      return osc;
    }
  };
}"""


def tones(page: Page) -> int:
    return int(page.evaluate("window.__tones"))


def test_moves_and_the_end_are_heard_unless_switched_off_and_the_switch_is_kept(
        tabs: Tabs, web_server: WebServer) -> None:
    a, b = tabs.open(), tabs.open()
    for page in (a, b):  # count the tones each page starts
        page.context.add_init_script(f"({SOUNDS_JS})()")
        page.reload()
        page.wait_for_selector("#net[data-state=open]")
    table = start_by_seek(a, b, "hadron", {"size": 5})
    red, blue = table.players
    table.play("c3")
    assert tones(red) > 0 and tones(blue) > 0
    blue.click(".top .sound")
    assert blue.get_attribute(".top .sound", "aria-pressed") == "false"
    heard = tones(red), tones(blue)
    table.play("a1")
    assert tones(red) > heard[0] and tones(blue) == heard[1]
    blue.reload()  # the switch is remembered
    wait_ply(blue, 2)
    assert blue.get_attribute(".top .sound", "aria-pressed") == "false"
    heard = tones(red), tones(blue)
    red.click(".game-actions button.resign")
    red.click(".game-actions button.resign.armed")
    for page in (red, blue):
        page.wait_for_selector(".game-page[data-status=over]")
    assert tones(red) > heard[0] and tones(blue) == heard[1]


def test_a_replay_shows_the_clocks_as_they_stood_and_the_time_each_move_took(
        tabs: Tabs, web_server: WebServer, shoot: Callable[..., Path]) -> None:
    a, b = tabs.open(), tabs.open()
    table = start_by_seek(a, b, "hadron", {"size": 5}, "fischer", minutes=5, increment=3)
    for move in ("c3", "a1", "e5", "b2", "d4"):
        table.play(move)
    page = table.players[0]
    page.click(".game-actions button.resign")
    page.click(".game-actions button.resign.armed")
    page.wait_for_selector(".game-page[data-status=over]")
    viewer = tabs.open(f"/game/{table.game_id}")  # a replay, by someone else
    wait_ply(viewer, 5)
    reply = ask(web_server, p.GetGame, game_id=table.game_id)
    moves = reply.record.moves
    took = viewer.eval_on_selector_all(".move-list li .took", "els => els.map(e => +e.dataset.ms)")
    assert took == [m.ms_used for m in moves]
    for ply in range(len(moves)):
        if ply == 0:
            viewer.keyboard.press("Home")
        else:
            viewer.click(f'.move-list li[data-ply="{ply}"] button')
        wait_ply(viewer, ply)
        left = [300_000, 300_000]
        for m in moves[:ply]:
            if m.clock_ms is not None:
                left[m.by] = m.clock_ms
        shown = viewer.eval_on_selector_all(".clock", "els => els.map(e => [+e.dataset.seat, "
                                                      "+e.dataset.ms])")
        assert sorted(shown) == [[0, left[0]], [1, left[1]]], ply
        if ply == 3:
            shoot(viewer, "replay")


def test_a_profile_says_won_and_lost_and_has_no_drawn_column(tabs: Tabs,
                                                             web_server: WebServer) -> None:
    winner, loser = f"pw{random.randrange(10**6)}", f"pl{random.randrange(10**6)}"
    run(_one_rated_game(web_server, winner, loser))
    for name, outcome in ((winner, "won"), (loser, "lost")):
        page = tabs.open(f"/profile/{name}")
        page.wait_for_selector("table.pools")
        heads = page.eval_on_selector_all("table.pools th", "els => els.map(e => e.textContent)")
        assert not any("drawn" in head.lower() for head in heads), heads
        line = page.locator("ul.game-links li .outcome").first
        assert (line.text_content() or "").lower() == outcome


async def _one_rated_game(server: WebServer, winner: str, loser: str) -> None:
    a = await Connection.open(server.ws_url, client="web-test")
    b = await Connection.open(server.ws_url, client="web-test")
    try:
        await a.call(p.Register, username=winner, password="correct horse battery")
        await b.call(p.Register, username=loser, password="correct horse battery")
        created = await a.call(p.Challenge, to=loser, game="hadron", options={"size": 5},
                               clock=p.Fischer(base_ms=300_000, increment_ms=0), color=0,
                               rated=True)
        await b.call(p.AcceptChallenge, challenge_id=created.challenge_id)
        started = await a.wait_for(p.GameStarted)
        await b.call(p.Resign, game_id=started.game_id)
        await a.wait_for(p.GameOver, game_id=started.game_id)
    finally:
        await a.close()
        await b.close()

