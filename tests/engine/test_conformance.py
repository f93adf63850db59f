"""One conformance suite over every game and a spread of options (OpenSpiel's api_test style),
plus the differential test: the engine against the slow reference of tests/engine/reference.py.

Everything goes through the public interface of docs/ARCHITECTURE.md. The games and their
options come from the registry (tests.engine.helpers), so a new game is covered at once.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from typing import Any

import pytest

import engine

from . import reference
from .helpers import (
    CONFIGS,
    LARGEST_CONFIGS,
    SMALL_CONFIGS,
    candidate_moves,
    config_id,
    game_key,
    has_reference,
    is_big,
    pick,
    playout,
    texts,
)

PLAYOUTS = 3  # seeded games per configuration for the API invariants
MAX_PLIES = 3000  # far above any game on these boards: the rules bound every game's length


CELL = r"[a-z][1-9][0-9]*"
# Every game's notation (docs/RULES.md): "pass", or cells in lower case, each perhaps after a
# stone's upper-case letter, joined by "," (two drops) or "-" (a jump).
CANONICAL = re.compile(rf"pass|[A-Z]?({CELL})(?:[,-][A-Z]?({CELL}))?")


def check_move_texts(state: Any, legal: list[Any], rng: random.Random, sample: int) -> None:
    """Listed moves are distinct, canonical, round-trip through parse_move, parse in any case."""
    strings = [str(m) for m in legal]
    assert len(strings) == len(set(strings)), "a legal move is listed twice"
    cells = state.board.by_name
    for text in rng.sample(strings, min(sample, len(strings))):
        match = CANONICAL.fullmatch(text)
        assert match, f"not canonical: {text!r}"
        assert all(c in cells for c in match.groups() if c), f"{text!r}: a cell off the board"
        assert str(state.parse_move(text)) == text
        assert str(state.parse_move(text.upper())) == text
        assert str(state.parse_move(text.swapcase())) == text


def check_text_round_trip(state: Any) -> None:
    text = state.to_text()
    back = engine.from_text(text)
    assert back.to_text() == text
    assert texts(back.legal_moves()) == texts(state.legal_moves())
    assert (back.ply, back.to_move, back.is_over, back.winner) == (
        state.ply,
        state.to_move,
        state.is_over,
        state.winner,
    )


def check_ending(state: Any) -> None:
    """An ending exactly when the game is over, naming the engine's winner; two passes in
    a row end it by ``passes`` (with both scores), anything else by ``no_move``."""
    ending = state.ending
    if not state.is_over:
        assert ending is None
        return
    assert ending.winner == state.winner
    passed = state.moves[-2:] == ("pass", "pass")
    assert ending.how == (engine.PASSES if passed else engine.NO_MOVE)
    assert (ending.scores is not None) == passed
    assert ending.text and ending.text.isascii()


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_random_playouts_keep_the_api_invariants(config: tuple[str, dict[str, Any]]) -> None:
    game, options = config
    big = is_big(game, options)
    for seed in range(1 if big else PLAYOUTS):
        rng = random.Random(f"conformance-{seed}")
        state = engine.new_game(game, **options)
        assert (state.ply, state.to_move, state.is_over, state.winner) == (0, 0, False, None)
        while True:
            # the ~12,000-move lists of the big boards get the costly checks every 6th ply
            thorough = not big or state.ply % 6 == 0 or state.is_over
            assert state.ply < MAX_PLIES, "the playout does not terminate"
            assert state.to_move == state.ply % 2
            assert (state.winner is None) == (not state.is_over)
            check_ending(state)
            legal = state.legal_moves()
            assert (not legal) == state.is_over
            if thorough:
                check_move_texts(state, legal, rng, 60 if big else 10_000)
                check_text_round_trip(state)
                assert state.render().isascii()
                json.dumps(state.summary())
            if state.is_over:
                break
            before_text, before_legal = state.to_text(), texts(legal)
            move = pick(rng, before_legal)
            after = state.play(move)
            assert state.to_text() == before_text, "play() changed its input state"
            if thorough:
                assert texts(state.legal_moves()) == before_legal, "play() changed its input"
            assert after.ply == state.ply + 1
            assert after.moves == (*state.moves, move)
            state = after
        assert state.winner in (0, 1)
        replayed = engine.replay(game_key(state), dict(state.options), state.moves)
        assert replayed.to_text() == state.to_text()
        assert replayed.moves == state.moves
        assert engine.replay(game, options, state.moves).to_text() == state.to_text()


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_playing_a_move_object_equals_playing_its_text(config: tuple[str, dict[str, Any]]) -> None:
    game, options = config
    for state, move in playout(game, options, seed=7):
        if move is None or state.ply > (4 if is_big(game, options) else 12):
            break
        by_object = next(m for m in state.legal_moves() if str(m) == move)
        assert state.play(by_object).to_text() == state.play(move).to_text()
        assert state.play(move.upper()).to_text() == state.play(move).to_text()


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_random_move_and_playout(config: tuple[str, dict[str, Any]]) -> None:
    game, options = config
    rng = random.Random(11)
    state = engine.new_game(game, **options)
    for _ in range(8):
        if state.is_over:
            break
        move = state.random_move(rng)
        assert str(move) in set(texts(state.legal_moves()))
        state = state.play(move)
    before = state.to_text()
    for _ in range(3):
        final = state.playout(rng)
        assert final.is_over
        assert final.winner in (0, 1)
        assert final.legal_moves() == []
        assert final.to_move == final.ply % 2
    assert state.to_text() == before, "playout() changed its input state"


@pytest.mark.parametrize(
    ("game", "options", "moves"),
    [
        ("xodd", {"size": 3}, "Bb2"),
        ("xodd", {"size": 3}, "Bb2 Wa1,Wc3"),
        ("yodd", {"size": 2}, "Ba1"),
        ("hadron", {"size": 3}, "a2"),
        ("hexifact", {"jumps": "once-per-stone"}, "c2 c3 b3 b1 b3-d3 pass"),
    ],
)
def test_random_move_is_uniform(game: str, options: dict[str, Any], moves: str) -> None:
    """Seeded, so deterministic: 300 draws per legal move, each move drawn 200..400 times."""
    check_uniform(engine.replay(game, options, moves.split()))


def check_uniform(state: Any) -> None:
    legal = texts(state.legal_moves())
    rng = random.Random(2024)
    counts = Counter(str(state.random_move(rng)) for _ in range(300 * len(legal)))
    assert set(counts) == set(legal)
    assert min(counts.values()) >= 200 and max(counts.values()) <= 400, counts.most_common()


def move_shape(text: str) -> str:
    """A move's form with its cells left out: Bc3,Wd4 -> B@,W@; c3-c6 -> @-@."""
    return re.sub(CELL, "@", text)


@pytest.mark.parametrize("config", SMALL_CONFIGS, ids=config_id)
def test_random_move_is_uniform_in_every_game(config: tuple[str, dict[str, Any]]) -> None:
    """On a position of a seeded game with 2..30 legal moves of as many forms as there are."""
    game, options = config
    few = [state for state, _ in playout(game, options, seed=3)
           if 2 <= len(state.legal_moves()) <= 30]
    if not few:
        pytest.skip("no position with 2..30 legal moves in this game")
    check_uniform(max(few, key=lambda s: len({move_shape(str(m)) for m in s.legal_moves()})))


@pytest.mark.parametrize("config", LARGEST_CONFIGS, ids=config_id)
def test_the_largest_boards_play_to_the_end(config: tuple[str, dict[str, Any]]) -> None:
    """The other end of every option's range, with what does not list every move (whose
    number grows with the square of the board: about 900,000 turns on a 26x26 Xodd board)."""
    game, options = config
    rng = random.Random(13)
    state = engine.new_game(game, **options)
    for _ in range(6):
        move = str(state.random_move(rng))
        assert str(state.parse_move(move)) == move
        after = state.play(move)
        assert after.moves == (*state.moves, move) and after.ply == state.ply + 1
        state = after
    assert engine.from_text(state.to_text()).to_text() == state.to_text()
    assert engine.replay(game, options, state.moves).to_text() == state.to_text()
    final = state.playout(rng)
    assert final.is_over and final.winner in (0, 1) and final.legal_moves() == []
    assert final.render().isascii()
    assert engine.from_text(final.to_text()).to_text() == final.to_text()


@pytest.mark.parametrize("config", CONFIGS + LARGEST_CONFIGS, ids=config_id)
def test_finished_games_refuse_moves(config: tuple[str, dict[str, Any]]) -> None:
    game, options = config
    state = engine.new_game(game, **options).playout(random.Random(5))
    assert state.is_over
    text = state.to_text()
    with pytest.raises(engine.IllegalMove):
        state.play("pass")
    assert state.to_text() == text


# --------------------------------------------------------------------------- differential

DIFFERENTIAL_GAMES = 10  # seeded games per configuration (fewer on the big Xodd/Yodd boards)
BIG_DIFFERENTIAL_GAMES = 2
BIG_EXTRA_FULL_PLIES = 2  # random plies per big game, besides 0 and 1, with full sets compared


def check_same_state(state: Any, ref: reference.RefState) -> None:
    where = f"after {' '.join(ref.moves) or 'no moves'}\n{reference.render(ref)}"
    assert state.ply == ref.ply, where
    assert state.to_move == ref.to_move, where
    assert state.is_over == ref.is_over, where
    assert state.winner == ref.winner, where


def check_same_legal_moves(state: Any, ref: reference.RefState) -> None:
    engine_moves = set(texts(state.legal_moves()))
    ref_moves = set(ref.legal_moves())
    where = f"after {' '.join(ref.moves) or 'no moves'}\n{reference.render(ref)}"
    extra, missing = sorted(engine_moves - ref_moves), sorted(ref_moves - engine_moves)
    assert not extra, f"the engine allows {extra} {where}"
    assert not missing, f"the engine forbids {missing} {where}"


def check_same_validation(state: Any, ref: reference.RefState, rng: random.Random) -> None:
    """Moves the engine accepts without listing them (parse_move) are the reference's too."""
    for text in candidate_moves(ref, rng, 40):
        try:
            expected: str | None = ref.play(text).moves[-1]
        except reference.RefIllegal:
            expected = None
        try:
            got: str | None = str(state.parse_move(text))
        except engine.IllegalMove:
            got = None
        assert got == expected, f"{text!r}: engine {got!r}, reference {expected!r}\n" + (
            reference.render(ref)
        )


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_engine_agrees_with_reference(config: tuple[str, dict[str, Any]]) -> None:
    game, options = config
    if not has_reference(game):
        pytest.skip(f"tests/engine/reference.py has no reference for {game}")
    big = is_big(game, options)
    for seed in range(BIG_DIFFERENTIAL_GAMES if big else DIFFERENTIAL_GAMES):
        rng = random.Random(f"differential-{seed}")
        ref = reference.new_game(game, **options)
        full_plies = {0, 1, *(rng.randrange(2, 40) for _ in range(BIG_EXTRA_FULL_PLIES))}
        for state, move in playout(game, options, seed=1000 + seed):
            check_same_state(state, ref)
            if not big or state.ply in full_plies or state.is_over:
                check_same_legal_moves(state, ref)
            if move is None:
                break
            check_same_validation(state, ref, rng)
            ref = ref.play(move)
            assert ref.moves[-1] == move
