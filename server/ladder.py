"""The bot ladder: connected bots that opt in are paired into rated games, in rounds.

A bot joins the ladder of some games (``ladder_join``). Every ``ladder_round_s`` seconds
each game's round pairs the bots that are on its ladder, online and idle (in no game):
sorted by rating in the game's pool, each one is paired with the nearest in rating that
was not its last opponent in that game (a repeat only when the two are the only bots on
the game's ladder; otherwise a bot with nobody new idle waits for the next round), and the
bot that has had the first seat less often takes it (ties: the lower rated). A bot in a
game is paired in the first round after it finishes. The games are
rated, with the game's default options and the ladder's clock; they are ordinary games, so
a bot that disconnects loses on time as any player would. What the ladder remembers (last
opponents, seats) is in memory: a restart forgets it, not the ratings.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable

import engine
import protocol as p

from .lobby import Lobby, Member, Offer
from .rooms import GameRoom

log = logging.getLogger(__name__)

StartGame = Callable[[Offer, tuple[Member, Member]], Awaitable[GameRoom]]
DEFAULT_CLOCK = "1m+1s"


class Ladder:
    """The ladder's members and its rounds (see the module docstring)."""

    def __init__(self, lobby: Lobby, busy: Callable[[int], bool], start: StartGame, *,
                 clock: p.TimeControl | None = None) -> None:
        self._lobby = lobby
        self._busy = busy
        self._start = start
        self.clock = clock if clock is not None else p.parse_time_control(DEFAULT_CLOCK)
        self.games_of: dict[int, frozenset[str]] = {}  # user id -> the games they play
        self._last: dict[tuple[str, int], int] = {}  # (game, bot) -> last opponent
        self._firsts: dict[tuple[str, int], int] = defaultdict(int)  # seat 0 minus seat 1
        self.rounds = 0
        lobby.on_left.append(self.leave)

    def join(self, member: Member, games: list[str]) -> None:
        if member.kind != "bot":
            raise p.ProtocolError("the ladder is for bots: log in with a bot token",
                                  code=p.ErrorCode.FORBIDDEN)
        for game in games:
            engine.get_game(game)  # KeyError for an unknown game
        self.games_of[member.user_id] = frozenset(games)

    def leave(self, user_id: int) -> None:
        self.games_of.pop(user_id, None)

    def members(self, game: str) -> list[int]:
        """The ids of the bots on a game's ladder."""
        return [user_id for user_id, games in self.games_of.items() if game in games]

    async def run(self, every_s: float) -> None:
        """Pair a round every ``every_s`` seconds, until cancelled."""
        while True:
            await asyncio.sleep(every_s)
            try:
                await self.play_round()
            except Exception:
                log.exception("ladder round failed")

    async def play_round(self) -> list[GameRoom]:
        """Pair the idle bots of every game's ladder and start their games."""
        self.rounds += 1
        started: list[GameRoom] = []
        taken: set[int] = set()  # a bot on two ladders plays one game a round
        for game in sorted({game for games in self.games_of.values() for game in games}):
            online = [member for user_id in self.members(game)
                      if (member := self._lobby.members.get(user_id)) is not None]
            idle = [member for member in online
                    if member.user_id not in taken and not self._busy(member.user_id)]
            for first, second in self.pairs(game, idle, alone=len(online) == 2):
                taken.update((first.user_id, second.user_id))
                offer = Offer(game, dict(engine.get_game(game).new().options), self.clock, True)
                try:
                    started.append(await self._start(offer, (first, second)))
                except Exception:
                    log.exception("ladder game not started", extra={"game": game})
                    continue
                self._last[game, first.user_id] = second.user_id
                self._last[game, second.user_id] = first.user_id
                self._firsts[game, first.user_id] += 1
                self._firsts[game, second.user_id] -= 1
        return started

    def pairs(self, game: str, idle: list[Member], *, alone: bool = False
              ) -> list[tuple[Member, Member]]:
        """The round's pairs among ``idle``, seat 0 first (see the module docstring);
        ``alone``: these two are the only bots on the game's ladder (they may play again)."""
        ranked = sorted(idle, key=lambda member: (member.rating_in(game), member.user_id))
        free = list(ranked)
        pairs = []
        while len(free) >= 2:
            bot = free.pop(0)
            rating = bot.rating_in(game)
            choices = sorted(free, key=lambda other: (abs(other.rating_in(game) - rating),
                                                      other.user_id))
            fresh = [other for other in choices
                     if self._last.get((game, bot.user_id)) != other.user_id]
            if fresh:
                other = fresh[0]
            elif alone:
                other = choices[0]  # only the two of them on the ladder: they play again
            else:
                continue  # nobody new for this one this round
            free.remove(other)
            pairs.append(self._seated(game, bot, other))
        return pairs

    def _seated(self, game: str, a: Member, b: Member) -> tuple[Member, Member]:
        key_a = (self._firsts[game, a.user_id], a.rating_in(game), a.user_id)
        key_b = (self._firsts[game, b.user_id], b.rating_in(game), b.user_id)
        return (a, b) if key_a <= key_b else (b, a)
