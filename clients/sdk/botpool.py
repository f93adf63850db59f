"""The bot objects a runner plays with: one per game played at once, reused afterwards.

The bot given plays the first game; games played at the same time get copies of it, made
(``copy.deepcopy``) before it ever plays and reseeded, or the factory's products when a
factory was given. A bot is returned to the pool when its game ends; :meth:`BotPool.close`
calls ``close`` on the bots that have one (engine bridges) when the runner ends. A game
that starts while another game's bot is on its way back (that game is over at the server,
its task is telling the bot so) waits for that bot rather than making one more.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
from collections.abc import Callable

from clients.bots.base import Bot

log = logging.getLogger("clients.sdk")

BotSource = Bot | Callable[[], Bot]


class BotPool:
    """Bots made from one source, lent to games one at a time."""

    def __init__(self, source: BotSource, *, games_at_once: int) -> None:
        self.source = source
        self.pristine: Bot | None = None
        self.made: list[Bot] = []
        self.idle: list[Bot] = []
        self._returned = asyncio.Event()
        if isinstance(source, Bot):
            try:  # copied now, before it plays: games played at once each need a bot
                self.pristine = copy.deepcopy(source)
            except Exception as e:
                if games_at_once > 1:
                    raise TypeError(f"cannot copy {source!r} to play several games at once "
                                    f"({e}); pass a factory (a function returning a new "
                                    "bot)") from e

    async def take(self, *, coming_back: Callable[[], bool]) -> Bot:
        """An idle bot; while none is idle and ``coming_back()`` (a bot is on its way back),
        the first one given back; otherwise a new one (RuntimeError if the bot given cannot
        be copied)."""
        while not self.idle and coming_back():
            self._returned.clear()
            await self._returned.wait()
        return self._take_now()

    def _take_now(self) -> Bot:
        if self.idle:
            return self.idle.pop()
        n = len(self.made)
        if not isinstance(self.source, Bot):
            bot = self.source()
        elif n == 0:
            bot = self.source
        else:
            if self.pristine is None:
                raise RuntimeError(f"a second game at once needs a copy of {self.source!r}")
            bot = copy.deepcopy(self.pristine)
            seed = self.source.seed
            bot.rng = random.Random(None if seed is None else f"{seed} copy {n}")
        self.made.append(bot)
        return bot

    def give_back(self, bot: Bot) -> None:
        self.idle.append(bot)
        self._returned.set()

    async def close(self) -> None:
        """Close every bot that has a ``close`` (in a thread: it may wait for a process)."""
        for bot in self.made:
            close = getattr(bot, "close", None)
            if callable(close):
                try:
                    await asyncio.to_thread(close)
                except Exception:
                    log.exception("closing %r failed", bot)
