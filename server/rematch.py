"""Rematch offers: after a game is over, either player offers the same game again.

The new game has the same game, options, clock and rated flag, with the colours swapped
(seat 0 of the old game takes seat 1). An offer is in memory only, kept per finished game:
the other player accepts (``accept_rematch``, or offering too) or declines; it lapses when
either player leaves (their last connection closes), and both hear ``rematch_ended``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import protocol as p

from .lobby import Lobby, Member, Offer
from .rooms import GameRoom, refuse

if TYPE_CHECKING:
    from .games import Games

StartGame = Callable[[Offer, tuple[Member, Member]], Awaitable[GameRoom]]


class RematchOffers(Protocol):
    """What the rematch requests need: ``Rematches`` here, ``server.cluster.rematch`` on a
    cluster node."""

    async def offer(self, user_id: int, game_id: str) -> None: ...

    async def accept(self, user_id: int, game_id: str) -> None: ...

    async def decline(self, user_id: int, game_id: str, message: str | None = None
                      ) -> None: ...


@dataclass(frozen=True, slots=True)
class _Offered:
    room: GameRoom
    by: int  # the seat that offered


class Rematches:
    """The open rematch offers of this server (see the module docstring)."""

    def __init__(self, games: Games, lobby: Lobby, start: StartGame) -> None:
        self._games = games
        self._lobby = lobby
        self._start = start
        self._offers: dict[str, _Offered] = {}

    async def offer(self, user_id: int, game_id: str) -> None:
        """``user_id`` offers a rematch of ``game_id`` (accepting one already offered)."""
        room, seat = await finished_seat(self._games, user_id, game_id)
        offered = self._offers.get(game_id)
        if offered is not None and offered.by != seat:
            await self.accept(user_id, game_id)
            return
        self._members(room)  # both must be here to be asked
        if offered is None:
            self._offers[game_id] = _Offered(room, seat)
        self._tell(room, p.RematchOffered(game_id=game_id, by=seat))  # type: ignore[arg-type]

    async def accept(self, user_id: int, game_id: str) -> None:
        """Start the rematch the other player offered: ``game_started``, then
        ``rematch_ended`` (accepted, with the new game's id) to both."""
        room, seat = await finished_seat(self._games, user_id, game_id)
        offered = self._offers.get(game_id)
        if offered is None or offered.by == seat:
            raise refuse(p.ErrorCode.NOT_FOUND, "no rematch offer from your opponent",
                         game_id)
        first, second = self._members(room)
        del self._offers[game_id]
        offer = Offer(room.key, dict(room.state.options), room.control, room.rated)
        new = await self._start(offer, (second, first))  # the colours swapped
        self._tell(room, p.RematchEnded(game_id=game_id, reason="accepted",
                                        new_game_id=new.game_id))

    async def decline(self, user_id: int, game_id: str, message: str | None = None) -> None:
        """Refuse the other's offer, or withdraw one's own (``message``: why, passed on)."""
        room, _ = await finished_seat(self._games, user_id, game_id)
        if self._offers.pop(game_id, None) is None:
            raise refuse(p.ErrorCode.NOT_FOUND, "no rematch offer for this game", game_id)
        self._tell(room, p.RematchEnded(game_id=game_id, reason="declined", message=message))

    def member_left(self, user_id: int) -> None:
        """A player's last connection closed: their offers (either way) lapse."""
        for game_id, offered in list(self._offers.items()):
            if offered.room.seat_of(user_id) is not None:
                del self._offers[game_id]
                self._tell(offered.room, p.RematchEnded(game_id=game_id, reason="lapsed"))

    def _members(self, room: GameRoom) -> tuple[Member, Member]:
        members = [self._lobby.members.get(player.user_id) for player in room.players]
        if members[0] is None or members[1] is None:
            gone = room.players[0 if members[0] is None else 1].name
            raise refuse(p.ErrorCode.CONFLICT, f"{gone} is not online", room.game_id)
        return members[0], members[1]

    def _tell(self, room: GameRoom, event: p.RematchOffered | p.RematchEnded) -> None:
        frame = p.event_frame(event)
        for player in room.players:
            member = self._lobby.members.get(player.user_id)
            if member is not None:
                member.send(frame)


async def finished_seat(games: Games, user_id: int, game_id: str) -> tuple[GameRoom, int]:
    """The finished game ``game_id`` and ``user_id``'s seat in it, or the refusal a
    rematch request gets (no such game, not a player of it, not over yet)."""
    room = await games.any(game_id)
    if room is None:
        raise refuse(p.ErrorCode.NOT_FOUND, f"no game {game_id}", game_id)
    seat = room.seat_of(user_id)
    if seat is None:
        raise refuse(p.ErrorCode.FORBIDDEN, "you did not play in this game", game_id)
    if room.status.live:
        raise refuse(p.ErrorCode.CONFLICT, "the game is not over yet", game_id)
    return room, seat
