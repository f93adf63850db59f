"""The lobby of a cluster node: seeks, challenges and who is online, across nodes.

A lone server's lobby (``server.lobby.Lobby``) keeps offers in dicts; a node keeps them in
Redis (``lobbystore``: a seek is taken once, a challenge answered once, whichever nodes
race) and knows who is online from every node's presence hash (``presence``). Lobby events
(``seek_added``, ``seek_removed``, ``player_online``, ``player_offline``) go through the
lobby ``Feed`` to the lobby subscribers of every node. The local ``Lobby`` still keeps
this node's members (a user's connections here) and lobby subscribers.

The node that pairs or accepts an offer starts the game and owns it. The other player's
connections on other nodes are seated through their node (``seat_player``: it relays the
game from then on and hands them ``game_started``, then the offer's ending, in the order a
lone server sends them); events for a user elsewhere (``challenge_received``,
``challenge_ended``, ``seek_taken``) go to the nodes they are connected to
(``to_user``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import protocol as p
from server.handlers.lobby import check_rated
from server.lobby import Member, Offer
from server.ratings.shown import shown
from server.rooms import GameRoom, Player

from .feeds import Feed
from .lobbystore import Challenge, RedisChallenges, RedisSeeks, Seek, now_ms
from .presence import Online, RedisPresence
from .rematch import ClusterRematches

if TYPE_CHECKING:
    from server.session import Session

    from .node import ClusterNode

log = logging.getLogger(__name__)


class RemotePlayer:
    """A player of a starting game who is connected to another node (``Games.start``
    seats them): present in the game through their node."""

    def __init__(self, cluster: ClusterNode, node: str, user_id: int) -> None:
        self.cluster = cluster
        self.node = node
        self.user_id = user_id

    async def joined_game(self, room: GameRoom) -> None:
        seat = room.seat_of(self.user_id)
        if seat is not None:
            await self.cluster.seat_present(room, self.node, seat)


class ClusterLobby:
    """The lobby requests of one node (see the module docstring)."""

    def __init__(self, cluster: ClusterNode) -> None:
        self.cluster = cluster
        redis, keys = cluster.bus.redis, cluster.keys
        self.seeks = RedisSeeks(redis, keys)
        self.challenges = RedisChallenges(redis, keys)
        self.presence = RedisPresence(redis, keys, cluster.node_id, lambda: cluster.live_nodes)
        self.feed = Feed(cluster.bus, keys.lobby_channel, self._deliver)
        self.rematches = ClusterRematches(cluster)

    async def start(self) -> None:
        await self.feed.start()
        self.cluster.app.lobby.announce_presence = False  # the feed does, once per cluster

    def _deliver(self, frame: bytes) -> None:
        for session in list(self.cluster.app.lobby.subscribers):
            session.send_frame(frame)

    async def announce(self, event: Any) -> None:
        await self.feed.announce(p.event_frame(event))

    # -- presence ------------------------------------------------------------------------
    async def joined(self, member: Member) -> None:
        """A user's first connection on this node."""
        if await self.presence.join(Online(member.user_id, member.name, member.kind)):
            await self.announce(p.PlayerOnline(user=member.wire()))

    async def reap(self, dead_node: str) -> None:
        """A dead node's members: those now offline everywhere lose their offers."""
        for user in await self.presence.reap(dead_node):
            for seek in await self.seeks.withdraw_all(user.user_id):
                await self.announce(p.SeekRemoved(seek_id=seek.seek_id))
            for challenge in await self.challenges.withdraw_all(user.user_id):
                await self._tell_ended(challenge, "cancelled", None)
            await self.rematches.withdraw_all(user.user_id)
            await self.cluster.app.ladder.exit(user.user_id)
            await self.announce(p.PlayerOffline(name=user.name))

    async def rejoin(self, member: Member) -> None:
        """Say again that a member is here (Redis may have lost it)."""
        with contextlib.suppress(Exception):
            await self.joined(member)

    async def left(self, member: Member) -> None:
        """A user's last connection on this node went: if it was their last anywhere,
        their offers go with them."""
        if not await self.presence.leave(Online(member.user_id, member.name, member.kind)):
            return
        for seek in await self.seeks.withdraw_all(member.user_id):
            await self.announce(p.SeekRemoved(seek_id=seek.seek_id))
        for challenge in await self.challenges.withdraw_all(member.user_id):
            await self._tell_ended(challenge, "cancelled", None)
        await self.rematches.withdraw_all(member.user_id)
        await self.cluster.app.ladder.exit(member.user_id)
        await self.announce(p.PlayerOffline(name=member.name))

    async def find(self, name: str) -> Online | None:
        """The online user of this name; the nodes alive are looked up again before
        saying they are not (a node that just started is not yet known here)."""
        found = await self.presence.find(name)
        if found is None:
            with contextlib.suppress(Exception):
                await self.cluster.refresh_nodes()
                found = await self.presence.find(name)
        return found

    # -- requests ------------------------------------------------------------------------
    async def subscribe(self, s: Session, m: p.LobbySubscribe) -> p.ServerMessage:
        self.cluster.app.lobby.subscribers.add(s)
        seeks = await self.seeks.listing()
        online = await self.presence.everyone()
        # with their ratings in every pool as stored, as a lone server lists its members
        ratings = await self.cluster.app.store.ratings.of_users(
            [u.user_id for u in online if u.kind != "guest"])
        period_s = self.cluster.app.lobby.rating_period_s
        return p.Lobby(id=m.id, seeks=tuple(seek.open_seek for seek in seeks),
                       players=tuple(p.User(name=u.name, kind=u.kind,  # type: ignore[arg-type]
                                            ratings=tuple(shown(pool, period_s) for pool
                                                          in ratings.get(u.user_id, ()))
                                            or None)
                                     for u in online))

    async def fresh(self, member: Member) -> Member:
        """``member`` with their ratings as stored now: a rated game of theirs may have
        ended on another node, which updated only the members it has."""
        if member.kind != "guest":
            stored = await self.cluster.app.store.ratings.of_users([member.user_id])
            member.ratings = {pool.pool: pool for pool in stored.get(member.user_id, [])}
        return member

    async def check_can_play(self, user_id: int, name: str, *, me: bool,
                             other: tuple[int, str] | None = None) -> None:
        """``conflict`` if the user (or ``other``, a (user id, name) checked in the same
        query) has as many games in progress, on any node, as anyone may
        (``max_games_per_user``, as ``handlers.lobby.check_can_play`` on one node)."""
        cap = self.cluster.app.settings.max_games_per_user
        users = [(user_id, name, me)] + ([(other[0], other[1], False)] if other else [])
        counts = await self.cluster.app.store.playing_counts([user[0] for user in users])
        for who_id, who_name, is_me in users:
            if counts[who_id] >= cap:
                who = "you have" if is_me else f"{who_name} has"
                raise p.ProtocolError(f"{who} {cap} games in progress, the most allowed",
                                      code=p.ErrorCode.CONFLICT)

    async def seek(self, s: Session, m: p.Seek, offer: Offer) -> p.ServerMessage:
        me = await self.fresh(s.me())
        await self.check_can_play(me.user_id, me.name, me=True)
        seek_id = await self.seeks.new_id()
        record = Seek(p.OpenSeek(seek_id=seek_id, user=me.wire_in(m.game), game=m.game,
                                 options=dict(m.options), clock=m.clock,
                                 rated=offer.rated or None, rating_min=offer.rating_min,
                                 rating_max=offer.rating_max),
                      me.user_id, self.cluster.node_id, now_ms(), me.rating_in(m.game))
        partner = await self.seeks.open(record, self.cluster.app.lobby.max_open_seeks)
        if partner is None:
            await self.announce(p.SeekAdded(seek=record.open_seek))
            return p.SeekCreated(id=m.id, seek_id=seek_id)
        # paired at once: game_started, seek_taken (both), seek_removed, then seek_created
        other = _online_of(partner.open_seek.user, partner.user_id)
        seats = [other, _online_of(me.wire(), me.user_id)]
        secrets.SystemRandom().shuffle(seats)
        room = await self.start_game(offer, (seats[0], seats[1]), {
            partner.user_id: lambda room: [_seek_taken(partner.seek_id, room)]})
        me.send(_seek_taken(seek_id, room))
        await self.announce(p.SeekRemoved(seek_id=partner.seek_id))
        return p.SeekCreated(id=m.id, seek_id=seek_id)

    async def accept_seek(self, s: Session, m: p.AcceptSeek) -> p.ServerMessage:
        me = await self.fresh(s.me())
        open_seek = await self.seeks.get(m.seek_id)
        owner: tuple[int, str] | None = None
        if open_seek is not None and open_seek.user_id != me.user_id:
            _check_may_take(open_seek, me)  # neither its flag nor its range changes
            owner = (open_seek.user_id, open_seek.open_seek.user.name)
        # both counted in one query; the seek stays open if its owner cannot play
        await self.check_can_play(me.user_id, me.name, me=True, other=owner)
        seek = await self.seeks.take(m.seek_id, me.user_id)
        wanted = seek.open_seek
        seats = [_online_of(wanted.user, seek.user_id), _online_of(me.wire(), me.user_id)]
        secrets.SystemRandom().shuffle(seats)
        offer = Offer(wanted.game, dict(wanted.options), wanted.clock, seek.rated,
                      wanted.rating_min, wanted.rating_max)
        try:
            await self.start_game(offer, (seats[0], seats[1]), {
                seek.user_id: lambda room: [_seek_taken(seek.seek_id, room)]})
        finally:
            await self.announce(p.SeekRemoved(seek_id=seek.seek_id))
        return p.Ok(id=m.id)

    async def cancel_seek(self, s: Session, m: p.CancelSeek) -> p.ServerMessage:
        await self.seeks.cancel(m.seek_id, s.me().user_id)
        await self.announce(p.SeekRemoved(seek_id=m.seek_id))
        return p.Ok(id=m.id)

    async def challenge(self, s: Session, m: p.Challenge) -> p.ServerMessage:
        me = await self.fresh(s.me())
        target = await self.find(m.to)
        if target is None:
            raise p.ProtocolError(f"{m.to} is not online", code=p.ErrorCode.NOT_FOUND)
        if target.user_id == me.user_id:
            raise p.ProtocolError("you cannot challenge yourself", code=p.ErrorCode.BAD_REQUEST)
        check_rated(Offer(m.game, dict(m.options), m.clock, bool(m.rated)), me, target)
        await self.check_can_play(me.user_id, me.name, me=True,
                                  other=(target.user_id, target.name))
        challenge_id = await self.seeks.new_id()
        received = p.ChallengeReceived(challenge_id=challenge_id, from_=me.wire_in(m.game),
                                       game=m.game, options=dict(m.options), clock=m.clock,
                                       color=m.color, rated=m.rated or None)
        await self.challenges.create(Challenge(
            received, me.user_id, self.cluster.node_id, target.user_id,
            p.User(name=target.name, kind=target.kind),  # type: ignore[arg-type]
            target.nodes[0] if target.nodes else self.cluster.node_id))
        await self.to_user(target.user_id, target.nodes, [p.event_frame(received)])
        return p.ChallengeCreated(id=m.id, challenge_id=challenge_id)

    async def accept_challenge(self, s: Session, m: p.AcceptChallenge) -> p.ServerMessage:
        me = await self.fresh(s.me())
        entry = await self.challenges.answer(m.challenge_id, me.user_id)
        received = entry.received
        try:
            await self.check_can_play(me.user_id, me.name, me=True,
                                      other=(entry.challenger_id, received.from_.name))
        except p.ProtocolError:
            with contextlib.suppress(Exception):  # left pending, as one process leaves it
                await self.challenges.create(entry)
            raise
        challenger = _online_of(received.from_, entry.challenger_id)
        seats = [challenger, _online_of(me.wire(), me.user_id)]
        if received.color == "random":
            secrets.SystemRandom().shuffle(seats)
        elif received.color == 1:
            seats.reverse()
        ended = p.event_frame(p.ChallengeEnded(challenge_id=m.challenge_id, reason="accepted"))
        offer = Offer(received.game, dict(received.options), received.clock,
                      bool(received.rated))
        try:  # game_started, challenge_ended, then ok
            await self.start_game(offer, (seats[0], seats[1]),
                                  {entry.challenger_id: lambda _: [ended]})
        except BaseException:
            await self._tell_ended(entry, "cancelled", None)
            raise
        me.send(ended)
        return p.Ok(id=m.id)

    async def decline_challenge(self, s: Session, m: p.DeclineChallenge) -> p.ServerMessage:
        entry = await self.challenges.answer(m.challenge_id, s.me().user_id)
        await self._tell_ended(entry, "declined", m.message)
        return p.Ok(id=m.id)

    async def cancel_challenge(self, s: Session, m: p.CancelChallenge) -> p.ServerMessage:
        entry = await self.challenges.withdraw(m.challenge_id, s.me().user_id)
        await self._tell_ended(entry, "cancelled", None)
        return p.Ok(id=m.id)

    async def _tell_ended(self, entry: Challenge, reason: str, message: str | None) -> None:
        frame = p.event_frame(p.ChallengeEnded(challenge_id=entry.challenge_id,
                                               reason=reason,  # type: ignore[arg-type]
                                               message=message))
        for user_id, name in ((entry.challenger_id, entry.received.from_.name),
                              (entry.target_id, entry.target.name)):
            found = await self.find(name)
            await self.to_user(user_id, found.nodes if found else (), [frame])

    # -- games between users on any nodes ------------------------------------------------
    async def start_game(self, offer: Offer, seats: tuple[Online, Online],
                         after: dict[int, Any]) -> GameRoom:
        """Start a game here between two online users (the first takes seat 0), each shown
        with their rating in the game's pool as stored now; each user's connections on
        every node get ``game_started``, then ``after[user](room)`` (their offer's ending).
        A rated offer starts a rated game: the fenced writer rates its end."""
        app = self.cluster.app
        where: list[tuple[str, ...]] = []
        seated: list[list[Any]] = []
        for user in seats:
            found = await self.find(user.name)
            nodes = found.nodes if found else ()
            where.append(nodes)
            here = app.lobby.members.get(user.user_id)
            seated.append([*(here.sessions if here is not None else ()),
                           *(RemotePlayer(self.cluster, node, user.user_id) for node in nodes
                             if node != self.cluster.node_id)])
        stored = await app.store.ratings.of_users(  # a guest has none
            [user.user_id for user in seats if user.kind != "guest"], offer.game)
        players = tuple(Player(user.user_id, user.name, user.kind, next(
            (shown(pool, app.lobby.rating_period_s) for pool in stored.get(user.user_id, ())),
            None))
            for user in seats)
        room = await app.games.start(offer.game, offer.options, offer.clock,
                                     (players[0], players[1]), seated, rated=offer.rated)
        started = room.events[0][1] if room.events else p.event_frame(
            p.GameStarted(game_id=room.game_id, seq=1, snapshot=room.snapshot()))
        for user, nodes in zip(seats, where, strict=True):
            extra = after.get(user.user_id, lambda _: [])(room)
            here = app.lobby.members.get(user.user_id)
            if here is not None:
                for frame in extra:
                    here.send(frame)
            await asyncio.gather(*(self.cluster.seat_remote(
                node, room, user.user_id, started, extra)
                for node in nodes if node != self.cluster.node_id))
        return room

    async def to_user(self, user_id: int, nodes: Iterable[str], frames: list[bytes]) -> None:
        """Send frames to a user's connections on ``nodes`` (this one included)."""
        for node in nodes:
            if node == self.cluster.node_id:
                member = self.cluster.app.lobby.members.get(user_id)
                if member is not None:
                    for frame in frames:
                        member.send(frame)
                continue
            with contextlib.suppress(Exception):
                await self.cluster.bus.request(node, "to_user", {"u": user_id, "frames": frames})

    async def serve_to_user(self, body: dict[str, Any], _sender: str) -> None:
        member = self.cluster.app.lobby.members.get(body["u"])
        if member is not None:
            for frame in body["frames"]:
                member.send(frame)


def _check_may_take(seek: Seek, taker: Member) -> None:
    """``forbidden`` for a taker outside the seek's range, or a guest and a rated seek (as
    ``server.lobby.Lobby.take_seek`` refuses them)."""
    wanted = seek.open_seek
    rating = taker.rating_in(wanted.game)
    if not seek.admits(rating):
        raise p.ProtocolError(
            f"seek {seek.seek_id} is for players rated {wanted.rating_min or ''}.."
            f"{wanted.rating_max or ''} in {wanted.game}; you are rated {round(rating)}",
            code=p.ErrorCode.FORBIDDEN)
    if seek.rated and taker.kind == "guest":
        raise p.ProtocolError("guests play casual games only: log in to take a rated seek",
                              code=p.ErrorCode.FORBIDDEN)


def _online_of(user: p.User, user_id: int) -> Online:
    return Online(user_id, user.name, user.kind)


def _seek_taken(seek_id: int, room: GameRoom) -> bytes:
    return p.event_frame(p.SeekTaken(seek_id=seek_id, game_id=room.game_id))


__all__ = ["ClusterLobby", "RemotePlayer"]
