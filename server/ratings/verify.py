"""Recompute every pool from the stored games, in order, and report any difference.

The stored ratings are derived data: each ``ratings`` row must be the fold of its
player's rated games, and each game's stored before/after must be what Glicko-2 gives
from the previous game's after (aged for the time between, ``rating_writes.aged_to``).
:func:`differences` replays the stored updates in the order they were made (their ids)
from the new player's rating and lists every value that is not the recomputed one, and
every rated game that ended without changing a rating. ``tessera ratings verify`` prints
them and exits 1 if there are any; ``tessera chaos`` runs it after its kills.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby

from server.storage import PoolRating, Store, StoredUpdate
from server.storage.rating_writes import aged_to, score_of

from .glicko2 import DEFAULT, Rating, rate_game


@dataclass(slots=True)
class _Standing:
    rating: Rating = DEFAULT
    rated_at: datetime | None = None
    games: int = 0
    wins: int = 0
    losses: int = 0
    draws: int = 0


async def verify(store: Store, period_s: float) -> list[str]:
    """The differences between the stored ratings and their recomputation (none: [])."""
    found = differences(await store.ratings.updates(), await store.ratings.all_pools(),
                        period_s)
    found += [f"game {game_id}: rated and over, but no rating changed"
              for game_id in await store.ratings.unrated_ends()]
    return found


def differences(updates: list[StoredUpdate], pools: list[PoolRating],
                period_s: float) -> list[str]:
    """What differs between the stored updates and rows and a replay of the updates."""
    standings: dict[tuple[int, str], _Standing] = defaultdict(_Standing)
    found: list[str] = []
    for game_id, seats in groupby(updates, key=lambda update: update.game_id):
        pair = sorted(seats, key=lambda update: update.seat)
        if [update.seat for update in pair] != [0, 1]:
            found.append(f"game {game_id}: rating rows for seats "
                         f"{[update.seat for update in pair]}, not [0, 1]")
            continue
        first = pair[0]
        befores = []
        for update in pair:
            standing = standings[update.user_id, update.pool]
            befores.append(aged_to(standing.rating, standing.rated_at, update.rated_at,
                                   period_s))
        afters = [after.rounded() for after in
                  rate_game(befores[0], befores[1], score_of(0, first.winner))]
        for update in pair:
            seat = update.seat
            if update.before != befores[seat]:
                found.append(f"game {game_id} seat {seat}: before {update.before}, "
                             f"recomputed {befores[seat]}")
            if update.after != afters[seat]:
                found.append(f"game {game_id} seat {seat}: after {update.after}, "
                             f"recomputed {afters[seat]}")
            standing = standings[update.user_id, update.pool]
            score = score_of(seat, first.winner)
            standing.rating, standing.rated_at = afters[seat], update.rated_at
            standing.games += 1
            standing.wins += score == 1.0
            standing.losses += score == 0.0
            standing.draws += score == 0.5
    stored = {(pool.user_id, pool.pool): pool for pool in pools}
    for key in sorted(set(stored) | set(standings)):
        row, again = stored.get(key), standings.get(key)
        who = f"user {key[0]} in {key[1]}"
        if row is None:
            found.append(f"{who}: rated games but no rating row")
        elif again is None:
            found.append(f"{who}: a rating row but no rated game")
        elif ((row.rating, row.rated_at, row.games, row.wins, row.losses, row.draws)
              != (again.rating, again.rated_at, again.games, again.wins, again.losses,
                  again.draws)):
            found.append(f"{who}: stored {row.rating} after {row.games} games "
                         f"({row.wins}/{row.losses}/{row.draws}), recomputed "
                         f"{again.rating} after {again.games} games "
                         f"({again.wins}/{again.losses}/{again.draws})")
    return found
