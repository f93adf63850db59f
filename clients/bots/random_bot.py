"""The ``random`` bot: a uniformly random legal move. The baseline every bot must beat."""

from __future__ import annotations

import engine

from .base import Bot, TimeBudget, register


@register
class RandomBot(Bot):
    """Plays a legal move drawn uniformly at random (``State.random_move``)."""

    name = "random"

    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        return state.random_move(self.rng).text
