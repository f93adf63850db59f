"""What the engine tells clients that know no rules (a browser page): short legal-move lists,
the cells a move touches, the notation's move forms, and board geometry fit for drawing.

Each check is parametrised over the registry's configurations (tests/engine/helpers.py) and
runs along seeded playouts, so a game added to the registry is covered without edits here.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

import engine

from .helpers import CONFIGS, config_id, is_big, playout, texts


def form_patterns(game: engine.Game, names: list[str]) -> dict[str, re.Pattern[str]]:
    """A regex per move form of ``game.describe()["moves"]``, built from the forms alone."""
    cell = "(?:" + "|".join(sorted(names, key=len, reverse=True)) + ")"
    out = {}
    for form in game.describe()["moves"]:
        kind = form["kind"]
        if kind == "place":
            out[kind] = re.compile(cell)
        elif kind == "jump":
            out[kind] = re.compile(f"{cell}{re.escape(form['join'])}{cell}")
        elif kind == "drop":
            drop = "[" + "".join(form["pieces"]) + "]" + cell
            more = f"(?:{re.escape(form['join'])}{drop}){{0,{form['max'] - 1}}}"
            out[kind] = re.compile(drop + more)
        elif kind == "pass":
            out[kind] = re.compile(re.escape(form["text"]))
        else:
            raise AssertionError(f"unknown move form {form}")
    return out


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_every_legal_move_fits_a_documented_form(config: tuple[str, dict[str, Any]]) -> None:
    key, options = config
    game = engine.get_game(key)
    names = [c.name for c in game.board(options).cells]
    patterns = form_patterns(game, names)
    seen: set[str] = set()
    for ply, (state, move) in enumerate(playout(key, options, seed=3)):
        if is_big(key, options) and ply % 8:
            continue
        legal = texts(state.legal_moves())
        sample = legal if len(legal) < 500 else legal[:: len(legal) // 250]
        for text in sample:
            fitting = [kind for kind, pattern in patterns.items() if pattern.fullmatch(text)]
            assert len(fitting) == 1, f"{text!r} fits {fitting} of {list(patterns)}"
            seen.add(fitting[0])
        if move is None:
            break
    # every form is used by some legal move (a game with a pass form can pass, and so on)
    assert seen == set(patterns)


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_legal_moves_upto_lists_them_exactly_when_few(config: tuple[str, dict[str, Any]]) -> None:
    key, options = config
    for ply, (state, _move) in enumerate(playout(key, options, seed=5)):
        if is_big(key, options) and ply % 10:
            continue
        legal = texts(state.legal_moves())
        count = len(legal)
        for limit in (count, count + 7):
            listed = state.legal_moves_upto(limit)
            assert listed is not None and texts(listed) == legal
        if count:
            assert state.legal_moves_upto(count - 1) is None
        if state.is_over:
            assert state.legal_moves_upto(0) == []
            break


def test_legal_moves_upto_stops_early_on_a_big_board(monkeypatch: pytest.MonkeyPatch) -> None:
    """Early in a 13x13 Xodd game there are ~50,000 turns: asking for 1,000 makes a few
    hundred more than that (the pairs of one first cell at a time), not all of them."""
    import engine.xodd

    made = 0
    real_move = engine.xodd.Move

    def counting_move(*args: Any) -> engine.Move:
        nonlocal made
        made += 1
        return real_move(*args)

    state = engine.new_game("xodd", size=13).play("Bg7")
    monkeypatch.setattr(engine.xodd, "Move", counting_move)
    assert state.legal_moves_upto(1000) is None
    assert 1000 < made < 2000, made
    made = 0
    assert len(state.legal_moves()) > 50_000 and made > 50_000


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_cells_of_a_move_are_the_cells_it_changes(config: tuple[str, dict[str, Any]]) -> None:
    key, options = config
    for ply, (state, move) in enumerate(playout(key, options, seed=9)):
        if move is None or ply > 60:
            break
        after = state.play(move)
        changed = {state.board.name(i) for i, (a, b) in enumerate(zip(state.cells, after.cells,
                                                                      strict=True)) if a != b}
        assert set(state.cells_of(move)) == changed, move
        assert len(state.cells_of(move)) == len(changed)
        assert after.cells.count(0) == len(after.cells) - sum(1 for c in after.cells if c)


def test_cells_of_reads_moves_that_are_not_legal_here() -> None:
    state = engine.new_game("hexifact", board="hex4")
    assert state.cells_of("c3-c5") == ["c3", "c5"]  # no stone on c3: illegal, still readable
    assert engine.new_game("xodd", size=5).cells_of("We5,Ba1") == ["a1", "e5"]
    with pytest.raises(engine.IllegalMove):
        state.cells_of("z99")


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_geometry_draws_neighbours_one_unit_apart(config: tuple[str, dict[str, Any]]) -> None:
    """With y scaled by y_scale, every neighbour is at distance 1 (a regular grid), every
    non-neighbour farther, and a cell's outline reaches halfway to each neighbour."""
    key, options = config
    geometry = engine.get_game(key).board(options).describe()
    cells, scale = geometry["cells"], geometry["y_scale"]
    points = [(c["x"], c["y"] * scale) for c in cells]
    outline = [(x, y * scale) for x, y in geometry["outline"]]
    for i, (x, y) in enumerate(points):
        near = set(geometry["neighbours"][i])
        for j, (u, v) in enumerate(points):
            if j == i:
                continue
            distance = math.hypot(u - x, v - y)
            if j in near:
                assert distance == pytest.approx(1.0)
                # the midpoint between the two centres lies on this cell's outline
                mid = ((u - x) / 2, (v - y) / 2)
                assert any(_on_segment(mid, outline[k], outline[k - 1])
                           for k in range(len(outline))), (cells[i]["name"], cells[j]["name"])
            else:
                assert distance > 1.0 + 1e-9
    assert [c["name"] for c in cells] == [c.name for c in engine.get_game(key).board(options)
                                          .cells]


def _on_segment(p: tuple[float, float], a: tuple[float, float], b: tuple[float, float]) -> bool:
    cross = (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])
    inside = min(a[0], b[0]) - 1e-9 <= p[0] <= max(a[0], b[0]) + 1e-9 and \
        min(a[1], b[1]) - 1e-9 <= p[1] <= max(a[1], b[1]) + 1e-9
    return abs(cross) < 1e-9 and inside
