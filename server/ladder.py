"""The bot ladder: connected bots that opt in are paired into rated games, in rounds.

A bot joins the ladder of some games (``ladder_join``), whichever process it is connected
to: the roster (``LadderRoster``) is the topology's, in memory alone, in Redis on a
cluster, and one process at a time pairs the rounds (``leading``). Every
``ladder_round_s`` seconds each game's round pairs the bots that are on its ladder, online
and idle (in no game): sorted by rating in the game's pool, each one is paired with the
nearest in rating that was not its last opponent in that game (a repeat only when the two
are the only bots on the game's ladder; otherwise a bot with nobody new idle waits for the
next round), the choices searched so that as many bots as possible play
(``Ladder.pairs``), and the bot that has had the first seat less often takes it (ties: the
one that had the second seat last, then the lower rated). A bot in a game is paired in the
first round after it finishes. The games are rated, with the game's default options and
the ladder's clock; they are ordinary games, so a bot that disconnects loses on time as
any player would. What the ladder remembers (last opponents, seats) is in the pairing
process's memory: a restart (or a new leader) forgets it, not the ratings. A bot leaves
with ``ladder_leave`` or when it is offline everywhere.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable

import engine
import protocol as p

from .lobby import DEFAULT_PERIOD_S, Member, Offer
from .offers import LadderRoster, MemoryRoster
from .rooms import GameRoom
from .storage import PoolRating
from .tasks import checkpoint

log = logging.getLogger(__name__)

DEFAULT_CLOCK = "1m+1s"
MATCH_BUDGET = 20_000  # steps of the pairing search a round may take, per game

StartGame = Callable[[Offer, tuple[Member, Member]], Awaitable[GameRoom]]
OnlineIds = Callable[[], Awaitable[set[int]]]  # the users online anywhere
Ratings = Callable[[list[int], str], Awaitable[dict[int, list[PoolRating]]]]  # as stored
Playing = Callable[[list[int]], Awaitable[dict[int, int]]]  # games in progress, anywhere


class Ladder:
    """The ladder's members and its rounds (see the module docstring)."""

    def __init__(self, roster: LadderRoster, start: StartGame, online: OnlineIds,
                 ratings: Ratings, playing: Playing, *, period_s: float = DEFAULT_PERIOD_S,
                 clock: p.TimeControl | None = None) -> None:
        self._roster = roster
        self._start = start
        self._online_ids = online
        self._ratings = ratings
        self._playing = playing
        self._period_s = period_s
        self.clock = clock if clock is not None else p.parse_time_control(DEFAULT_CLOCK)
        self.games_of: dict[int, frozenset[str]] = {}  # user id -> the games they play
        self._who: dict[int, tuple[str, str]] = {}  # user id -> name, kind
        self._last: dict[tuple[str, int], int] = {}  # (game, bot) -> last opponent
        self._firsts: dict[tuple[str, int], int] = defaultdict(int)  # seat 0 minus seat 1
        self._was_first: dict[tuple[str, int], bool] = {}  # (game, bot) -> last had seat 0
        self._online: set[int] = set()  # this round's: online anywhere
        self.rounds = 0

    async def enter(self, member: Member, games: list[str]) -> None:
        """``ladder_join``: refused for a human or an unknown game (KeyError)."""
        if member.kind != "bot":
            raise p.ProtocolError("the ladder is for bots: log in with a bot token",
                                  code=p.ErrorCode.FORBIDDEN)
        for game in games:
            engine.get_game(game)  # KeyError for an unknown game
        self.games_of[member.user_id] = frozenset(games)
        self._who[member.user_id] = (member.name, member.kind)
        await self._roster.enter(member.user_id, (member.name, member.kind, frozenset(games)))

    async def exit(self, user_id: int) -> None:
        """``ladder_leave``, or the bot went offline everywhere."""
        self.games_of.pop(user_id, None)
        await self._roster.exit(user_id)

    async def refresh(self) -> None:
        """The ladder's bots, as the roster holds them."""
        entries = await self._roster.read()
        self.games_of = {user_id: games for user_id, (_, _, games) in entries.items()}
        self._who = {user_id: (name, kind) for user_id, (name, kind, _) in entries.items()}

    def members(self, game: str) -> list[int]:
        """The ids of the bots on a game's ladder."""
        return [user_id for user_id, games in self.games_of.items() if game in games]

    def who(self, user_id: int) -> p.User | None:
        """A ladder bot as the standings name it (None if it is not on the ladder)."""
        known = self._who.get(user_id)
        return None if known is None else p.User(name=known[0],
                                                 kind=known[1])  # type: ignore[arg-type]

    async def run(self, every_s: float) -> None:
        """Pair a round every ``every_s`` seconds, until cancelled."""
        while True:
            checkpoint()
            await asyncio.sleep(every_s)
            try:
                await self.play_round()
            except Exception:
                log.exception("ladder round failed")

    async def online(self, game: str) -> list[Member]:
        """The bots on a game's ladder that are online anywhere, with their ratings."""
        ids = [user_id for user_id in self.members(game) if user_id in self._online]
        stored = await self._ratings(ids, game)
        return [Member(user_id, *self._who[user_id], period_s=self._period_s, ratings={
            pool.pool: pool for pool in stored.get(user_id, [])}) for user_id in ids]

    async def play_round(self) -> list[GameRoom]:
        """Pair the idle bots of every game's ladder and start their games (if this
        process pairs the rounds)."""
        await self.refresh()
        if not await self._roster.leading():
            return []
        self.rounds += 1
        self._online = await self._online_ids()
        started: list[GameRoom] = []
        taken: set[int] = set()  # a bot on two ladders plays one game a round
        for game in sorted({game for games in self.games_of.values() for game in games}):
            online = await self.online(game)
            playing = await self._playing([m.user_id for m in online])
            idle = [member for member in online
                    if member.user_id not in taken and not playing.get(member.user_id)]
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
                self._was_first[game, first.user_id] = True
                self._was_first[game, second.user_id] = False
        return started

    def pairs(self, game: str, idle: list[Member], *, alone: bool = False
              ) -> list[tuple[Member, Member]]:
        """The round's pairs among ``idle``, seat 0 first (see the module docstring);
        ``alone``: these two are the only bots on the game's ladder (they may play again).

        Sorted by rating, each bot in turn takes the nearest one it may play (not its last
        opponent); a search over those choices finds pairs for as many bots as it can (all
        of them, or all but one, whenever that is possible), within a budget of steps, so a
        greedy choice early in the round does not leave two bots that just met as the only
        ones left.
        """
        ranked = sorted(idle, key=lambda member: (member.rating_in(game), member.user_id))

        def may_play(bot: Member, other: Member) -> bool:
            return alone or (self._last.get((game, bot.user_id)) != other.user_id
                             and self._last.get((game, other.user_id)) != bot.user_id)

        budget = [MATCH_BUDGET]

        def search(free: list[Member], skips: int) -> list[tuple[Member, Member]] | None:
            """Pairs for all of ``free`` but at most ``skips`` bots; None if none found."""
            if len(free) <= skips:
                return []
            if budget[0] <= 0:
                return None
            bot, rest = free[0], free[1:]
            rating = bot.rating_in(game)
            choices = sorted((other for other in rest if may_play(bot, other)),
                             key=lambda other: (abs(other.rating_in(game) - rating),
                                                other.user_id))
            for other in choices:
                budget[0] -= 1
                found = search([m for m in rest if m is not other], skips)
                if found is not None:
                    return [(bot, other), *found]
            return search(rest, skips - 1) if skips > 0 else None

        for skips in range(len(ranked) % 2, len(ranked) + 1, 2):
            found = search(ranked, skips)
            if found is not None:
                return [self._seated(game, a, b) for a, b in found]
        return []

    def _seated(self, game: str, a: Member, b: Member) -> tuple[Member, Member]:
        """Seat 0 to the one who had it less often; then to the one who had seat 1 last
        time; then to the lower rated."""
        def key(bot: Member) -> tuple[int, bool, float, int]:
            return (self._firsts[game, bot.user_id],
                    self._was_first.get((game, bot.user_id), False), bot.rating_in(game),
                    bot.user_id)
        return (a, b) if key(a) <= key(b) else (b, a)


__all__ = ["Ladder", "LadderRoster", "MemoryRoster"]
