"""The bot SDK: connect a bot to a Tessera server and let it play.

A bot is a :class:`~clients.bots.base.Bot` with one method, ``choose_move(state, budget)``;
the SDK does the rest (logging in with a bot token, accepting challenges by a policy,
seeking, clocks, reconnecting, a clean shutdown). The shortest complete bot::

    import engine
    from clients.sdk import Bot, TimeBudget, run_bot

    class FirstMove(Bot):
        name = "first-move"

        def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
            return str(state.legal_moves()[0])

    if __name__ == "__main__":
        raise SystemExit(run_bot(FirstMove()))   # takes the options of `tessera bot`

``docs/BOTS.md`` is the guide. Modules: :mod:`~clients.sdk.runner` (:class:`BotRunner`, the
asyncio engine), :mod:`~clients.sdk.policy` (:class:`Policy`), :mod:`~clients.sdk.specs`
(parsing seeks and game rules; time budgets), :mod:`~clients.sdk.cli` (``tessera bot`` and
:func:`run_bot`), :mod:`~clients.sdk.bridge_cli` (``tessera bridge``).
"""

from __future__ import annotations

from clients.bots.base import Bot, TimeBudget

from .cli import run_bot
from .policy import Policy
from .runner import BotRunner, ChallengeDeclined, FatalError, GameResult, Resign
from .specs import SeekSpec, parse_game_rules, parse_seek

__all__ = [
    "Bot",
    "BotRunner",
    "ChallengeDeclined",
    "FatalError",
    "GameResult",
    "Policy",
    "Resign",
    "SeekSpec",
    "TimeBudget",
    "parse_game_rules",
    "parse_seek",
    "run_bot",
]
