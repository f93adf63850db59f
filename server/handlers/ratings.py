"""Ratings and competition: leaderboard, profile, rematch offers, the bot ladder."""

from __future__ import annotations

from typing import TYPE_CHECKING

import protocol as p

from ..ratings.glicko2 import MAX_DEVIATION, PROVISIONAL_DEVIATION
from ..ratings.shown import shown
from ..storage import PoolRating
from ..wire import epoch_ms, stored_summary

if TYPE_CHECKING:
    from ..session import Session

LEADERBOARD_PAGE = 50
PROFILE_GAMES = 10
PROFILE_HISTORY = 200


async def on_leaderboard(s: Session, m: p.GetLeaderboard) -> p.ServerMessage:
    """Established ratings only: a stored deviation above 110 is provisional already, and
    one at most 110 may have grown past it since (aged to now here)."""
    rank, after = _cursor(m.cursor, m.id)
    period_s = s.app.settings.rating_period_s
    standings: list[p.Standing] = []
    more = True
    while len(standings) < LEADERBOARD_PAGE and more:
        rows = await s.app.store.ratings.best(
            m.game, below_deviation=PROVISIONAL_DEVIATION, limit=LEADERBOARD_PAGE,
            after=after, humans_only=m.bots is False)
        more = len(rows) == LEADERBOARD_PAGE
        for row in rows:
            after = (row.rating.rating, row.user_id)
            rating = shown(row, period_s, record=True)
            if rating.provisional:
                continue
            rank += 1
            standings.append(_standing(rank, row, rating))
            if len(standings) == LEADERBOARD_PAGE:
                break
    next_cursor = (f"{rank}:{after[0]!r}:{after[1]}"
                   if more and after is not None else None)
    return p.LeaderboardPage(id=m.id, game=m.game, standings=tuple(standings),
                             next_cursor=next_cursor)


async def on_ladder_standings(s: Session, m: p.GetStandings) -> p.ServerMessage:
    """The bots on a game's ladder by rating, provisional ones included (a bot without a
    rated game yet is listed last, as a new player)."""
    members = s.app.ladder.members(m.game)
    rows = await s.app.store.ratings.best(m.game, below_deviation=MAX_DEVIATION,
                                          limit=len(members) or 1, user_ids=members)
    period_s = s.app.settings.rating_period_s
    standings = [_standing(rank, row, shown(row, period_s, record=True))
                 for rank, row in enumerate(rows, 1)]
    rated = {row.user_id for row in rows}
    for user_id in members:
        user = s.app.ladder.who(user_id)
        if user_id not in rated and user is not None:
            standings.append(p.Standing(rank=len(standings) + 1, user=user))
    return p.LeaderboardPage(id=m.id, game=m.game, standings=tuple(standings))


async def on_profile(s: Session, m: p.GetProfile) -> p.ServerMessage:
    store = s.app.store
    user = await store.get_user_by_name(m.name)
    if user is None:
        raise p.ProtocolError(f"no user {m.name}", code=p.ErrorCode.NOT_FOUND)
    period_s = s.app.settings.rating_period_s
    pools = (await store.ratings.of_users([user.id]))[user.id]
    recent = await store.list_games(player=user.name, limit=PROFILE_GAMES)
    history = await store.ratings.history(user.id, limit=PROFILE_HISTORY)
    return p.ProfileInfo(
        id=m.id,
        user=p.User(name=user.name, kind=user.kind,
                    ratings=tuple(shown(pool, period_s, record=True) for pool in pools)),
        recent=tuple(stored_summary(info) for info in recent.games),
        history=tuple(p.RatingPoint(game=point.pool, game_id=point.game_id,
                                    at_ms=epoch_ms(point.rated_at),
                                    rating=round(point.rating.rating),
                                    deviation=round(point.rating.deviation))
                      for point in history))


async def on_offer_rematch(s: Session, m: p.OfferRematch) -> p.ServerMessage:
    await s.app.rematches.offer(s.uid(), m.game_id)
    return p.Ok(id=m.id)


async def on_accept_rematch(s: Session, m: p.AcceptRematch) -> p.ServerMessage:
    await s.app.rematches.accept(s.uid(), m.game_id)
    return p.Ok(id=m.id)


async def on_decline_rematch(s: Session, m: p.DeclineRematch) -> p.ServerMessage:
    await s.app.rematches.decline(s.uid(), m.game_id, m.message)
    return p.Ok(id=m.id)


async def on_ladder_join(s: Session, m: p.LadderJoin) -> p.ServerMessage:
    try:
        await s.app.ladder.enter(s.me(), list(m.games))
    except KeyError as exc:
        raise p.BadRequest(f"ladder_join: no game {exc}", request_id=m.id) from None
    return p.Ok(id=m.id)


async def on_ladder_leave(s: Session, m: p.LadderLeave) -> p.ServerMessage:
    await s.app.ladder.exit(s.uid())
    return p.Ok(id=m.id)


def _standing(rank: int, row: PoolRating, rating: p.PoolRating) -> p.Standing:
    return p.Standing(rank=rank, user=p.User(name=row.name, kind=row.kind, rating=rating))


def _cursor(cursor: str | None, request_id: int) -> tuple[int, tuple[float, int] | None]:
    """(ranks given so far, (rating, user id) of the last one) from a leaderboard cursor."""
    if cursor is None:
        return 0, None
    try:
        rank, rating, user_id = cursor.split(":")
        return int(rank), (float(rating), int(user_id))
    except ValueError:
        raise p.BadRequest("leaderboard: not a cursor of this listing",
                           request_id=request_id) from None
