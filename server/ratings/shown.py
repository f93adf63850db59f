"""Stored ratings as players see them: aged to now, rounded, flagged provisional.

A stored rating is as its player's last rated game left it; its deviation has grown since
(``glicko2.age`` over the time elapsed / the period length), so whether it is provisional
(deviation above 110, shown with ``?``, left off leaderboards) is decided at the moment it
is shown.
"""

from __future__ import annotations

from datetime import UTC, datetime

import protocol as p
from server.storage import PoolRating, RatingPoint

from .glicko2 import Rating, age, is_provisional


def aged_now(pool: PoolRating, period_s: float, now: datetime | None = None) -> Rating:
    """The stored rating with its deviation grown to ``now``."""
    now = datetime.now(UTC) if now is None else now
    return age(pool.rating, max(0.0, (now - pool.rated_at).total_seconds()) / period_s)


def shown(pool: PoolRating, period_s: float, *, record: bool = False,
          now: datetime | None = None) -> p.PoolRating:
    """The protocol's form of a stored rating (``record``: with games and results)."""
    rating = aged_now(pool, period_s, now)
    return p.PoolRating(
        game=pool.pool, rating=round(rating.rating), deviation=round(rating.deviation),
        provisional=is_provisional(rating),
        games=pool.games if record else None, wins=pool.wins if record else None,
        losses=pool.losses if record else None, draws=pool.draws if record else None)


def shown_then(point: RatingPoint, period_s: float, at: datetime) -> p.PoolRating:
    """A player's rating as it stood at ``at`` (a game's start), from their last update
    before it: what the players of a game in progress are listed with."""
    rating = age(point.rating, max(0.0, (at - point.rated_at).total_seconds()) / period_s)
    return p.PoolRating(game=point.pool, rating=round(rating.rating),
                        deviation=round(rating.deviation), provisional=is_provisional(rating))
