"""Bundled bots and the interface every bot implements.

    from clients.bots import make_bot, TimeBudget
    bot = make_bot("mcts", seed=1)
    move = bot.choose_move(state, TimeBudget(remaining_ms=None, per_move_ms=200))

``random`` plays uniformly random legal moves, ``greedy`` looks one ply ahead with a
per-game evaluation, ``mcts`` searches with UCT. Write your own by subclassing :class:`Bot`
(see :mod:`clients.bots.base`); :mod:`clients.bots.match` plays bots against each other.
"""

from __future__ import annotations

from . import greedy, mcts, random_bot
from .base import BOTS, Bot, Resign, TimeBudget, make_bot, register

__all__ = [
    "BOTS", "Bot", "Resign", "TimeBudget", "greedy", "make_bot", "mcts", "random_bot", "register",
]
