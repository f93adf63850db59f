"""The lobby: subscribing, seeks (paired automatically or accepted), direct challenges.

Events go before replies: whoever starts a game by a request gets ``game_started`` (and
``seek_taken`` for a seek of theirs) before the request's reply. A cluster node keeps its
offers in Redis and serves these requests with ``server.cluster.lobby``.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Protocol

import protocol as p

from ..lobby import Member, Offer
from ..ratelimit import address_key
from ..rooms import GameRoom, Player

if TYPE_CHECKING:
    from ..games import Games
    from ..session import Session


async def on_lobby_subscribe(s: Session, m: p.LobbySubscribe) -> p.ServerMessage:
    if s.app.cluster is not None:  # offers and presence across nodes
        return await s.app.cluster.lobby.subscribe(s, m)
    lobby = s.app.lobby
    lobby.subscribers.add(s)
    view = lobby.view()  # within the protocol's limits, however full the lobby
    return p.Lobby(id=m.id, seeks=view.seeks, players=view.players,
                   more_seeks=view.more_seeks or None, more_players=view.more_players or None)


async def on_lobby_unsubscribe(s: Session, m: p.LobbyUnsubscribe) -> p.ServerMessage:
    s.app.lobby.subscribers.discard(s)
    return p.Ok(id=m.id)


class Someone(Protocol):
    """A member here, or a user online on another node (``server.cluster.presence``)."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...


def check_rated(offer: Offer, *members: Someone) -> None:
    """A rated offer needs a clock and no guest (ProtocolError saying why otherwise)."""
    if not offer.rated:
        return
    if isinstance(offer.clock, p.Unlimited):
        raise p.ProtocolError("a game without a clock is casual: leave out rated, or pick "
                              "a clock", code=p.ErrorCode.BAD_REQUEST)
    for member in members:
        if member.kind == "guest":
            who = "you are" if member is members[0] else f"{member.name} is"
            raise p.ProtocolError(f"guests play casual games only ({who} a guest): leave "
                                  "out rated, or log in", code=p.ErrorCode.FORBIDDEN)


def seek_offer(m: p.Seek) -> Offer:
    """What a seek proposes; ``bad_request`` for a range upside down."""
    if m.rating_min is not None and m.rating_max is not None and m.rating_min > m.rating_max:
        raise p.BadRequest("seek: rating_min is above rating_max", request_id=m.id)
    return Offer(m.game, dict(m.options), m.clock, bool(m.rated), m.rating_min, m.rating_max)


async def on_seek(s: Session, m: p.Seek) -> p.ServerMessage:
    offer = seek_offer(m)
    check_rated(offer, s.me())
    if s.app.cluster is not None:  # offers and presence across nodes
        return await s.app.cluster.lobby.seek(s, m, offer)
    check_can_play(s, s.me())
    seek_id, partner = s.app.lobby.add_seek(s.me(), offer, address_key(s.peer),
                                            lambda member: can_play(s, member))
    if partner is not None:  # paired at once: game_started, seek_taken, then seek_created
        room = await start_game(s, offer, _shuffled(partner.owner, s.me()))
        _seek_taken(partner.owner, partner.seek_id, room)
        _seek_taken(s.me(), seek_id, room)
    return p.SeekCreated(id=m.id, seek_id=seek_id)


async def on_cancel_seek(s: Session, m: p.CancelSeek) -> p.ServerMessage:
    if s.app.cluster is not None:  # offers and presence across nodes
        return await s.app.cluster.lobby.cancel_seek(s, m)
    s.app.lobby.cancel_seek(m.seek_id, s.me())
    return p.Ok(id=m.id)


async def on_accept_seek(s: Session, m: p.AcceptSeek) -> p.ServerMessage:
    if s.app.cluster is not None:  # offers and presence across nodes
        return await s.app.cluster.lobby.accept_seek(s, m)
    lobby = s.app.lobby
    check_can_play(s, s.me())
    if (open_seek := lobby.seeks.get(m.seek_id)) is not None:
        check_can_play(s, open_seek.owner)  # the seek stays open if its owner cannot play
    entry = lobby.take_seek(m.seek_id, s.me())
    try:  # game_started, seek_taken (to its owner), seek_removed (lobby), then ok
        room = await start_game(s, entry.offer, _shuffled(entry.owner, s.me()))
        _seek_taken(entry.owner, entry.seek_id, room)
    finally:
        lobby.seek_taken(entry.seek_id)
    return p.Ok(id=m.id)


async def on_challenge(s: Session, m: p.Challenge) -> p.ServerMessage:
    if s.app.cluster is not None:  # offers and presence across nodes
        return await s.app.cluster.lobby.challenge(s, m)
    lobby = s.app.lobby
    target = lobby.by_name(m.to)
    if target is None:
        raise p.ProtocolError(f"{m.to} is not online", code=p.ErrorCode.NOT_FOUND)
    offer = Offer(m.game, dict(m.options), m.clock, bool(m.rated))
    check_rated(offer, s.me(), target)
    check_can_play(s, s.me())
    check_can_play(s, target)
    entry = lobby.add_challenge(s.me(), target, offer, m.color)
    target.send(p.event_frame(p.ChallengeReceived(
        challenge_id=entry.challenge_id, from_=s.me().wire_in(m.game), game=m.game,
        options=dict(m.options), clock=m.clock, color=m.color, rated=m.rated or None)))
    return p.ChallengeCreated(id=m.id, challenge_id=entry.challenge_id)


async def on_accept_challenge(s: Session, m: p.AcceptChallenge) -> p.ServerMessage:
    if s.app.cluster is not None:  # offers and presence across nodes
        return await s.app.cluster.lobby.accept_challenge(s, m)
    lobby = s.app.lobby
    entry = lobby.pending(m.challenge_id, s.me(), as_target=True)
    check_can_play(s, entry.target)
    check_can_play(s, entry.challenger)
    lobby.take_challenge(entry)
    seats = [entry.challenger, entry.target]
    if entry.color == "random":
        secrets.SystemRandom().shuffle(seats)
    elif entry.color == 1:
        seats.reverse()
    try:  # game_started, challenge_ended, then ok
        await start_game(s, entry.offer, (seats[0], seats[1]))
    except BaseException:
        lobby.tell_challenge_ended(entry, "cancelled")
        raise
    lobby.tell_challenge_ended(entry, "accepted")
    return p.Ok(id=m.id)


async def on_decline_challenge(s: Session, m: p.DeclineChallenge) -> p.ServerMessage:
    if s.app.cluster is not None:  # offers and presence across nodes
        return await s.app.cluster.lobby.decline_challenge(s, m)
    lobby = s.app.lobby
    lobby.end_challenge(lobby.pending(m.challenge_id, s.me(), as_target=True), "declined",
                        m.message)
    return p.Ok(id=m.id)


async def on_cancel_challenge(s: Session, m: p.CancelChallenge) -> p.ServerMessage:
    if s.app.cluster is not None:  # offers and presence across nodes
        return await s.app.cluster.lobby.cancel_challenge(s, m)
    lobby = s.app.lobby
    lobby.end_challenge(lobby.pending(m.challenge_id, s.me(), as_target=False), "cancelled")
    return p.Ok(id=m.id)


async def start_game(s: Session, offer: Offer, members: tuple[Member, Member]) -> GameRoom:
    """Start a game between two online members (the first takes seat 0)."""
    return await start_between(s.app.games, offer, members)


async def start_between(games: Games, offer: Offer, members: tuple[Member, Member]
                        ) -> GameRoom:
    """Start ``offer`` between two online members (the first takes seat 0), each shown
    with their rating in the game's pool."""
    players = tuple(Player(member.user_id, member.name, member.kind,
                           member.shown_rating(offer.game)) for member in members)
    return await games.start(offer.game, offer.options, offer.clock,
                             (players[0], players[1]),
                             [list(member.sessions) for member in members],
                             rated=offer.rated)


def can_play(s: Session, member: Member) -> bool:
    """Whether ``member`` may start one game more (``max_games_per_user``)."""
    return s.app.games.playing(member.user_id) < s.app.settings.max_games_per_user


def check_can_play(s: Session, member: Member) -> None:
    """``conflict`` if ``member`` has as many games in progress as anyone may."""
    if not can_play(s, member):
        cap = s.app.settings.max_games_per_user
        who = "you have" if member is s.member else f"{member.name} has"
        raise p.ProtocolError(f"{who} {cap} games in progress, the most allowed",
                              code=p.ErrorCode.CONFLICT)


def _shuffled(a: Member, b: Member) -> tuple[Member, Member]:
    seats = [a, b]
    secrets.SystemRandom().shuffle(seats)
    return seats[0], seats[1]


def _seek_taken(owner: Member, seek_id: int, room: GameRoom) -> None:
    owner.send(p.event_frame(p.SeekTaken(seek_id=seek_id, game_id=room.game_id)))
