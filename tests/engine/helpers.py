"""Shared pieces of the engine tests: the option spread, a seeded move policy, playouts.

The configurations the tests run over come from the registry (``engine.GAMES``) and each
game's option schema, never from a list of games: a game added to the registry is tested
without editing any test.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Iterator, Sequence
from typing import Any

import engine
from engine.options import Option

from . import reference

Config = tuple[str, dict[str, Any]]


def spread(option: Option) -> list[int | str]:
    """The values of one option the thorough tests run over: every choice; for an integer,
    its minimum, the one above, the midpoint between the minimum and the default, and the
    default (the largest boards are :data:`LARGEST_CONFIGS`)."""
    if option.kind != "int":
        return list(option.choices)
    assert option.minimum is not None and isinstance(option.default, int)
    low, default = option.minimum, option.default
    return sorted({low, min(low + 1, default), (low + default) // 2, default})


def _product(game: engine.Game, values: Sequence[Sequence[int | str]]) -> list[Config]:
    names = [o.name for o in game.options]
    return [(game.key, dict(zip(names, combo, strict=True)))
            for combo in itertools.product(*values)]


def _small(option: Option) -> list[int | str]:
    if option.minimum is None:
        return list(option.choices)
    return [option.minimum, option.minimum + 1]


CONFIGS: list[Config] = [config for game in engine.GAMES.values()
                         for config in _product(game, [spread(o) for o in game.options])]
"""Every game, each option over its :func:`spread`, in every combination."""

SMALL_CONFIGS: list[Config] = [config for game in engine.GAMES.values()
                               for config in _product(game, [_small(o) for o in game.options])]
"""The small boards: integer options at their minimum and the one above, every choice."""

DEFAULT_CONFIGS: list[Config] = [(key, game.normalize_options())
                                 for key, game in engine.GAMES.items()]
"""Every game with its default options."""

LARGEST_CONFIGS: list[Config] = [
    (key, {o.name: o.maximum for o in game.options if o.maximum is not None})
    for key, game in engine.GAMES.items() if any(o.maximum is not None for o in game.options)]
"""The other end of every range: each game with its integer options at their maximum."""

def per_game(configs: Sequence[Config], index: int = 0) -> list[Config]:
    """The ``index``-th configuration of each game in ``configs`` (its last if it has fewer)."""
    by_game: dict[str, list[Config]] = {}
    for config in configs:
        by_game.setdefault(config[0], []).append(config)
    return [found[min(index, len(found) - 1)] for found in by_game.values()]


BIG_LEGAL_MOVES = 5000
"""Positions with more legal moves than this (Xodd and Yodd on their default boards: about
12,000 turns) are too slow for the reference to enumerate at every ply, and for the costliest
checks: those tests sample plies there."""


def config_id(config: tuple[str, dict[str, Any]]) -> str:
    game, options = config
    return "-".join([game, *(str(v) for v in options.values())])


def game_key(state: Any) -> str:
    """The registry key of a state's game."""
    return str(getattr(state.game, "key", state.game))


@functools.cache
def _legal_after_one_ply(game: str, options: tuple[tuple[str, Any], ...]) -> int:
    state = engine.new_game(game, **dict(options))
    state = state.play(state.random_move(random.Random(0)))
    return len(state.legal_moves())


def is_big(game: str, options: dict[str, Any]) -> bool:
    """Does the game on these options have more than BIG_LEGAL_MOVES moves early on?"""
    return _legal_after_one_ply(game, tuple(sorted(options.items()))) > BIG_LEGAL_MOVES


def has_reference(game: str) -> bool:
    """Does tests/engine/reference.py implement ``game`` (for the differential tests)?"""
    try:
        reference.new_game(game)
    except ValueError:
        return False
    return True


def texts(moves: list[Any]) -> list[str]:
    """Canonical strings of a legal-move list, sorted so seeded choices do not depend on order."""
    return sorted(str(m) for m in moves)


def pick(rng: random.Random, moves: list[str]) -> str:
    """A seeded choice that keeps games varied: passes are rare unless forced; jumps, two-stone
    turns and one-stone turns are picked as often as each other, whatever their numbers."""
    if "pass" in moves and (len(moves) == 1 or rng.random() < 0.1):
        return "pass"
    jumps = [m for m in moves if "-" in m]
    pairs = [m for m in moves if "," in m]
    singles = [m for m in moves if m != "pass" and "-" not in m and "," not in m]
    return rng.choice(rng.choice([b for b in (jumps, pairs, singles) if b]))


def playout(game: str, options: dict[str, Any], seed: int) -> Iterator[tuple[Any, str | None]]:
    """Yield (state, move about to be played) along a seeded game; the move is None at the end."""
    rng = random.Random(seed)
    state = engine.new_game(game, **options)
    while True:
        legal = texts(state.legal_moves())
        if not legal:
            yield state, None
            return
        move = pick(rng, legal)
        yield state, move
        state = state.play(move)


def candidate_moves(ref: reference.RefState, rng: random.Random, count: int) -> list[str]:
    """Well-formed move texts for this board, mostly illegal ones, for validation tests."""
    cells = ref.board.cells
    names = [reference.cell_name(c) for c in cells]
    out = ["pass"]
    for _ in range(count):
        if ref.game in ("xodd", "yodd"):
            one = rng.choice("BW") + rng.choice(names)
            two = rng.choice("BW") + rng.choice(names)
            out.append(one if rng.random() < 0.4 else f"{one},{two}")
        elif ref.game == "hadron" or rng.random() < 0.4:
            out.append(rng.choice(names))
        else:
            start = rng.choice([c for c in cells if c in ref.stones] or cells)
            dc, dr = rng.choice(reference.HEX_STEPS)
            distance = rng.randint(1, 5)
            landing = (start[0] + dc * distance, start[1] + dr * distance)
            if landing in ref.board:
                out.append(f"{reference.cell_name(start)}-{reference.cell_name(landing)}")
    return out
