"""The bot ladder of a cluster: bots on any nodes are paired with each other.

A lone server's ``server.ladder.Ladder`` knows its members in memory; a node records them
in Redis (``ladder`` hash: every ladder bot of the cluster, whichever node it joined on)
and reads them back at each round. One node at a time pairs the rounds: the one holding
``ladder:leader`` (set-if-absent with expiry, extended by its holder each round, in one
Lua script); the others only refresh their view (for ``ladder_standings``). The leader
pairs the bots that are online anywhere (presence) and in no game anywhere (PostgreSQL),
by their stored ratings, with ``Ladder.pairs``, and starts each game itself through
``ClusterLobby.start_game`` (the bots' connections on other nodes are seated there).

What the ladder remembers (last opponents, seats) is the leader's memory: a new leader
starts without it, as a restarted server does. A bot leaves the ladder with
``ladder_leave`` or when it is offline everywhere (``ClusterLobby.left``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgpack

import protocol as p
from server.ladder import Ladder
from server.lobby import Member, Offer
from server.rooms import GameRoom

from .presence import Online

if TYPE_CHECKING:
    from .node import ClusterNode

_LEAD = """
-- KEYS: the leader key; ARGV: me, ttl ms. 1 if I lead (now or still), else 0
local held = redis.call('GET', KEYS[1])
if not held then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""


class ClusterLadder(Ladder):
    """A node's part of the cluster's ladder (see the module docstring)."""

    def __init__(self, cluster: ClusterNode, me: str) -> None:
        app = cluster.app
        super().__init__(app.lobby, lambda _: False, self._start_here, clock=app.ladder.clock)
        app.lobby.on_left.remove(self.leave)  # a bot may be on another node still
        self.cluster = cluster
        self.me = me
        self.ttl_ms = int(max(5.0, 3 * app.settings.ladder_round_s) * 1000)
        self._lead = cluster.bus.redis.register_script(_LEAD)
        self._who: dict[int, tuple[str, str]] = {}  # user id -> name, kind
        self._online: set[int] = set()  # this round's: online on any node

    async def enter(self, member: Member, games: list[str]) -> None:
        self.join(member, games)  # refused here for a human or an unknown game
        await self.cluster.bus.redis.hset(self.cluster.keys.ladder, str(member.user_id),
                                          msgpack.packb([member.name, member.kind,
                                                         sorted(games)]))

    async def exit(self, user_id: int) -> None:
        self.leave(user_id)
        await self.cluster.bus.redis.hdel(self.cluster.keys.ladder, str(user_id))

    async def refresh(self) -> None:
        """The cluster's ladder bots, as recorded in Redis."""
        redis = self.cluster.bus.redis
        records: dict[bytes, bytes] = await redis.hgetall(  # type: ignore[assignment]
            self.cluster.keys.ladder)
        games_of: dict[int, frozenset[str]] = {}
        who: dict[int, tuple[str, str]] = {}
        for raw_id, record in records.items():
            name, kind, games = msgpack.unpackb(record)
            games_of[int(raw_id)] = frozenset(games)
            who[int(raw_id)] = (name, kind)
        self.games_of, self._who = games_of, who

    def who(self, user_id: int) -> p.User | None:
        known = self._who.get(user_id)
        return None if known is None else p.User(name=known[0],
                                                 kind=known[1])  # type: ignore[arg-type]

    async def leading(self) -> bool:
        k = self.cluster.keys
        return bool(await self._lead(keys=[k.ladder_leader], args=[self.me, self.ttl_ms]))

    async def play_round(self) -> list[GameRoom]:
        await self.refresh()
        if not await self.leading():
            return []
        self._online = {user.user_id for user in await self.cluster.lobby.presence.everyone()}
        return await super().play_round()

    async def online(self, game: str) -> list[Member]:
        ids = [user_id for user_id in self.members(game) if user_id in self._online]
        stored = await self.cluster.app.store.ratings.of_users(ids, game)
        period_s = self.cluster.app.lobby.rating_period_s
        bots = []
        for user_id in ids:
            name, kind = self._who[user_id]
            bots.append(Member(user_id, name, kind, period_s=period_s, ratings={
                pool.pool: pool for pool in stored.get(user_id, [])}))
        return bots

    async def busy(self, user_id: int) -> bool:
        return bool(await self.cluster.active_games(user_id))

    async def _start_here(self, offer: Offer, bots: tuple[Member, Member]) -> GameRoom:
        first, second = (Online(bot.user_id, bot.name, bot.kind) for bot in bots)
        return await self.cluster.lobby.start_game(offer, (first, second), {})


__all__ = ["ClusterLadder"]
