"""A rated game's two rating updates, made inside the transaction that stores its end.

``write_batch`` calls :func:`rate_finished_game` for a ``GameFinished`` that carries
``RatedPlayers`` once the game's row has changed to ``over`` (an aborted game, or an end
refused because the game was already over, rates no one). Both players' rating rows are
read (locked on PostgreSQL, in user id order so two transactions never wait on each other
crosswise), each aged to the end of the game, updated by ``glicko2.rate_game``, rounded to
the storage form, and written back with one ``game_ratings`` row per seat. Since it all
commits or rolls back with the game's end, a crash anywhere leaves the ratings equal to
the fold of the stored games (``server.ratings.verify``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Connection, Table

from server.ratings.glicko2 import DEFAULT, Rating, age, rate_game

from .items import GameFinished, RatedPlayers
from .records import GameRatings, RatingChange


class StoredRating(Protocol):
    """A ratings row as read back: what the update needs of it."""

    rating: float
    deviation: float
    volatility: float
    rated_at: datetime
    games: int
    wins: int
    losses: int
    draws: int


class RatingStatements(Protocol):
    """The rating statements of a batch writer (Core, or SQLite's SQL text)."""

    def read_rating(self, conn: Connection, user_id: int, pool: str) -> StoredRating | None:
        """A player's rating row in a pool, locked until the commit (PostgreSQL); None if
        they have none yet."""

    def write_rating(self, conn: Connection, row: dict[str, Any], *, exists: bool) -> None:
        """Insert (``exists`` False) or update a player's rating row."""

    def insert(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        """Insert rows that all have the same keys."""


def score_of(seat: int, winner: int | None) -> float:
    """A seat's score in a finished game: 1 won, 0 lost, 0.5 drawn (no winner)."""
    return 0.5 if winner is None else 1.0 if winner == seat else 0.0


def aged_to(stored: Rating, since: datetime | None, at: datetime, period_s: float) -> Rating:
    """The rating a game ending at ``at`` starts from: ``stored`` (as its player's last
    rated game at ``since`` left it; None: a new player) with its deviation grown for the
    time since, in the storage form."""
    if since is None:
        return stored
    periods = max(0.0, (at - since).total_seconds()) / period_s
    return age(stored, periods).rounded()


def rate_finished_game(conn: Connection, item: GameFinished, statements: RatingStatements,
                       game_ratings: Table) -> GameRatings:
    """Rate both players of a game whose end was just stored (see the module docstring)."""
    rated = item.rated
    assert rated is not None and item.status == "over"
    rows: dict[int, StoredRating | None] = {
        user_id: statements.read_rating(conn, user_id, rated.pool)
        for user_id in sorted(rated.player_ids)}
    befores = [_before(rows[user_id], item.ended_at, rated) for user_id in rated.player_ids]
    afters = [after.rounded() for after in
              rate_game(befores[0], befores[1], score_of(0, item.winner))]
    changes = tuple(RatingChange(seat, user_id, befores[seat], afters[seat])
                    for seat, user_id in enumerate(rated.player_ids))
    for change in changes:
        statements.write_rating(conn, _rating_row(change, rows[change.user_id], item, rated),
                                exists=rows[change.user_id] is not None)
    statements.insert(conn, game_ratings, [
        {"game_id": item.game_id, "seat": change.seat, "user_id": change.user_id,
         "pool": rated.pool, "rated_at": item.ended_at,
         "rating_before": change.before.rating, "deviation_before": change.before.deviation,
         "volatility_before": change.before.volatility,
         "rating_after": change.after.rating, "deviation_after": change.after.deviation,
         "volatility_after": change.after.volatility}
        for change in changes])
    return changes[0], changes[1]


def _before(row: StoredRating | None, at: datetime, rated: RatedPlayers) -> Rating:
    if row is None:
        return DEFAULT
    return aged_to(Rating(row.rating, row.deviation, row.volatility), row.rated_at, at,
                   rated.period_s)


def _rating_row(change: RatingChange, row: StoredRating | None, item: GameFinished,
                rated: RatedPlayers) -> dict[str, Any]:
    score = score_of(change.seat, item.winner)
    return {
        "user_id": change.user_id, "pool": rated.pool,
        "rating": change.after.rating, "deviation": change.after.deviation,
        "volatility": change.after.volatility, "rated_at": item.ended_at,
        "games": (row.games if row else 0) + 1,
        "wins": (row.wins if row else 0) + (score == 1.0),
        "losses": (row.losses if row else 0) + (score == 0.0),
        "draws": (row.draws if row else 0) + (score == 0.5),
    }
