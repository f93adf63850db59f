"""The bundled bots a player started from the client (``bot mcts hadron``), and their ends.

Each is a :class:`~clients.local_bot.LocalBot` process. :class:`LocalBots` keeps them by
name, links each to the game it plays, stops one whose challenge came to nothing or whose
game ended, and stops all of them when the client quits (after the client has resigned or
aborted their games).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from clients.bots import BOTS
from clients.local_bot import STOP_GRACE_S, LocalBot, LocalBotError, bot_command

Say = Callable[[str], None]


class LocalBots:
    """The client's bot processes, by lower-case name."""

    def __init__(self, say: Say, game_live: Callable[[str], bool]) -> None:
        self.say = say
        self.game_live = game_live  # is this game still going on?
        self.bots: dict[str, LocalBot] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    async def start(self, kind: str, url: str, owner: str, think_s: float) -> LocalBot:
        """Start a bot that accepts ``owner``'s challenge (LocalBotError if it cannot)."""
        bot = await LocalBot.start(kind, bot_command(kind, url, owner, think_s))
        self.bots[bot.name.lower()] = bot
        self.spawn(self._watch(bot))
        return bot

    def get(self, name: str) -> LocalBot | None:
        return self.bots.get(name.lower())

    def lines(self) -> list[str]:
        """The running bots, one line each."""
        if not self.bots:
            return [f"No local bots. Start one: bot mcts hadron size=5 5m+3s "
                    f"(bots: {', '.join(BOTS)})."]
        return [f"  {bot.name}  {bot.kind}  pid {bot.pid}  "
                + (f"playing game {bot.game_id}" if bot.game_id else "waiting for its game")
                for bot in self.bots.values()]

    def adopt(self, game_id: str, opponent: str) -> LocalBot | None:
        """A game started against ``opponent``: the local bot that plays it, if any."""
        bot = self.get(opponent)
        if bot is not None and bot.game_id is None:
            bot.game_id = game_id
        return bot

    def game_over(self, game_id: str) -> None:
        """Stop the bot of a finished game (it stops by itself too; make sure)."""
        for key, bot in list(self.bots.items()):
            if bot.game_id == game_id:
                del self.bots[key]
                self.spawn(bot.stop())

    def challenge_gone(self, target: str) -> None:
        """A challenge to ``target`` ended without a game: stop it if it is our bot."""
        bot = self.get(target)
        if bot is not None and bot.game_id is None:
            self.say(f"Stopping your local {bot.kind} bot {bot.name}.")
            self.spawn(bot.stop())

    async def stop_all(self, leave: Callable[[str], Awaitable[None]]) -> None:
        """``leave`` (resign or abort) each bot's game, then stop the bots."""
        for bot in list(self.bots.values()):
            if bot.game_id is not None:
                await leave(bot.game_id)
            await bot.stop()
        if self.tasks:  # bots stopping after their games, and their watchers
            await asyncio.wait(self.tasks, timeout=STOP_GRACE_S + 2)

    async def _watch(self, bot: LocalBot) -> None:
        code = await bot.wait()
        if self.bots.get(bot.name.lower()) is bot:
            del self.bots[bot.name.lower()]
        live = bot.game_id is not None and self.game_live(bot.game_id)
        if not bot.stopping and (code != 0 or live):
            self.say(f"Your local {bot.kind} bot {bot.name} stopped (exit status {code}): "
                     f"{bot.why()}")

    def spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


__all__ = ["LocalBotError", "LocalBots"]
