"""Every conversion from what storage holds to what the protocol sends, in one place.

Storage knows nothing of the protocol (seats are ints, clocks and options are JSON maps,
times are datetimes); clients see ``protocol`` values. The server turns one into the other
here only: a stored game into a ``Record`` (``get_game``, ``tessera dump``) or a
``Snapshot`` (``watch`` of a finished game), a listing line into a ``Summary``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

import engine
import protocol as p

from .lifecycle import GameStatus
from .storage import GameInfo, GameRatings, MoveRecord, StoredGame


def epoch_ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


def players(names: tuple[str, str], kinds: tuple[str, str]) -> tuple[p.User, p.User]:
    return (p.User(name=names[0], kind=kinds[0]),  # type: ignore[arg-type]
            p.User(name=names[1], kind=kinds[1]))  # type: ignore[arg-type]


def result(winner: int | None, reason: str | None, final: engine.State | None = None
           ) -> p.Result:
    """A stored result; with the final state, a game the rules ended says how
    (``ending``: the engine's reason and scores)."""
    reason = reason or "normal"
    ending = final.ending if final is not None and reason == "normal" else None
    return p.Result(winner=cast(Any, winner), reason=cast(Any, reason),
                    ending=p.Ending.of(ending))


def final_state(info: GameInfo, moves: Iterable[MoveRecord]) -> engine.State | None:
    """The engine's state after a stored game's moves, for its ending; None if the moves no
    longer replay (a game stored under other rules)."""
    try:
        return engine.replay(info.game_key, info.options, (m.move for m in moves))
    except engine.EngineError:
        return None


def rating_updates(changes: GameRatings | None) -> p.RatingUpdates | None:
    """Both seats' stored rating changes as the protocol carries them."""
    if changes is None:
        return None
    first, second = (p.RatingUpdate(
        rating_before=change.before.rating, deviation_before=change.before.deviation,
        volatility_before=change.before.volatility, rating_after=change.after.rating,
        deviation_after=change.after.deviation, volatility_after=change.after.volatility)
        for change in changes)
    return first, second


def played_moves(moves: Iterable[MoveRecord]) -> list[p.PlayedMove]:
    """The played moves of a stored game, in order."""
    return [p.PlayedMove(ply=m.ply, move=m.move, by=cast(Any, m.player), ms_used=m.ms_used,
                         clock_ms=m.clock_ms) for m in moves]


def summary(*, game_id: str, game: str, options: dict[str, Any], clock: p.TimeControl,
            players: tuple[p.User, p.User], status: GameStatus, ply: int,
            result: p.Result | None, created_ms: int, rated: bool = False) -> p.Summary:
    """One line of a game list, for a live game or a stored one alike (its result without
    the ending: a list does not replay games)."""
    listed = None if status.live or result is None else replace(result, ending=None)
    return p.Summary(game_id=game_id, game=game, options=options, clock=clock,
                     players=players, status=cast(Any, status.wire), ply=ply,
                     result=listed, created_ms=created_ms, rated=rated or None)


def stored_summary(info: GameInfo) -> p.Summary:
    """The list line of a stored game (``list_games`` beyond the games in progress)."""
    return summary(game_id=info.id, game=info.game_key, options=info.options,
                   clock=p.time_control_from_map(info.clock),
                   players=players(info.players, info.player_kinds),
                   status=GameStatus.of(info.status, info.plies), ply=info.plies,
                   result=result(info.winner, info.reason), created_ms=epoch_ms(info.created_at),
                   rated=info.rated)


def record(stored: StoredGame) -> p.Record:
    """The protocol's form of a stored game (``get_game`` and ``tessera dump``)."""
    info = stored.info
    status = GameStatus.of(info.status, len(stored.moves))  # as a snapshot says it
    finished = not status.live
    final = final_state(info, stored.moves) if finished and info.reason == "normal" else None
    return p.Record(
        game_id=info.id, game=info.game_key, options=info.options,
        clock=p.time_control_from_map(info.clock),
        players=players(info.players, info.player_kinds),
        status=cast(Any, status.wire),
        moves=tuple(played_moves(stored.moves)),
        result=result(info.winner, info.reason, final) if finished else None,
        created_ms=epoch_ms(info.created_at),
        ended_ms=epoch_ms(info.ended_at) if info.ended_at else None,
        rated=info.rated or None, rating_changes=rating_updates(stored.ratings))


def stored_snapshot(stored: StoredGame) -> p.Snapshot:
    """A snapshot of a game from its stored record alone (a finished game, or one no room
    holds): no clock readings, since no clock is running."""
    wire = record(stored)
    return p.Snapshot(
        game_id=wire.game_id, game=wire.game, options=wire.options, clock=wire.clock,
        players=wire.players, status=wire.status, moves=wire.moves, clocks_ms=None,
        to_move=cast(Any, len(wire.moves) % 2), ply=len(wire.moves), result=wire.result,
        seq=max(1, stored.last_seq), rated=wire.rated, rating_changes=wire.rating_changes)
