"""What moves look like in each game, learnt from the engine rather than written down here.

The terminal client uses this to show a game's move forms in its help (``Ba1``, ``Ba1,Wb2``,
``pass``), to tell a mistyped command from a move (``hello`` is neither; ``z9`` is a move
to an unknown cell), and to say that a game has no pass at all. Everything comes from a
short seeded game of each registered game, so a new game needs nothing here.
"""

from __future__ import annotations

import functools
import random
import re

import engine

CELL = re.compile(r"[a-z][0-9]+")
"""A cell name: a column letter and a row number (docs/RULES.md, for every board)."""
PASS = "pass"
PROBE_PLIES = 40


def form(move: str) -> str:
    """A move's form, without its cells or stone letters: c3 and Bc3 -> @, Bc3,Wd4 -> @,@,
    c3-c6 -> @-@, pass -> pass."""
    return re.sub(r"[a-z]?@", "@", CELL.sub("@", move.lower()))


@functools.cache
def examples(game_key: str) -> tuple[str, ...]:
    """One legal move of every form the game has, in the order first met: a seeded game on
    its smallest board, preferring moves of forms not seen yet (so passes and jumps show)."""
    game = engine.get_game(game_key)
    options = {o.name: o.minimum for o in game.options if o.minimum is not None}
    rng = random.Random(f"forms of {game_key}")
    state = engine.new_game(game_key, **options)
    seen: dict[str, str] = {}
    for _ in range(PROBE_PLIES):
        moves = sorted(str(m) for m in state.legal_moves())
        if not moves:
            break
        for move in moves:
            seen.setdefault(form(move), move)
        fresh = [m for m in moves if m != PASS and form(m) not in _played(state)]
        state = state.play(rng.choice(fresh or [m for m in moves if m != PASS] or moves))
    return tuple(sorted(seen.values(), key=lambda m: (m == PASS, len(CELL.findall(m)))))


def _played(state: engine.State) -> set[str]:
    return {form(m) for m in state.moves}


def has_pass(game_key: str) -> bool:
    """Does the game ever allow a pass (as far as a seeded game shows)?"""
    return PASS in examples(game_key)


def looks_like_move(text: str) -> bool:
    """Is ``text`` meant as a move (it names a cell, or is ``pass``), rather than a word?"""
    t = text.strip().lower()
    return t == PASS or CELL.search(t) is not None
