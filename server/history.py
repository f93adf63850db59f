"""History: game lists (live games from memory, then finished ones from storage) and records.

``list_games`` pages through two sources with one cursor: ``L<created_ms>.<game_id>``
within the games in progress (newest first), ``F<storage cursor>`` within the finished ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import protocol as p

from . import wire
from .rooms import GameRoom, refuse

if TYPE_CHECKING:
    from .games import Games
    from .storage import GamePage, Store


class History:
    """The answers to ``list_games``, ``get_game`` and the snapshot of a stored game."""

    def __init__(self, games: Games, store: Store) -> None:
        self._games = games
        self._store = store

    async def record(self, game_id: str) -> p.Record:
        stored = await self._store.get_game(game_id)
        if stored is None:
            raise refuse(p.ErrorCode.NOT_FOUND, f"no game {game_id}", game_id)
        return wire.record(stored)

    async def stored_snapshot(self, game_id: str) -> p.Snapshot:
        stored = await self._store.get_game(game_id)
        if stored is None:
            raise refuse(p.ErrorCode.NOT_FOUND, f"no game {game_id}", game_id)
        return wire.stored_snapshot(stored)

    async def list_games(self, m: p.ListGames) -> p.GameList:
        """Games in progress (from memory, newest first), then finished ones (from storage)."""
        want_live = m.status in (None, "playing") and m.result is None
        want_done = m.status in (None, "over")
        cursor = m.cursor
        games: list[p.Summary] = []
        if cursor is None or cursor.startswith("L"):
            after = _live_cursor(cursor, m.id) if cursor else None
            rooms = self._live_rooms(m.player, m.game, after) if want_live else []
            games = [_live_summary(room) for room in rooms[:m.limit]]
            if len(rooms) > m.limit:
                last = rooms[m.limit - 1]
                return p.GameList(id=m.id, games=tuple(games),
                                  next_cursor=f"L{last.created_ms}.{last.game_id}")
            done_cursor = None
        elif cursor.startswith("F") and want_done:
            done_cursor = cursor[1:] or None
        else:
            raise p.BadRequest("list_games: not a cursor of this listing", request_id=m.id)
        if not want_done:
            return p.GameList(id=m.id, games=tuple(games))
        room_left = m.limit - len(games)
        page = await self._finished_page(m, max(1, room_left), done_cursor)
        if room_left == 0:
            return p.GameList(id=m.id, games=tuple(games),
                              next_cursor="F" if page.games else None)
        games += [wire.stored_summary(info) for info in page.games]
        return p.GameList(id=m.id, games=tuple(games),
                          next_cursor=f"F{page.next_cursor}" if page.next_cursor else None)

    def _live_rooms(self, player: str | None, game: str | None,
                    after: tuple[int, str] | None) -> list[GameRoom]:
        """Games in progress matching the filters, newest first, after the cursor's game."""
        name = player.lower() if player is not None else None
        rooms = [room for room in self._games
                 if (game is None or room.key == game)
                 and (name is None or any(s.name.lower() == name for s in room.players))
                 and (after is None or (room.created_ms, room.game_id) < after)]
        rooms.sort(key=lambda room: (room.created_ms, room.game_id), reverse=True)
        return rooms

    async def _finished_page(self, m: p.ListGames, limit: int, cursor: str | None
                             ) -> GamePage:
        try:
            return await self._store.list_games(
                player=m.player, winner=m.player if m.result == "win" else None,
                loser=m.player if m.result == "loss" else None, game_key=m.game,
                status=None, limit=limit, cursor=cursor)
        except ValueError as exc:
            raise p.BadRequest(f"list_games: {exc}", request_id=m.id) from None


def _live_cursor(cursor: str, request_id: int) -> tuple[int, str]:
    created, _, game_id = cursor[1:].partition(".")
    if not created.isdigit() or not game_id:
        raise p.BadRequest("list_games: not a cursor of this listing", request_id=request_id)
    return int(created), game_id


def _live_summary(room: GameRoom) -> p.Summary:
    players: Any = (room.players[0].wire(), room.players[1].wire())
    return wire.summary(game_id=room.game_id, game=room.key, options=dict(room.state.options),
                        clock=room.control, players=players, status=room.status,
                        ply=room.state.ply, result=room.result, created_ms=room.created_ms,
                        rated=room.rated)
