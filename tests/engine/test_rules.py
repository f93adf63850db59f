"""Hand-built positions for every rule of /work/shared/rules.md.

Most tests run twice, against the engine and against the reference implementation
(tests/engine/reference.py), so the oracle of the differential test is itself checked
against these hand-written cases. Positions are reached by playing legal moves; only the
Hadron figures' "legal for either player" needs engine.from_text, to put Blue on move.
Diagrams show rows top to bottom; hex rows are drawn offset (a cell sits at x = q - r/2).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

import engine

from . import reference


class Impl(NamedTuple):
    name: str
    new_game: Callable[..., Any]
    illegal: type[Exception]


IMPLS = [
    Impl("engine", engine.new_game, engine.IllegalMove),
    Impl("reference", reference.new_game, reference.RefIllegal),
]


@pytest.fixture(params=IMPLS, ids=lambda impl: impl.name)
def impl(request: pytest.FixtureRequest) -> Impl:
    return request.param  # type: ignore[no-any-return]


def play(impl: Impl, game: str, moves: str, **options: Any) -> Any:
    """The state after the space-separated `moves`."""
    state = impl.new_game(game, **options)
    for move in moves.split():
        state = state.play(move)
    return state


def legal(state: Any) -> set[str]:
    return {str(m) for m in state.legal_moves()}


def assert_illegal(impl: Impl, state: Any, *moves: str) -> None:
    for move in moves:
        with pytest.raises(impl.illegal):
            state.play(move)
        assert move not in legal(state)


def cell_names(game: str, **options: Any) -> list[str]:
    board = reference.new_game(game, **options).board
    return [reference.cell_name(c) for c in board.cells]


# --------------------------------------------------------------------------- boards


@pytest.mark.parametrize(
    ("game", "options", "cells"),
    [
        ("xodd", {"size": 2}, 4),
        ("xodd", {}, 81),
        ("yodd", {"size": 2}, 7),
        ("yodd", {}, 91),
        ("hadron", {}, 25),
        ("hexifact", {"board": "hex3-4"}, 27),
        ("hexifact", {"board": "hex4"}, 37),
        ("hexifact", {"board": "hex4-5"}, 48),
        ("hexifact", {"board": "hex5"}, 61),
        ("hexifact", {"board": "hex5-6"}, 75),
    ],
)
def test_board_geometry_matches_the_rules(game: str, options: dict[str, Any], cells: int) -> None:
    board = engine.get_game(game).board(options)
    ref = reference.new_game(game, **options).board
    assert len(board.cells) == cells == len(ref.cells)
    assert board.kind == ("square" if game in ("xodd", "hadron") else "hex")
    assert [c.name for c in board.cells] == cell_names(game, **options)
    assert [(c.col, c.row) for c in board.cells] == list(ref.cells)
    for cell in board.cells:
        assert cell.index == board.cells.index(cell)
        expected_x = cell.col - cell.row / 2 if board.kind == "hex" else cell.col
        assert (cell.x, cell.y) == (expected_x, cell.row)
        around = {board.cells[i].name for i in board.neighbours[cell.index]}
        ref_around = {reference.cell_name(c) for c in ref.neighbours((cell.col, cell.row))}
        assert around == ref_around, cell.name


def test_limping_row_lengths() -> None:
    board = engine.get_game("hexifact").board({"board": "hex3-4"})
    lengths = [sum(1 for c in board.cells if c.row == r) for r in range(6)]
    assert lengths == [4, 5, 6, 5, 4, 3]
    assert board.cells[0].name == "a1"


# --------------------------------------------------------------------------- options


def test_defaults() -> None:
    assert dict(engine.new_game("xodd").options) == {"size": 9}
    assert dict(engine.new_game("yodd").options) == {"size": 6}
    assert dict(engine.new_game("hadron").options) == {"size": 5}
    assert dict(engine.new_game("hexifact").options) == {
        "board": "hex3-4",
        "jumps": "after-placing",
    }
    assert len(engine.new_game("xodd").legal_moves()) == 2 * 81
    assert len(engine.new_game("yodd").legal_moves()) == 2 * 91
    assert len(engine.new_game("hadron").legal_moves()) == 25
    assert len(engine.new_game("hexifact").legal_moves()) == 27 + 1


def test_registry() -> None:
    assert set(engine.GAMES) == {"xodd", "yodd", "hadron", "hexifact"}
    for key, game in engine.GAMES.items():
        assert game.key == key
        assert engine.get_game(key) is game
        assert len(game.players) == 2
        described = game.describe()
        assert described["key"] == key
        assert json.loads(json.dumps(described)) == described
        assert [o["name"] for o in described["options"]] == list(game.normalize_options({}))
    assert engine.get_game("hadron").players == ("Red", "Blue")
    assert engine.get_game("xodd").players == ("Black", "White")


def test_unknown_game_names_the_known_ones() -> None:
    for call in (lambda: engine.new_game("chess"), lambda: engine.get_game("chess")):
        with pytest.raises(ValueError) as info:
            call()
        for key in ("xodd", "yodd", "hadron", "hexifact"):
            assert key in str(info.value)


@pytest.mark.parametrize(
    ("game", "low", "high"), [("xodd", 2, 26), ("yodd", 2, 13), ("hadron", 3, 26)]
)
def test_size_range(game: str, low: int, high: int) -> None:
    for size in (low, high):
        assert engine.new_game(game, size=size).options["size"] == size
    for size in (low - 1, high + 1, 0, -3):
        with pytest.raises(ValueError) as info:
            engine.new_game(game, size=size)
        assert str(low) in str(info.value) and str(high) in str(info.value)
    with pytest.raises(ValueError, match="size"):
        engine.new_game(game, board="hex4")


def test_hexifact_options_name_what_is_allowed() -> None:
    with pytest.raises(ValueError) as info:
        engine.new_game("hexifact", board="hex6")
    for board in ("hex3-4", "hex4", "hex4-5", "hex5", "hex5-6"):
        assert board in str(info.value)
    with pytest.raises(ValueError) as info:
        engine.new_game("hexifact", jumps="always")
    assert "after-placing" in str(info.value) and "once-per-stone" in str(info.value)
    with pytest.raises(ValueError, match="board"):
        engine.new_game("hexifact", size=5)
    with pytest.raises(ValueError):
        engine.get_game("hexifact").normalize_options({"board": "hex4", "colour": "red"})
    assert engine.get_game("hexifact").normalize_options({"board": "hex4"}) == {
        "board": "hex4",
        "jumps": "after-placing",
    }


# --------------------------------------------------------------------------- bad moves


# Space-separated, each checked one ply into the game, besides "", " " and "B c3".
MALFORMED = {
    "xodd": "B c3 Xc3 Bz1 Ba0 Ba10 Bc3, ,Bc3 Bc3,Bc3 Ba1,Bb1,Bc1 Bc3;Wd4 pass,pass Bc3-c4 "
    "Bc3Wd4 B33 Bc3,Wd4,",
    "yodd": "Ba3,Ba3 Ba5 Be1 Bi9 W bb",
    "hadron": "pass Ba1 a0 f1 a6 a1,b1 a1-a2 1a aa1",
    "hexifact": "e1 a4 a7 g3 c3- -c3 c3-c3 c3-c4-c5 Bc3 c3,d3 passs",
}


@pytest.mark.parametrize("game", sorted(MALFORMED))
def test_malformed_moves_raise_illegal_move_and_change_nothing(game: str) -> None:
    options = {"size": 3} if game == "yodd" else {"size": 5} if game != "hexifact" else {}
    state = engine.new_game(game, **options)
    state = state.play(str(sorted(str(m) for m in state.legal_moves())[0]))
    before = (state.to_text(), state.ply, state.moves, legal(state))
    for text in ["", " ", "B c3", *MALFORMED[game].split()]:
        with pytest.raises(engine.IllegalMove) as info:
            state.play(text)
        assert isinstance(info.value, ValueError)
        assert str(info.value), f"{text!r}: the error should say why"
        with pytest.raises(engine.IllegalMove):
            state.parse_move(text)
        assert (state.to_text(), state.ply, state.moves, legal(state)) == before


def test_occupied_and_rule_breaking_moves_raise_with_a_reason() -> None:
    state = engine.replay("xodd", {"size": 5}, ["Bc3"])
    for text in ("Wc3", "Bc3,Wa1", "Wa1"):  # occupied, occupied, would make the count even
        with pytest.raises(engine.IllegalMove) as info:
            state.play(text)
        assert str(info.value)
    assert state.moves == ("Bc3",)
    with pytest.raises(engine.IllegalMove):
        engine.replay("xodd", {"size": 5}, ["Bc3", "Bc3"])
    with pytest.raises((TypeError, ValueError)):
        engine.new_game("xodd").play(None)  # type: ignore[arg-type]


def test_moves_after_the_end_are_illegal(impl: Impl) -> None:
    state = play(impl, "xodd", "Bb2 pass pass", size=3)
    assert state.is_over and not legal(state)
    assert_illegal(impl, state, "pass", "Ba1", "Ba1,Bc3")


# --------------------------------------------------------------------------- Xodd, Yodd


def test_first_turn_is_exactly_one_stone_of_either_colour(impl: Impl) -> None:
    state = impl.new_game("xodd", size=3)
    names = cell_names("xodd", size=3)
    assert legal(state) == {f"{c}{n}" for c in "BW" for n in names}
    assert_illegal(impl, state, "pass", "Ba1,Bc3", "Ba1,Wc3", "Wa1,Wb1")
    assert play(impl, "xodd", "Wb2", size=3).to_move == 1


def test_pass_is_legal_after_the_first_turn(impl: Impl) -> None:
    state = play(impl, "xodd", "Bc3", size=5)
    assert "pass" in legal(state)
    state = state.play("pass")
    assert not state.is_over
    assert "pass" in legal(state)


def test_parity_of_single_drops(impl: Impl) -> None:
    # 1 group: an isolated drop makes 2 (illegal); extending a group keeps 1 (legal),
    # whatever the colour and whoever drops it.
    state = play(impl, "xodd", "Bc3", size=5)
    assert {"Bc4", "Bb3", "Bc2", "Bd3"} <= legal(state)
    assert_illegal(impl, state, "Wc4", "Ba1", "Wa1", "Be5")
    assert play(impl, "xodd", "Bc3 Bc4 Bc5", size=5).to_move == 1


def test_parity_counts_only_at_the_end_of_the_turn(impl: Impl) -> None:
    state = play(impl, "xodd", "Bc3", size=5)
    # two isolated drops: 1 + 2 = 3 groups; the count was even after the first of them
    assert {"Wa1,We5", "Ba1,We5", "Ba1,Ba3"} <= legal(state)
    # two connected drops form one group: 2 groups
    assert_illegal(impl, state, "Wa1,Wa2", "Ba1,Bb1")
    # a merging drop (-1) made legal by an isolated second drop (+1)
    state = play(impl, "xodd", "Bc3 Wa1,Wa3", size=5)
    assert_illegal(impl, state, "Wa2")
    assert "Wa2,Be5" in legal(state)
    after = state.play("Wa2,Be5")
    assert after.moves[-1] == "Wa2,Be5"
    # the second drop joins the group the first one just made (5 groups -> 3)
    #  . W B
    #  W . W
    #  . . B
    state = play(impl, "xodd", "Bc1 Wc2,Bc3 Wa2,Wb3", size=3)
    assert {"Wb2", "Wb2,Wa3", "Wa1,Wb2"} <= legal(state)
    assert_illegal(impl, state, "Ba1,Wb2")  # the isolated black a1 makes it 4


def test_merging_three_groups_keeps_parity_and_four_flips_it(impl: Impl) -> None:
    #  . . . . .      a stone at c3 touches the three black groups b3, d3, c4:
    #  . . . . .      1 - 3 = -2 keeps the count odd
    #  . . B . .
    #  . B . B .
    #  . . . . .
    state = play(impl, "xodd", "Bb3 Bd3,Bc4", size=5)
    assert "Bc3" in legal(state)
    assert_illegal(impl, state, "Wc3", "Be1")
    assert play(impl, "xodd", "Bb3 Bd3,Bc4 Bc3", size=5).to_move == 1
    # with c2 black too, Bc3 joins four groups: 5 - 3 = 2, so it needs a second drop
    state = play(impl, "xodd", "Bb3 Bd3,Bc4 Bc2,Wa5", size=5)
    assert_illegal(impl, state, "Bc3")
    assert "We1,Bc3" in legal(state)


def test_two_drop_turns_are_written_in_cell_order(impl: Impl) -> None:
    state = play(impl, "xodd", "Bc3", size=5)
    for given, canonical in [
        ("Bb1,Wa1", "Wa1,Bb1"),
        ("Wa1,Bb1", "Wa1,Bb1"),
        ("Ba2,Wb1", "Wb1,Ba2"),  # row first, then column
        ("we5,BA1", "Ba1,We5"),
    ]:
        assert state.play(given).moves[-1] == canonical
    for move in legal(state):
        if "," in move:
            first, second = (reference.cell_order(cell(m[1:])) for m in move.split(","))
            assert first < second, move


def cell(name: str) -> tuple[int, int]:
    return (ord(name[0]) - ord("a"), int(name[1:]) - 1)


def test_either_player_drops_either_colour(impl: Impl) -> None:
    state = play(impl, "xodd", "Wc3", size=5)
    assert state.to_move == 1
    assert {"Wc4", "Ba1,Bb3", "Wa1,Ba5"} <= legal(state)
    assert_illegal(impl, state, "Bc4")
    assert play(impl, "xodd", "Wc3 Wc4", size=5).ply == 2


def test_yodd_uses_six_hex_neighbours(impl: Impl) -> None:
    # b2 = (1,1) touches c3 = (2,2) (up-right) and a1 = (0,0) (down-left) but not c1 = (2,0)
    # or a3 = (0,2): on the square Xodd board none of these four is a neighbour.
    state = play(impl, "yodd", "Bb2", size=3)
    assert {"Bc3", "Ba1", "Ba2", "Bc2", "Bb3", "Bb1"} <= legal(state)
    assert_illegal(impl, state, "Bc1", "Bd4")
    state = play(impl, "xodd", "Bb2", size=3)
    assert_illegal(impl, state, "Bc3", "Ba1", "Bc1", "Ba3")


def test_two_passes_end_the_game_and_fewer_groups_win(impl: Impl) -> None:
    # Black 1 group, White 0: White has fewer
    state = play(impl, "xodd", "Bb2 pass", size=3)
    assert not state.is_over and state.winner is None
    state = state.play("pass")
    assert state.is_over and state.winner == 1 and state.to_move == 1 and state.ply == 3
    # the same with a white stone: Black wins
    assert play(impl, "yodd", "Wb2 pass pass", size=3).winner == 0
    # Black 2 groups, White 1
    assert play(impl, "xodd", "Bb3 Bd3,Wa1 pass pass", size=5).winner == 1
    # Black 1 group, White 2
    state = play(impl, "xodd", "Bb3 Wd3,Wa1 pass pass", size=5)
    assert state.is_over and state.winner == 0


def test_passes_that_do_not_follow_each_other_do_not_end_the_game(impl: Impl) -> None:
    state = play(impl, "xodd", "Bb2 pass Bb1 pass", size=3)
    assert not state.is_over and state.winner is None
    assert play(impl, "xodd", "Bb2 pass Bb1 pass pass", size=3).is_over


def test_a_full_board_forces_passes(impl: Impl) -> None:
    state = play(impl, "xodd", "Ba1 Bb1,Ba2 Bb2", size=2)
    assert legal(state) == {"pass"}
    state = state.play("pass")
    assert legal(state) == {"pass"}
    state = state.play("pass")
    assert state.is_over and state.winner == 1  # Black 1 group, White none


# --------------------------------------------------------------------------- Hadron

# Rule sheet figure 1 (rules.md): the board after `moves`, Red to move, and its legal cells.
HADRON_FIGURES = {
    "1a": ("", "a1 b1 c1 a2 b2 c2 a3 b3 c3"),
    "1b": ("a2 b3", "a3 b2 c2 b1 c1"),  # .B. / R.. / ...
    "1c": ("a2 c2", "b3 b2 b1"),  # ... / R.B / ...
    "1d": ("a2 c2 b3 b1", "c3 b2 a1"),  # .R. / R.B / .B.
    "1e": ("a2 b3 c2 b1", "a3 c3 b2 a1 c1"),  # .B. / R.R / .B.
}


@pytest.mark.parametrize("figure", sorted(HADRON_FIGURES))
def test_hadron_figure_1(impl: Impl, figure: str) -> None:
    moves, expected = HADRON_FIGURES[figure]
    state = play(impl, "hadron", moves, size=3)
    assert state.to_move == 0
    assert legal(state) == set(expected.split())


@pytest.mark.parametrize("figure", sorted(HADRON_FIGURES))
def test_hadron_figure_1_is_the_same_for_blue(figure: str) -> None:
    moves, expected = HADRON_FIGURES[figure]
    red_to_move = engine.replay("hadron", {"size": 3}, moves.split())
    text = red_to_move.to_text().replace(f"ply={red_to_move.ply}", f"ply={red_to_move.ply + 1}")
    blue_to_move = engine.from_text(text)
    assert blue_to_move.to_move == 1
    assert legal(blue_to_move) == set(expected.split())


def test_hadron_friendly_and_enemy_neighbours_must_be_equal(impl: Impl) -> None:
    # Red b2, d2 around c2: 2 friendly / 0 enemy for Red, 0 / 2 for Blue
    state = play(impl, "hadron", "b2 e5 d2 a5", size=5)
    assert_illegal(impl, state, "c2")
    state = play(impl, "hadron", "b2 e5 d2 a5 e1", size=5)
    assert_illegal(impl, state, "c2")
    # Blue c1 below c2: 2 / 1 for Red, 1 / 2 for Blue
    state = play(impl, "hadron", "b2 e5 d2 a5 e1 c1", size=5)
    assert_illegal(impl, state, "c2")
    state = state.play("a3")
    assert_illegal(impl, state, "c2")
    # Blue c3 above: 2 / 2 for both
    state = play(impl, "hadron", "b2 e5 d2 a5 e1 c1 a3 c3", size=5)
    assert "c2" in legal(state)
    assert "c2" in legal(state.play("e3"))
    # one friend alone, one enemy alone: illegal; occupied: illegal
    state = play(impl, "hadron", "c3", size=5)
    assert_illegal(impl, state, "c4", "b3", "c3")
    assert "a1" in legal(state)


def test_hadron_has_no_pass(impl: Impl) -> None:
    state = impl.new_game("hadron")
    assert "pass" not in legal(state)
    assert_illegal(impl, state, "pass")


@pytest.mark.parametrize(
    ("moves", "winner"),
    [
        ("a1 b3 c1", 0),  # R.. / ... / R.R with Blue b3: Blue has no placement
        ("a1 a3 a2 c1 b1 c3", 1),  # B.B / R.. / RRB: Red has no placement
    ],
)
def test_hadron_a_player_without_a_placement_loses(impl: Impl, moves: str, winner: int) -> None:
    before = play(impl, "hadron", " ".join(moves.split()[:-1]), size=3)
    assert not before.is_over and before.winner is None
    state = play(impl, "hadron", moves, size=3)
    assert state.is_over and state.winner == winner
    assert state.to_move == 1 - winner
    assert not legal(state)


# --------------------------------------------------------------------------- Hexifact
#
# hex3-4 (limping 3) cells, rows top to bottom:
#         d6 e6 f6
#       c5 d5 e5 f5
#     b4 c4 d4 e4 f4
#   a3 b3 c3 d3 e3 f3
#     a2 b2 c2 d2 e2
#       a1 b1 c1 d1


def hexifact(impl: Impl, moves: str, jumps: str = "after-placing", board: str = "hex3-4") -> Any:
    return play(impl, "hexifact", moves, board=board, jumps=jumps)


def test_hexifact_first_placement_anywhere(impl: Impl) -> None:
    for board in ("hex3-4", "hex5"):
        state = hexifact(impl, "", board=board)
        assert legal(state) == {*cell_names("hexifact", board=board), "pass"}


def test_hexifact_placement_needs_an_enemy_and_no_friendly_neighbour(impl: Impl) -> None:
    # White answers c3 next to it
    assert legal(hexifact(impl, "c3")) == {"b3", "d3", "c4", "d4", "b2", "c2", "pass"}
    #     . . . .           Black's placements: next to White's c3, not next to c2
    #   . . W . . .         (and Black may jump c2-c4)
    #    . . B . .
    #     . . . .
    state = hexifact(impl, "c2 c3")
    assert legal(state) == {"b3", "c4", "d4", "pass", "c2-c4"}
    #     . . . .           White's placements: next to c2 or b3, not next to c3
    #   . B W . . .
    #    . . B . .
    #     . . . .
    state = hexifact(impl, "c2 c3 b3")
    assert {m for m in legal(state) if "-" not in m} == {"a2", "a3", "b1", "b4", "c1", "d2", "pass"}
    assert_illegal(impl, state, "b2", "d3", "e3", "f6", "c2", "a1")


def test_hexifact_black_passing_first_shuts_white_out(impl: Impl) -> None:
    state = hexifact(impl, "pass")
    assert legal(state) == {"pass"}
    assert_illegal(impl, state, "c3")
    state = state.play("pass")
    assert state.is_over and state.winner == 1  # 0 against 0: the final passer wins


def test_hexifact_jump_over_one_stone(impl: Impl) -> None:
    state = hexifact(impl, "c3 d3")
    assert "c3-e3" in legal(state)
    state = state.play("c3-e3")
    assert "d3-f3" in legal(state)  # White placed d3 and has not jumped since
    assert_illegal(impl, state, "d3-e3", "d3-f4")


def test_hexifact_jump_over_several_stones(impl: Impl) -> None:
    #     . . . .          White b1 jumps up-right over c2 and d3 to e4
    #   . . W B . .
    #    . . B . .
    #     . W . .
    state = hexifact(impl, "c2 c3 b3 b1 b3-d3")
    assert "b1-e4" in legal(state)
    assert_illegal(impl, state, "b1-d3", "b1-f5", "b1-c2")
    state = state.play("b1-e4")
    assert state.moves[-1] == "b1-e4"


def test_hexifact_jumps_cannot_cross_empty_or_friendly_cells(impl: Impl) -> None:
    #     . . . .
    #   W B W . . .        Black may jump b3-d3 (over c3) and c2-c4 (over c3)
    #    . . B . .         but not further along those lines
    #     . W . .
    state = hexifact(impl, "c2 c3 b3 b1 pass a3")
    assert {"b3-d3", "c2-c4"} <= legal(state)
    assert_illegal(impl, state, "b3-e3", "b3-f3", "c2-c5", "c2-a2", "c2-c3")
    #     . . . .
    #    . . B . .          White a3 may not jump over b3 onto its own c3 or past it
    #   W B W . . .
    state = state.play("d4")
    assert_illegal(impl, state, "a3-c3", "a3-d3", "a3-e3")
    assert {"c3-c1", "c3-e5"} <= legal(state)


def test_hexifact_a_jump_may_not_leave_a_stone_with_four_friendly_neighbours(
    impl: Impl,
) -> None:
    #         . . W          Black b3 over c4 to d5 would give e5 four black neighbours
    #       . . B B          (d5, f5, e6, d4); the landing stone itself would have three.
    #     . W B . .
    #   W B . . . .
    #     . . . W .
    #       . . . .
    state = hexifact(impl, "f5 f4 e3 f4-f6 e6 e4 d4 d2 e3-e5 e4-c4 b3 a3")
    assert_illegal(impl, state, "b3-d5")
    assert "d4-b4" in legal(state)  # Black may jump: it is only this landing that is refused
    #         . . .          White c2 over c3 to c4 would land with four white neighbours
    #       W W B .          (b3, d4, c5, d5)
    #     . . W B .
    #   B W B . . .
    #     . . W . .
    #       . . . .
    state = hexifact(impl, "a2 b3 a2-c4 d4 a3 c5 e5 b3-d5 e5-c3 b3 e5 c2 c4-e4")
    assert_illegal(impl, state, "c2-c4")
    assert "d4-b2" in legal(state)


def test_hexifact_after_placing_jumps(impl: Impl) -> None:
    # place, pass, jump: legal
    state = hexifact(impl, "c2 c3 b3 b1 pass a3")
    assert {"b3-d3", "c2-c4"} <= legal(state)
    # jump, (opponent jumps), pass, (opponent places), jump: not legal, though the
    # jumps are there on the board: c2-c4, c2-e2, d3-b3, d3-f5
    state = hexifact(impl, "c2 c3 b3 b1 b3-d3 b1-e4 pass d2")
    assert not {m for m in legal(state) if "-" in m}
    assert_illegal(impl, state, "c2-c4", "c2-e2", "d3-b3", "d3-f5")
    # right after the jump, too
    assert_illegal(impl, hexifact(impl, "c2 c3 b3 b1 b3-d3 pass"), "c2-c4", "d3-b3")
    # a placement allows one jump again
    state = hexifact(impl, "c2 c3 b3 b1 b3-d3 b1-e4 pass d2 f4 f3")
    assert {"c2-c4", "d3-b3"} <= legal(state)
    assert_illegal(impl, state.play("d3-b3").play("pass"), "c2-c4")


def test_hexifact_once_per_stone_jumps(impl: Impl) -> None:
    once = "once-per-stone"
    # d3 has jumped, c2 has not
    state = hexifact(impl, "c2 c3 b3 b1 b3-d3 b1-e4 pass d2", jumps=once)
    assert {m for m in legal(state) if "-" in m} == {"c2-c4", "c2-e2"}
    assert_illegal(impl, state, "d3-b3", "d3-f5")
    # ... and right after d3's jump
    state = hexifact(impl, "c2 c3 b3 b1 b3-d3 pass", jumps=once)
    assert {m for m in legal(state) if "-" in m} == {"c2-c4"}
    # the stone that jumped is still spent when it lands elsewhere, the other is not
    state = hexifact(impl, "c2 c3 b3 b1 b3-d3 b1-e4 pass d2 c2-c4 pass", jumps=once)
    assert not {m for m in legal(state) if "-" in m}
    # a placement frees every stone of the placer again
    state = hexifact(impl, "c2 c3 b3 b1 b3-d3 b1-e4 pass d2 f4 f3", jumps=once)
    assert {"c2-c4", "d3-b3"} <= legal(state)
    after = state.play("d3-b3").play("pass")
    assert "c2-c4" in legal(after)


def test_hexifact_score_end_and_tie_break(impl: Impl) -> None:
    # One black group against one white group: 0 against 0, the final passer wins.
    assert hexifact(impl, "c3 d3 pass pass").winner == 1
    assert hexifact(impl, "c3 pass pass").winner == 0
    # Black c3, e3: two groups of one, 1x1 = 1 against 0
    assert hexifact(impl, "c3 d3 e3 pass pass").winner == 0
    # White jumps d3-b3 and passes last with 0 against Black's 1: White loses.
    state = hexifact(impl, "c3 d3 e4 d3-b3 pass")
    assert not state.is_over
    state = state.play("pass")
    assert state.is_over and state.winner == 0 and state.to_move == 0
    # 1 against 1: the final passer wins, whoever it is
    assert hexifact(impl, "c3 d3 e4 b3 pass pass").winner == 1
    assert hexifact(impl, "c3 d3 e4 b3 a3 pass pass").winner == 0  # Black's 1x1 of three


def test_hexifact_passes_must_follow_each_other(impl: Impl) -> None:
    state = hexifact(impl, "c3 d3 pass c4 pass")
    assert not state.is_over
    assert "pass" in legal(state)
    state = hexifact(impl, "c3 d3 pass c4 pass pass")
    assert state.is_over and not legal(state)


def test_hexifact_position_text_refuses_a_stone_with_four_friends() -> None:
    """No play reaches such a position, so position text may not describe one either."""
    import engine as eng

    start = eng.new_game("hexifact").to_text()
    crowded = start.replace("board=.../..../...../....../...../....",
                            "board=.../..../.BBB./..BB../...../....")
    assert crowded != start
    with pytest.raises(ValueError, match="more than 3 friendly"):
        eng.from_text(crowded)


# --------------------------------------------------------------------------- endings


@pytest.mark.parametrize(
    ("game", "moves", "options", "how", "scores", "text"),
    [
        ("xodd", "Bb3 Bd3,Wa1 pass pass", {"size": 5}, engine.PASSES, (2, 1),
         "both passed: Black 2 groups, White 1; fewer groups wins"),
        ("yodd", "Wb2 pass pass", {"size": 3}, engine.PASSES, (0, 1),
         "both passed: Black 0 groups, White 1; fewer groups wins"),
        ("hadron", "a1 b3 c1", {"size": 3}, engine.NO_MOVE, None,
         "Blue has no legal placement"),
        ("hexifact", "c3 d3 e3 pass pass", {}, engine.PASSES, (1, 0),
         "both passed: Black 1 x 1 = 1, White 0 (one group); the higher score wins"),
        ("hexifact", "c3 d3 e4 b3 pass pass", {}, engine.PASSES, (1, 1),
         "both passed: Black 1 x 1 = 1, White 1 x 1 = 1; the tie goes to White, "
         "who passed last"),
        ("hexifact", "pass pass", {}, engine.PASSES, (0, 0),
         "both passed: Black 0 (no stones), White 0 (no stones); the tie goes to White, "
         "who passed last"),
    ],
)
def test_the_engine_says_how_a_game_ended(game: str, moves: str, options: dict[str, Any],
                                          how: str, scores: Any, text: str) -> None:
    state = play(IMPLS[0], game, moves, **options)
    ending = state.ending
    assert ending == engine.Ending(state.winner, how, scores, text)
    before = play(IMPLS[0], game, " ".join(moves.split()[:-1]), **options)
    assert before.ending is None
    assert before.ending_if(moves.split()[-1]) == ending  # what a client warns of


def test_ending_if_is_none_for_a_move_that_does_not_end_the_game_or_is_illegal() -> None:
    state = play(IMPLS[0], "xodd", "Bb2", size=3)
    assert state.ending_if("pass") is None
    assert state.ending_if("Bb2") is None  # occupied
    assert state.play("pass").ending_if("pass") is not None
