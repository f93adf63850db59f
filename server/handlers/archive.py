"""History: list_games and get_game."""

from __future__ import annotations

from typing import TYPE_CHECKING

import protocol as p

if TYPE_CHECKING:
    from ..session import Session


async def on_list_games(s: Session, m: p.ListGames) -> p.ServerMessage:
    return await s.app.history.list_games(m)


async def on_get_game(s: Session, m: p.GetGame) -> p.ServerMessage:
    return p.GameRecord(id=m.id, record=await s.app.history.record(m.game_id))
