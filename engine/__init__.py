"""Tessera's rules engine: Xodd, Yodd, Hadron and Hexifact as one pure library.

No I/O, no clock, no hidden randomness: random choices take a ``random.Random`` from the
caller. Typical use::

    import engine
    state = engine.new_game("xodd", size=9)
    state = state.play("Bc3")          # returns a new state
    state.legal_moves(), state.is_over, state.winner
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .boards import Board, Cell
from .core import NO_MOVE, PASSES, Ending, Game, Move, State
from .errors import BadOption, BadPosition, EngineError, IllegalMove, UnknownGame
from .games import GAMES, get_game
from .options import Option
from .text import from_text


def new_game(key: str, **options: Any) -> State:
    """The starting state of game ``key``; ValueError for an unknown game or option."""
    return get_game(key).new(**options)


def replay(key: str, options: Mapping[str, Any], moves: Iterable[str]) -> State:
    """The state after playing ``moves`` from the start; IllegalMove names the bad ply."""
    state = get_game(key).new(**options)
    for ply, move in enumerate(moves):
        try:
            state = state.play(move)
        except IllegalMove as e:
            raise IllegalMove(f"ply {ply}: {e}") from None
    return state


__all__ = [
    "GAMES",
    "NO_MOVE",
    "PASSES",
    "BadOption",
    "BadPosition",
    "Board",
    "Cell",
    "Ending",
    "EngineError",
    "Game",
    "IllegalMove",
    "Move",
    "Option",
    "State",
    "UnknownGame",
    "from_text",
    "get_game",
    "new_game",
    "replay",
]
