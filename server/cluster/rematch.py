"""Rematch offers across nodes: the players of a finished game may sit on different nodes.

A lone server keeps its offers in memory (``server.rematch.Rematches``); a node keeps them
in Redis, one per finished game, so the offer made on one node is answered on another, once:
offering, accepting, declining and lapsing are each one Lua script. Events go to the
players' connections on every node they are on through the bus (``ClusterLobby.to_user``,
as challenges do). The node that accepts starts the new game (same game, options, clock and
rated flag, colours swapped) and owns it; the other player is seated through their node,
``game_started`` first, then ``rematch_ended``.

An offer lapses when either player goes offline everywhere (``ClusterLobby.left``, and a
dead node's users in ``ClusterLobby.reap``).

Redis layout (under ``tessera:{cluster}:``)::

    rematches                  hash  game id -> "offering seat:user id 0:user id 1"
    rematches:user:{user id}   set   the games a user has an offer open for
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import protocol as p
from server.lobby import Offer
from server.rematch import finished_seat
from server.rooms import GameRoom, refuse

from .presence import Online

if TYPE_CHECKING:
    from .node import ClusterNode

_OFFER = """
-- KEYS: rematches, seat 0's set, seat 1's set; ARGV: game id, seat, value
-- 'offered' (new), 'again' (mine already), or 'accept' (the other's, now closed)
local held = redis.call('HGET', KEYS[1], ARGV[1])
if held then
  if string.sub(held, 1, 1) == ARGV[2] then return 'again' end
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('SREM', KEYS[2], ARGV[1])
  redis.call('SREM', KEYS[3], ARGV[1])
  return 'accept'
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
return 'offered'
"""
_CLOSE = """
-- KEYS: rematches; ARGV: game id, my seat ('' for any), users' prefix
-- closes an offer (not one's own if a seat is given): 'closed' + the value, or 'none'
local held = redis.call('HGET', KEYS[1], ARGV[1])
if not held then return {'none'} end
if ARGV[2] ~= '' and string.sub(held, 1, 1) == ARGV[2] then return {'own'} end
local a = string.find(held, ':', 1, true)
local b = string.find(held, ':', a + 1, true)
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('SREM', ARGV[3] .. string.sub(held, a + 1, b - 1), ARGV[1])
redis.call('SREM', ARGV[3] .. string.sub(held, b + 1), ARGV[1])
return {'closed', held}
"""


class ClusterRematches:
    """The rematch requests of one node (see the module docstring); the same methods as
    ``server.rematch.Rematches``."""

    def __init__(self, cluster: ClusterNode) -> None:
        self.cluster = cluster
        redis = cluster.bus.redis
        self._offer = redis.register_script(_OFFER)
        self._close = redis.register_script(_CLOSE)

    async def offer(self, user_id: int, game_id: str) -> None:
        """``user_id`` offers a rematch of ``game_id`` (accepting one already offered)."""
        room, seat = await finished_seat(self.cluster.app.games, user_id, game_id)
        await self._both_online(room)  # both must be online to be asked
        k = self.cluster.keys
        first, second = (player.user_id for player in room.players)
        outcome = await self._offer(
            keys=[k.rematches, k.rematches_of(first), k.rematches_of(second)],
            args=[game_id, seat, f"{seat}:{first}:{second}"])
        if outcome == b"accept":
            await self._start(room)
            return
        await self._tell(room, p.RematchOffered(game_id=game_id, by=seat))  # type: ignore[arg-type]

    async def accept(self, user_id: int, game_id: str) -> None:
        """Start the rematch the other player offered: ``game_started``, then
        ``rematch_ended`` (accepted, with the new game's id) to both."""
        room, seat = await finished_seat(self.cluster.app.games, user_id, game_id)
        missing = refuse(p.ErrorCode.NOT_FOUND, "no rematch offer from your opponent", game_id)
        held = await self.cluster.bus.redis.hget(self.cluster.keys.rematches, game_id)
        if held is None or held[:1] == str(seat).encode():
            raise missing  # (as a lone server answers: before asking who is online)
        await self._both_online(room)
        if (await self._run_close(game_id, str(seat)))[0] != b"closed":
            raise missing  # taken or withdrawn meanwhile
        await self._start(room)

    async def decline(self, user_id: int, game_id: str, message: str | None = None) -> None:
        """Refuse the other's offer, or withdraw one's own (``message``: why, passed on)."""
        room, _ = await finished_seat(self.cluster.app.games, user_id, game_id)
        if (await self._run_close(game_id, ""))[0] != b"closed":
            raise refuse(p.ErrorCode.NOT_FOUND, "no rematch offer for this game", game_id)
        await self._tell(room, p.RematchEnded(game_id=game_id, reason="declined",
                                              message=message))

    def member_left(self, user_id: int) -> None:
        """A lone server's hook (a user's last connection on this node): on a cluster the
        user may still be on another node, so ``withdraw_all`` is called when they are
        offline everywhere instead."""

    async def withdraw_all(self, user_id: int) -> None:
        """A user went offline everywhere: their offers (either way) lapse, and the other
        player hears ``rematch_ended`` (lapsed) on whichever nodes they are on."""
        redis, k = self.cluster.bus.redis, self.cluster.keys
        for raw in await redis.smembers(k.rematches_of(user_id)):
            game_id = raw.decode() if isinstance(raw, bytes) else str(raw)
            outcome = await self._run_close(game_id, "")
            if outcome[0] != b"closed":
                continue
            _, *users = outcome[1].decode().split(":")
            frame = p.event_frame(p.RematchEnded(game_id=game_id, reason="lapsed"))
            for other in (int(u) for u in users if int(u) != user_id):
                await self.cluster.lobby.to_user(other, sorted(self.cluster.live_nodes),
                                                 [frame])

    # -- helpers -------------------------------------------------------------------------
    async def _run_close(self, game_id: str, seat: str) -> list[Any]:
        k = self.cluster.keys
        result: list[Any] = await self._close(
            keys=[k.rematches], args=[game_id, seat, k.rematches_of_prefix])
        return result

    async def _both_online(self, room: GameRoom) -> tuple[Online, Online]:
        found = [await self.cluster.lobby.find(player.name) for player in room.players]
        if found[0] is None or found[1] is None:
            gone = room.players[0 if found[0] is None else 1].name
            raise refuse(p.ErrorCode.CONFLICT, f"{gone} is not online", room.game_id)
        return found[0], found[1]

    async def _start(self, room: GameRoom) -> None:
        """The rematch of ``room`` here, colours swapped; ``rematch_ended`` after
        ``game_started`` to both."""
        first, second = room.players
        seats = (Online(second.user_id, second.name, second.kind),
                 Online(first.user_id, first.name, first.kind))

        def ended(new: GameRoom) -> list[bytes]:
            return [p.event_frame(p.RematchEnded(game_id=room.game_id, reason="accepted",
                                                 new_game_id=new.game_id))]

        offer = Offer(room.key, dict(room.state.options), room.control, room.rated)
        await self.cluster.lobby.start_game(offer, seats, {first.user_id: ended,
                                                           second.user_id: ended})

    async def _tell(self, room: GameRoom, event: p.RematchOffered | p.RematchEnded) -> None:
        frame = p.event_frame(event)
        for player in room.players:
            found = await self.cluster.lobby.find(player.name)
            await self.cluster.lobby.to_user(player.user_id, found.nodes if found else (),
                                             [frame])


__all__ = ["ClusterRematches"]
