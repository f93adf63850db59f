"""The ``greedy`` bot: one ply of lookahead with the per-game evaluation.

It plays every candidate move, scores the resulting position for itself with
:func:`clients.bots.heuristics.evaluate` and picks the best, breaking ties at random. A move
that wins at once scores as a win; one that lets the opponent win by passing scores as
nearly lost. For Xodd and Yodd, whose early positions have ~12,000 legal turns, the
candidates are a bounded sample, so a move takes a few milliseconds on any board.
"""

from __future__ import annotations

import engine

from . import heuristics
from .base import Bot, TimeBudget, register

SAMPLES = 300  # random draws added to the candidates of games with huge move lists


@register
class GreedyBot(Bot):
    """Best move by a one-ply evaluation; ``samples`` bounds the Xodd/Yodd candidates."""

    name = "greedy"

    def __init__(self, seed: int | None = None, *, samples: int = SAMPLES) -> None:
        super().__init__(seed)
        self.samples = samples

    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        me = state.to_move
        candidates = heuristics.knowledge(state).candidates(state, self.rng, self.samples)
        best: list[engine.Move] = []
        best_value = -float("inf")
        for move in candidates:
            value = heuristics.evaluate(state.play(move), me)
            if value > best_value:
                best, best_value = [move], value
            elif value == best_value:
                best.append(move)
        return self.rng.choice(best).text
