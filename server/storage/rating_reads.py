"""Reading ratings: a player's pools, a pool's leaderboard, a rating history, a game's
changes, and every update in the order it was made (for ``tessera ratings verify``).

Ratings are written only by the commit queue, with the end of the game that changes them
(``rating_writes``); everything here is a read. ``Store.ratings`` is one of these.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Row, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from server.ratings.glicko2 import Rating

from .models import GameRatingRow, GameRow, RatingRow, UserRow
from .records import GameRatings, PoolRating, RatingChange, RatingPoint, UserKind


@dataclass(frozen=True, slots=True)
class StoredUpdate:
    """One seat's stored rating update, with what its game says (for verification)."""

    id: int
    game_id: str
    seat: int
    user_id: int
    pool: str
    rated_at: datetime
    winner: int | None
    before: Rating
    after: Rating


class RatingReads:
    """The rating queries (see the module docstring)."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def of_users(self, user_ids: Sequence[int], pool: str | None = None
                       ) -> dict[int, list[PoolRating]]:
        """The stored ratings of these users (in ``pool`` only, if given), by user id;
        a user with no rated game has none."""
        found: dict[int, list[PoolRating]] = {user_id: [] for user_id in user_ids}
        if not user_ids:
            return found
        statement = _pool_query().where(RatingRow.user_id.in_(list(user_ids)))
        if pool is not None:
            statement = statement.where(RatingRow.pool == pool)
        async with self._sessions() as session:
            for row in (await session.execute(statement.order_by(RatingRow.pool))).all():
                found[row.RatingRow.user_id].append(_pool_rating(row))
        return found

    async def best(self, pool: str, *, below_deviation: float, limit: int,
                   after: tuple[float, int] | None = None, humans_only: bool = False,
                   user_ids: Sequence[int] | None = None) -> list[PoolRating]:
        """A pool's ratings best first (ties by user id), those whose stored deviation is
        at most ``below_deviation`` (the caller ages them to now, which only raises it);
        ``after``: (rating, user id) of the last one of the previous page. Deleted
        accounts' ratings are kept for the record, not listed."""
        statement = _pool_query().where(RatingRow.pool == pool,
                                        RatingRow.deviation <= below_deviation,
                                        UserRow.deleted_at.is_(None))
        if humans_only:
            statement = statement.where(UserRow.kind != "bot")
        if user_ids is not None:
            statement = statement.where(RatingRow.user_id.in_(list(user_ids)))
        if after is not None:
            statement = statement.where(
                tuple_(-RatingRow.rating, RatingRow.user_id) > tuple_(-after[0], after[1]))
        statement = statement.order_by(RatingRow.rating.desc(), RatingRow.user_id).limit(limit)
        async with self._sessions() as session:
            return [_pool_rating(row) for row in (await session.execute(statement)).all()]

    async def history(self, user_id: int, *, limit: int = 200) -> list[RatingPoint]:
        """A user's rating after each of their latest ``limit`` rated games, oldest first."""
        statement = (select(GameRatingRow).where(GameRatingRow.user_id == user_id)
                     .order_by(GameRatingRow.id.desc()).limit(limit))
        async with self._sessions() as session:
            rows = list(await session.scalars(statement))
        return [RatingPoint(row.game_id, row.pool, row.rated_at, _after(row))
                for row in reversed(rows)]

    async def of_game(self, game_id: str) -> GameRatings | None:
        """A rated game's two changes, seat 0 first; None if it changed no rating."""
        async with self._sessions() as session:
            rows = list(await session.scalars(
                select(GameRatingRow).where(GameRatingRow.game_id == game_id)
                .order_by(GameRatingRow.seat)))
        return of_rows(rows)

    async def updates(self) -> list[StoredUpdate]:
        """Every stored update, in the order they were made."""
        statement = (select(GameRatingRow, GameRow.winner)
                     .join(GameRow, GameRow.id == GameRatingRow.game_id)
                     .order_by(GameRatingRow.id))
        async with self._sessions() as session:
            rows = (await session.execute(statement)).all()
        return [StoredUpdate(row.id, row.game_id, row.seat, row.user_id, row.pool,
                             row.rated_at, winner, _before(row), _after(row))
                for row, winner in rows]

    async def unrated_ends(self) -> list[str]:
        """Rated games that ended ``over`` but changed no rating (there should be none)."""
        rated = select(GameRatingRow.game_id)
        statement = select(GameRow.id).where(GameRow.rated.is_(True),
                                             GameRow.status == "over",
                                             GameRow.id.not_in(rated)).order_by(GameRow.id)
        async with self._sessions() as session:
            return list(await session.scalars(statement))

    async def all_pools(self) -> list[PoolRating]:
        """Every stored rating row."""
        async with self._sessions() as session:
            return [_pool_rating(row) for row in (await session.execute(
                _pool_query().order_by(RatingRow.pool, RatingRow.user_id))).all()]


def of_rows(rows: Sequence[GameRatingRow]) -> GameRatings | None:
    """Both seats' changes from a game's ``game_ratings`` rows (None unless two)."""
    if len(rows) != 2:
        return None
    first, second = (RatingChange(row.seat, row.user_id, _before(row), _after(row))
                     for row in sorted(rows, key=lambda row: row.seat))
    return first, second


def _pool_query() -> Any:
    return select(RatingRow, UserRow.name, UserRow.kind).join(
        UserRow, UserRow.id == RatingRow.user_id)


def _pool_rating(row: Row[Any]) -> PoolRating:
    rating: RatingRow = row.RatingRow
    return PoolRating(user_id=rating.user_id, name=row.name, kind=cast(UserKind, row.kind),
                      pool=rating.pool,
                      rating=Rating(rating.rating, rating.deviation, rating.volatility),
                      rated_at=rating.rated_at, games=rating.games, wins=rating.wins,
                      losses=rating.losses, draws=rating.draws)


def _before(row: GameRatingRow) -> Rating:
    return Rating(row.rating_before, row.deviation_before, row.volatility_before)


def _after(row: GameRatingRow) -> Rating:
    return Rating(row.rating_after, row.deviation_after, row.volatility_after)
