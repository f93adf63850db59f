"""Property tests (hypothesis) for engine invariants, notation and position text.

Derandomized with modest example counts, so CI runs the same examples every time and fast.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine

from . import reference
from .helpers import SMALL_CONFIGS, game_key, has_reference, texts

ENGINE_SETTINGS = settings(
    derandomize=True,
    max_examples=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

@st.composite
def positions(draw: st.DrawFn, configs: list[tuple[str, dict[str, Any]]] = SMALL_CONFIGS) -> Any:
    """A state reached by a drawn sequence of legal moves (shrinks towards short games)."""
    game, options = draw(st.sampled_from(configs))
    state = engine.new_game(game, **options)
    for _ in range(draw(st.integers(0, 40))):
        legal = texts(state.legal_moves())
        if not legal:
            break
        state = state.play(draw(st.sampled_from(legal)))
    return state


def ref_of(state: Any) -> reference.RefState:
    return reference.replay(game_key(state), dict(state.options), state.moves)


@ENGINE_SETTINGS
@given(positions([c for c in SMALL_CONFIGS if has_reference(c[0])]))
def test_positions_agree_with_reference(state: Any) -> None:
    ref = ref_of(state)
    assert set(texts(state.legal_moves())) == set(ref.legal_moves())
    assert (state.to_move, state.ply, state.is_over, state.winner) == (
        ref.to_move,
        ref.ply,
        ref.is_over,
        ref.winner,
    )


@ENGINE_SETTINGS
@given(positions())
def test_text_and_replay_round_trip(state: Any) -> None:
    text = state.to_text()
    assert "\n" not in text
    back = engine.from_text(text)
    assert back.to_text() == text
    assert texts(back.legal_moves()) == texts(state.legal_moves())
    assert engine.replay(game_key(state), dict(state.options), state.moves).to_text() == text
    for move in texts(state.legal_moves())[:20]:
        assert back.play(move).to_text() == state.play(move).to_text()


@ENGINE_SETTINGS
@given(positions(), st.randoms(use_true_random=False))
def test_any_casing_of_a_legal_move_parses_to_it(state: Any, rnd: random.Random) -> None:
    for move in texts(state.legal_moves())[:50]:
        mixed = "".join(ch.upper() if rnd.random() < 0.5 else ch.lower() for ch in move)
        assert str(state.parse_move(mixed)) == move


@ENGINE_SETTINGS
@given(positions(), st.text(alphabet="abcdefgBWbwp,-s 0123456789AZ\t", max_size=12))
def test_parse_move_accepts_only_legal_moves(state: Any, text: str) -> None:
    legal = set(texts(state.legal_moves()))
    before = state.to_text()
    try:
        move = state.parse_move(text)
    except engine.IllegalMove as error:
        assert str(error)
    else:
        assert str(move) in legal
    assert state.to_text() == before


@ENGINE_SETTINGS
@given(st.text(max_size=80))
def test_from_text_rejects_garbage_with_value_error(text: str) -> None:
    try:
        state = engine.from_text(text)
    except ValueError:
        return
    assert engine.from_text(state.to_text()).to_text() == state.to_text()


@ENGINE_SETTINGS
@given(positions(), st.integers(0, 10_000), st.sampled_from(".BWR/=,:x 9-"))
def test_from_text_survives_one_changed_character(state: Any, where: int, char: str) -> None:
    text = state.to_text()
    where %= len(text)
    mutated = text[:where] + char + text[where + 1 :]
    try:
        back = engine.from_text(mutated)
    except ValueError:
        return
    assert engine.from_text(back.to_text()).to_text() == back.to_text()
    assert back.to_move == back.ply % 2
    assert (not back.legal_moves()) == back.is_over


@ENGINE_SETTINGS
@given(positions([("xodd", {"size": 3}), ("xodd", {"size": 4}), ("yodd", {"size": 3})]))
def test_xodd_two_drops_in_either_order(state: Any) -> None:
    for move in texts(state.legal_moves()):
        if "," in move:
            first, second = move.split(",")
            assert str(state.parse_move(f"{second},{first}")) == move


@ENGINE_SETTINGS
@given(positions([("xodd", {"size": 4}), ("yodd", {"size": 3})]))
def test_xodd_single_drop_changes_the_count_by_one_minus_k(state: Any) -> None:
    """rules.md's useful fact: a drop touching k groups of its colour changes the (odd) count
    by 1 - k, so after ply 0 a one-stone turn is legal iff k is odd."""
    if state.ply == 0 or state.is_over:
        return
    ref = ref_of(state)
    legal = set(texts(state.legal_moves()))
    for cell in ref.board.cells:
        if cell in ref.stones:
            continue
        for colour in (0, 1):
            touching = [
                g
                for g in reference.groups(ref.board, ref.stones, colour)
                if set(ref.board.neighbours(cell)) & g
            ]
            drop = reference.drop_text(cell, colour)
            assert (drop in legal) == (len(touching) % 2 == 1), drop


@ENGINE_SETTINGS
@given(positions([("hadron", {"size": 3}), ("hadron", {"size": 4}), ("hadron", {"size": 5})]))
def test_hadron_placements_do_not_depend_on_who_moves(state: Any) -> None:
    """f == e is symmetric in the two colours, so both players have the same placements."""
    other = engine.from_text(state.to_text().replace(f"ply={state.ply}", f"ply={state.ply + 1}"))
    assert other.to_move != state.to_move
    assert texts(other.legal_moves()) == texts(state.legal_moves())


@ENGINE_SETTINGS
@given(positions(), st.integers(0, 2**32))
def test_random_move_and_playout_are_seeded(state: Any, seed: int) -> None:
    if state.is_over:
        return
    assert str(state.random_move(random.Random(seed))) == str(
        state.random_move(random.Random(seed))
    )
    assert str(state.random_move(random.Random(seed))) in set(texts(state.legal_moves()))
    one = state.playout(random.Random(seed))
    two = state.playout(random.Random(seed))
    assert one.to_text() == two.to_text()
    assert one.is_over and one.winner in (0, 1)
