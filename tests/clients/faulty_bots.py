"""Bots that misbehave on purpose, shared by the match-runner and SDK tests."""

from __future__ import annotations

import engine
from clients.bots import Bot, TimeBudget


class IllegalBot(Bot):
    """Answers a cell that exists on no board."""

    name = "illegal"

    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        return "z99"


class CrashingBot(Bot):
    """Raises from choose_move."""

    name = "crashing"

    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        raise RuntimeError("boom")
