"""Shared pieces of the engine tests: the option spread, a seeded move policy, playouts."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import engine

from . import reference

# (game, options) pairs the conformance and differential tests run over.
HEXIFACT_BOARDS = ("hex3-4", "hex4", "hex4-5", "hex5", "hex5-6")
JUMP_OPTIONS = ("after-placing", "once-per-stone")
CONFIGS: list[tuple[str, dict[str, Any]]] = [
    *(("xodd", {"size": n}) for n in (2, 3, 5, 9)),
    *(("yodd", {"size": n}) for n in (2, 3, 6)),
    *(("hadron", {"size": n}) for n in (3, 4, 5, 7)),
    *(("hexifact", {"board": b, "jumps": j}) for b in HEXIFACT_BOARDS for j in JUMP_OPTIONS),
]
# Boards whose full Xodd/Yodd legal-move set (~12,000 turns) is too slow for the reference
# to enumerate at every ply: the differential test compares full sets on a sample of plies.
BIG_ODD_BOARDS = {("xodd", 9), ("yodd", 6)}


def config_id(config: tuple[str, dict[str, Any]]) -> str:
    game, options = config
    return "-".join([game, *(str(v) for v in options.values())])


def game_key(state: Any) -> str:
    """The registry key of a state's game."""
    return str(getattr(state.game, "key", state.game))


def is_big(game: str, options: dict[str, Any]) -> bool:
    return (game, options.get("size")) in BIG_ODD_BOARDS


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
