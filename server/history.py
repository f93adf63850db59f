"""History: game lists (games in progress, then finished ones) and records, all from storage.

``list_games`` pages through two stored sources with one cursor: ``L<storage cursor>``
within the games in progress (newest first), ``F<storage cursor>`` within the finished
ones. Both come from the games table, never from the rooms this process holds, so every
node of a cluster answers a listing alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import protocol as p

from . import wire
from .lifecycle import GameStatus
from .ratings.shown import shown_then
from .rooms import refuse

if TYPE_CHECKING:
    from .storage import GamePage, PlayingGame, PlayingPage, Store


class History:
    """The answers to ``list_games``, ``get_game`` and the snapshot of a stored game."""

    def __init__(self, store: Store, rating_period_s: float) -> None:
        self._store = store
        self._rating_period_s = rating_period_s

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
        """Games in progress (newest first), then finished ones (newest first)."""
        want_live = m.status in (None, "playing") and m.result is None
        want_done = m.status in (None, "over")
        cursor = m.cursor
        games: list[p.Summary] = []
        if cursor is None or cursor.startswith("L"):
            if want_live:
                live = await self._playing_page(m, cursor[1:] if cursor else None)
                games = [self._playing_summary(game) for game in live.games]
                if live.next_cursor is not None:
                    return p.GameList(id=m.id, games=tuple(games),
                                      next_cursor=f"L{live.next_cursor}")
            elif cursor is not None:
                raise p.BadRequest("list_games: not a cursor of this listing", request_id=m.id)
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

    async def _playing_page(self, m: p.ListGames, cursor: str | None) -> PlayingPage:
        try:
            return await self._store.list_playing(player=m.player, game_key=m.game,
                                                  limit=m.limit, cursor=cursor)
        except ValueError as exc:
            raise p.BadRequest(f"list_games: {exc}", request_id=m.id) from None

    def _playing_summary(self, game: PlayingGame) -> p.Summary:
        """A game in progress, its players with their ratings as it started."""
        info = game.info
        players = tuple(
            p.User(name=name, kind=kind,
                   rating=None if point is None
                   else shown_then(point, self._rating_period_s, info.created_at))
            for name, kind, point in zip(info.players, info.player_kinds, game.ratings,
                                         strict=True))
        return wire.summary(game_id=info.id, game=info.game_key, options=info.options,
                            clock=p.time_control_from_map(info.clock),
                            players=(players[0], players[1]),
                            status=GameStatus.of(info.status, info.plies), ply=info.plies,
                            result=None, created_ms=wire.epoch_ms(info.created_at),
                            rated=info.rated)

    async def _finished_page(self, m: p.ListGames, limit: int, cursor: str | None
                             ) -> GamePage:
        try:
            return await self._store.list_games(
                player=m.player, winner=m.player if m.result == "win" else None,
                loser=m.player if m.result == "loss" else None, game_key=m.game,
                status=None, limit=limit, cursor=cursor)
        except ValueError as exc:
            raise p.BadRequest(f"list_games: {exc}", request_id=m.id) from None
