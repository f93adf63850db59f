"""Per-game knowledge the bundled bots share: position evaluations and candidate moves.

Everything here goes through the engine's public interface (``play``, ``summary``,
``legal_moves``, ``random_move``), so it never holds a second copy of the rules. Game
knowledge lives in one table, :data:`KNOWLEDGE`, keyed by game key; a game missing from it
gets :data:`GENERIC` (value 0, every legal move a candidate), so the bots still play it.

Evaluations are from one player's point of view: higher is better for them.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable
from dataclasses import dataclass

import engine

WIN = 1000.0  # value of a won game (minus: lost); far above any evaluation of a live game

Evaluator = Callable[[engine.State, int], float]
Sampler = Callable[[engine.State, random.Random, int], list[engine.Move]]


def all_moves(state: engine.State, rng: random.Random, limit: int) -> list[engine.Move]:
    """Every legal move (for games whose move lists are short)."""
    return state.legal_moves()


def _zero(state: engine.State, player: int) -> float:
    return 0.0


@dataclass(frozen=True, slots=True)
class Knowledge:
    """What the bots know about one game.

    ``evaluate(state, player)``: value of a live position for ``player``.
    ``candidates(state, rng, limit)``: distinct legal moves worth considering; for games with
    huge move lists a sample of roughly ``limit`` moves, otherwise all of them.
    ``huge``: move lists are too long to list at every node of a search tree; sample them.
    """

    evaluate: Evaluator = _zero
    candidates: Sampler = all_moves
    huge: bool = False


GENERIC = Knowledge()


# -- Xodd and Yodd --------------------------------------------------------------------------
def _odd_value(state: engine.State, player: int) -> float:
    """Expected final margin in groups (opponent's minus ours), from the position now.

    At the end only groups count, but early on they mean little: the stones still to come
    merge and split them, and whoever owns more of the board ends with fewer, larger groups
    (the minority colour is left in many small pockets). So the group margin is weighted by
    how full the board is, and the stone margin by how empty it still is. The weights are a
    least-squares fit to the results of random playouts on 9x9 Xodd and base-6 Yodd (about
    three quarters of the variance explained). The side to move gets a small tempo bonus.
    """
    summary = state.summary()
    groups: list[int] = summary["groups"]
    empty_share = int(summary["empty_cells"]) / state.board.size
    stones: list[int] = summary["stones"]
    group_margin = groups[1 - player] - groups[player]
    stone_margin = stones[player] - stones[1 - player]
    tempo = 0.1 if state.to_move == player else -0.1
    return (1 - empty_share) * group_margin + (0.1 + 0.5 * empty_share) * stone_margin + tempo


def _odd_candidates(state: engine.State, rng: random.Random, limit: int) -> list[engine.Move]:
    """Every legal one-stone drop, the pass, and ``limit`` random draws from the ~12,000 turns.

    Legal single drops are few (a lone stone changes the parity, so only drops touching a
    group of their colour qualify) and include the merges; the random draws cover the
    two-stone turns in proportion to how many there are.
    """
    out: dict[str, engine.Move] = {}
    for cell in state.board.cells:
        for colour in "BW":
            try:
                move = state.parse_move(colour + cell.name)
            except engine.IllegalMove:
                continue
            out[move.text] = move
    if state.ply > 0:
        with contextlib.suppress(engine.IllegalMove):
            out["pass"] = state.parse_move("pass")
    for _ in range(limit):
        move = state.random_move(rng)
        out.setdefault(move.text, move)
    return list(out.values())


# -- Hadron ---------------------------------------------------------------------------------
def _hadron_value(state: engine.State, player: int) -> float:
    """Parity of the legal squares: both players share them, so if placements did not
    interact the player to move would win exactly when their number is odd."""
    squares = len(state.summary()["legal_squares"])
    mover_wins = squares % 2 == 1
    return 1.0 if mover_wins == (state.to_move == player) else -1.0


# -- Hexifact -------------------------------------------------------------------------------
def _hexifact_value(state: engine.State, player: int) -> float:
    """Score difference plus a little for having moves (placements and jumps) to make."""
    scores = state.summary()["scores"]
    mobility = 0.05 * (len(state.legal_moves()) - 1)  # the side to move's non-pass moves
    value = float(scores[player] - scores[1 - player])
    return value + (mobility if state.to_move == player else -mobility)


KNOWLEDGE: dict[str, Knowledge] = {
    "xodd": Knowledge(_odd_value, _odd_candidates, huge=True),
    "yodd": Knowledge(_odd_value, _odd_candidates, huge=True),
    "hadron": Knowledge(_hadron_value, all_moves),
    "hexifact": Knowledge(_hexifact_value, all_moves),
}


def knowledge(state: engine.State) -> Knowledge:
    """The knowledge for ``state``'s game (:data:`GENERIC` if there is none)."""
    return KNOWLEDGE.get(state.game.key, GENERIC)


def passing_wins(state: engine.State) -> bool:
    """Can the player to move end the game right now, as its winner, by passing?"""
    if state.is_over or state.last_move not in ("pass", None):  # None: loaded from text
        return False
    try:
        after = state.play("pass")
    except engine.IllegalMove:
        return False
    return after.is_over and after.winner == state.to_move


def evaluate(state: engine.State, player: int) -> float:
    """Value of ``state`` for ``player``: +-WIN when decided (or decided by one pass)."""
    if state.is_over:
        return WIN if state.winner == player else -WIN
    if passing_wins(state):
        return WIN / 2 if state.to_move == player else -WIN / 2
    return knowledge(state).evaluate(state, player)
