"""Rematch offers: after a game is over, either player offers the same game again.

The new game has the same game, options, clock and rated flag, with the colours swapped
(seat 0 of the old game takes seat 1), and starts in the process that accepts it. An offer
is kept per finished game in the topology's ``RematchStore`` (in memory alone, in Redis
on a cluster, where the players may be on different nodes): the other player accepts
(``accept_rematch``, or offering too) or declines, once; it lapses when either player goes
offline everywhere, and both hear ``rematch_ended``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import protocol as p

from .lobby import Lobby, Offer
from .offers import Online, RematchOffer, RematchStore
from .rooms import GameRoom, refuse

if TYPE_CHECKING:
    from .games import Games


class Rematches:
    """The rematch requests (see the module docstring)."""

    def __init__(self, games: Games, lobby: Lobby, store: RematchStore) -> None:
        self._games = games
        self._lobby = lobby
        self._store = store
        lobby.on_offline.append(self.user_offline)

    async def offer(self, user_id: int, game_id: str) -> None:
        """``user_id`` offers a rematch of ``game_id`` (accepting one already offered)."""
        room, seat = await finished_seat(self._games, user_id, game_id)
        await self._both_online(room)  # both must be online to be asked
        first, second = (player.user_id for player in room.players)
        outcome = await self._store.offer(RematchOffer(game_id, seat, (first, second)))
        if outcome == "accept":
            await self._start(room)
            return
        await self._tell(room, p.RematchOffered(game_id=game_id, by=seat))  # type: ignore[arg-type]

    async def accept(self, user_id: int, game_id: str) -> None:
        """Start the rematch the other player offered: ``game_started``, then
        ``rematch_ended`` (accepted, with the new game's id) to both."""
        room, seat = await finished_seat(self._games, user_id, game_id)
        missing = refuse(p.ErrorCode.NOT_FOUND, "no rematch offer from your opponent", game_id)
        held = await self._store.get(game_id)
        if held is None or held.seat == seat:
            raise missing
        await self._both_online(room)
        if await self._store.close(game_id, not_seat=seat) is None:
            raise missing  # taken or withdrawn meanwhile
        await self._start(room)

    async def decline(self, user_id: int, game_id: str, message: str | None = None) -> None:
        """Refuse the other's offer, or withdraw one's own (``message``: why, passed on)."""
        room, _ = await finished_seat(self._games, user_id, game_id)
        if await self._store.close(game_id) is None:
            raise refuse(p.ErrorCode.NOT_FOUND, "no rematch offer for this game", game_id)
        await self._tell(room, p.RematchEnded(game_id=game_id, reason="declined",
                                              message=message))

    async def user_offline(self, user_id: int) -> None:
        """A user went offline everywhere: their offers (either way) lapse, and the other
        player hears ``rematch_ended`` (lapsed)."""
        for offer in await self._store.withdraw_all(user_id):
            frame = p.event_frame(p.RematchEnded(game_id=offer.game_id, reason="lapsed"))
            room = await self._games.any(offer.game_id)
            for player in room.players if room is not None else ():
                if player.user_id != user_id:
                    await self._lobby.tell(player.user_id, player.name, [frame])

    async def _both_online(self, room: GameRoom) -> None:
        found = await self._lobby.find_all([player.name for player in room.players])
        if found[0] is None or found[1] is None:
            gone = room.players[0 if found[0] is None else 1].name
            raise refuse(p.ErrorCode.CONFLICT, f"{gone} is not online", room.game_id)

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
        await self._lobby.start_game(offer, seats, {first.user_id: ended,
                                                    second.user_id: ended})

    async def _tell(self, room: GameRoom, event: p.RematchOffered | p.RematchEnded) -> None:
        frame = p.event_frame(event)
        for player in room.players:
            await self._lobby.tell(player.user_id, player.name, [frame])


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


__all__ = ["Rematches", "finished_seat"]
