"""The lobby: who is online, open seeks paired automatically, direct challenges.

Written once for one process and a cluster: the lobby's state is in the topology's stores
(``server.offers``; in memory alone, in Redis on a cluster, behind :mod:`server.seam`),
and events reach users through the topology's :class:`~server.seam.Reach`. This module
keeps what is this process's own: the :class:`Members` connected here (their
connections, their ratings as stored) and the lobby's subscribers here.

A seek is paired with the oldest compatible seek of another user who may start a game
more: same game, same options, same time control, both rated or both casual, and each
player's rating in the game's pool within the other's range (a player without a rating
counts as 1500). Seeks and challenges are offers, not games: a restart (of a lone server)
withdraws them. Everything a stranger can add is bounded: open seeks per account, per
address and in all; pending challenges per challenger and per address (not per target: a
flood would fill that, and a legitimate challenger be refused); and a ``lobby`` reply
lists a page of seeks and players (``server.listing``, packed once per change and the same
bytes sent to everyone who asks), with a count of the rest and a cursor to the next page.

A player chooses who may challenge them (everyone, registered players, nobody), stored
with their account and read with each challenge to them; a challenge from a stranger (who
has no stored game with them) lapses after ``stranger_challenge_s`` unanswered.

Events go before replies: whoever starts a game by a request gets ``game_started`` (and
``seek_taken`` for a seek of theirs) before the request's reply; a player whose
connections are on another node gets them through that node, in the same order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import protocol as p
from protocol import ErrorCode, ProtocolError, User, event_frame

from .listing import FIRST, Listing, Position
from .offers import Challenge, ChallengeCaps, Online, Seek, SeekCaps
from .ratelimit import address_key
from .ratings.glicko2 import DEFAULT
from .ratings.shown import aged_now, shown
from .rooms import GameRoom, Player
from .storage import GameRatings, PoolRating
from .storage.rating_writes import score_of

if TYPE_CHECKING:
    from .config import Settings
    from .games import Games
    from .seam import Placement, Topology
    from .storage import Store

DEFAULT_PERIOD_S = 86_400.0
log = logging.getLogger(__name__)

AfterStart = Callable[[GameRoom], list[bytes]]  # a player's frames after game_started
Spawn = Callable[[Coroutine[Any, Any, Any]], object]  # background work the server owns


@dataclass(eq=False, slots=True)
class Member:
    """A user connected here, their connections (anything with ``send_frame``) and their
    ratings as stored."""

    user_id: int
    name: str
    kind: str
    sessions: set[Any] = field(default_factory=set)
    ratings: dict[str, PoolRating] = field(default_factory=dict)  # by pool (game key)
    period_s: float = DEFAULT_PERIOD_S
    since_ms: int = field(default_factory=lambda: _now_ms())  # connected here since

    def wire(self) -> User:
        """As the online list shows them: with their rating in every pool."""
        ratings = tuple(shown(pool, self.period_s) for pool in self.ratings.values())
        return User(name=self.name, kind=self.kind,  # type: ignore[arg-type]
                    ratings=ratings or None)

    def wire_in(self, game: str) -> User:
        """As a seek or a game shows them: with their rating in that game's pool."""
        return User(name=self.name, kind=self.kind,  # type: ignore[arg-type]
                    rating=self.shown_rating(game))

    def shown_rating(self, game: str) -> p.PoolRating | None:
        pool = self.ratings.get(game)
        return None if pool is None else shown(pool, self.period_s)

    def rating_in(self, game: str) -> float:
        """Their rating in a pool, for pairing (1500 without one)."""
        pool = self.ratings.get(game)
        return DEFAULT.rating if pool is None else aged_now(pool, self.period_s).rating

    def online(self) -> Online:
        return Online(self.user_id, self.name, self.kind, since_ms=self.since_ms)

    def send(self, frame: bytes) -> None:
        for session in list(self.sessions):
            session.send_frame(frame)


@dataclass(frozen=True)
class Offer:
    """What a seek or challenge proposes."""

    game: str
    options: dict[str, Any]
    clock: p.TimeControl
    rated: bool = False
    rating_min: int | None = None
    rating_max: int | None = None


class Members:
    """The users connected to this process, and the lobby's subscribers here."""

    def __init__(self, rating_period_s: float = DEFAULT_PERIOD_S) -> None:
        self.rating_period_s = rating_period_s
        self.by_id: dict[int, Member] = {}
        self.subscribers: set[Any] = set()
        self.peak = 0  # the most members since the last take_peak()

    def get(self, user_id: int) -> Member | None:
        return self.by_id.get(user_id)

    def __len__(self) -> int:
        return len(self.by_id)

    def join(self, user_id: int, name: str, kind: str, session: Any,
             ratings: list[PoolRating] | None = None) -> Member:
        """A connection logged in as this user; ``ratings``: theirs, as stored now."""
        member = self.by_id.get(user_id)
        if member is None:
            member = self.by_id[user_id] = Member(user_id, name, kind,
                                                  period_s=self.rating_period_s)
            self.peak = max(self.peak, len(self.by_id))
        if ratings is not None:
            member.ratings = {pool.pool: pool for pool in ratings}
        member.sessions.add(session)
        return member

    def leave(self, member: Member, session: Any) -> bool:
        """Forget a connection; True if it was the member's last here."""
        member.sessions.discard(session)
        self.subscribers.discard(session)
        if member.sessions:
            return False
        if self.by_id.get(member.user_id) is member:
            del self.by_id[member.user_id]
        return True

    def send(self, user_id: int, frames: Iterable[bytes]) -> None:
        member = self.by_id.get(user_id)
        if member is not None:
            for frame in frames:
                member.send(frame)

    def tell_subscribers(self, frame: bytes) -> None:
        for session in list(self.subscribers):
            session.send_frame(frame)

    def rated_game(self, pool: str, changes: GameRatings, winner: int | None, *,
                   now: datetime) -> None:
        """A rated game ended: its players here get the game's afters as ratings (as the
        same transaction stored them)."""
        for change in changes:
            member = self.by_id.get(change.user_id)
            if member is None:
                continue
            score = score_of(change.seat, winner)
            old = member.ratings.get(pool)
            member.ratings[pool] = PoolRating(
                user_id=member.user_id, name=member.name, kind=member.kind,  # type: ignore
                pool=pool, rating=change.after, rated_at=now,
                games=(old.games if old else 0) + 1,
                wins=(old.wins if old else 0) + (score == 1.0),
                losses=(old.losses if old else 0) + (score == 0.0),
                draws=(old.draws if old else 0) + (score == 0.5))

    def compact(self) -> None:
        """Rebuild the tables at their present size (a dict never shrinks)."""
        self.by_id = dict(self.by_id)
        self.subscribers = set(self.subscribers)

    def take_peak(self) -> int:
        peak, self.peak = max(self.peak, len(self.by_id)), len(self.by_id)
        return peak


def check_rated(offer: Offer, *people: Member | Online) -> None:
    """A rated offer needs a clock and no guest (ProtocolError saying why otherwise)."""
    if not offer.rated:
        return
    if isinstance(offer.clock, p.Unlimited):
        raise ProtocolError("a game without a clock is casual: leave out rated, or pick "
                            "a clock", code=ErrorCode.BAD_REQUEST)
    for who in people:
        if who.kind == "guest":
            which = "you are" if who is people[0] else f"{who.name} is"
            raise ProtocolError(f"guests play casual games only ({which} a guest): leave "
                                "out rated, or log in", code=ErrorCode.FORBIDDEN)


def _check_may_take(seek: Seek, taker: Member) -> None:
    """``forbidden`` for a taker outside the seek's range, or a guest and a rated seek."""
    wanted = seek.open_seek
    rating = taker.rating_in(wanted.game)
    if not seek.admits(rating):
        raise ProtocolError(
            f"seek {seek.seek_id} is for players rated {wanted.rating_min or ''}.."
            f"{wanted.rating_max or ''} in {wanted.game}; you are rated {round(rating)}",
            code=ErrorCode.FORBIDDEN)
    if seek.rated and taker.kind == "guest":
        raise ProtocolError("guests play casual games only: log in to take a rated seek",
                            code=ErrorCode.FORBIDDEN)


def check_welcome(policy: str, challenger: Member, target: str) -> None:
    """``forbidden`` for a challenge the target's choice (``set_challenge_policy``) keeps
    out: a guest's when they take registered players' only, anyone's when nobody's."""
    if policy == "nobody":
        raise ProtocolError(f"{target} takes challenges from nobody",
                            code=ErrorCode.FORBIDDEN)
    if policy == "registered" and challenger.kind == "guest":
        raise ProtocolError(f"{target} takes challenges from registered players only: log "
                            "in to challenge them", code=ErrorCode.FORBIDDEN)


def _now_ms() -> int:
    return int(time.time() * 1000)


class Lobby:
    """The lobby's requests and its life (see the module docstring)."""

    def __init__(self, settings: Settings, members: Members, topology: Topology,
                 games: Games, store: Store,
                 on_pack: Callable[[], None] | None = None, spawn: Spawn | None = None
                 ) -> None:
        self.settings = settings
        self.members = members
        self.node_id = topology.node_id
        self.presence = topology.presence
        self.seeks = topology.seeks
        self.challenges = topology.challenges
        self.reach = topology.reach
        self.placement: Placement = topology.placement
        self.games = games
        self.store = store
        self.seek_caps = SeekCaps(settings.max_open_seeks, settings.max_seeks_per_address,
                                  settings.max_seeks)
        self.challenge_caps = ChallengeCaps(settings.max_challenges_per_challenger,
                                            settings.max_challenges_per_address)
        self.spawn = spawn
        self.lapsing: dict[int, asyncio.TimerHandle] = {}  # strangers' challenges made here
        # told of a user now offline everywhere (rematch offers lapse, the ladder)
        self.on_offline: list[Callable[[int], Any]] = []
        self.listing = Listing(self.seeks, self.presence, store.ratings.of_users,
                               page_size=settings.lobby_page,
                               period_s=members.rating_period_s, on_pack=on_pack)

    @property
    def max_open_seeks(self) -> int:
        return self.seek_caps.per_owner

    # -- presence ------------------------------------------------------------------------
    async def announce(self, event: Any) -> None:
        await self.reach.announce(event_frame(event))

    def heard(self, frame: bytes) -> None:
        """A lobby event, announced here or (on a cluster) by another node: the listing
        has changed, and the lobby's subscribers here are told."""
        self.listing.changed()
        self.members.tell_subscribers(frame)

    def may_have_missed(self) -> None:
        """The listing changed with no lobby event (ratings), or lobby events may have
        been missed (a cluster node's link to the others came back): it is read again
        from the stores when next asked for."""
        self.listing.changed()

    def rated_game(self, pool: str, changes: GameRatings, winner: int | None, *,
                   now: datetime) -> None:
        """A rated game ended here: its players' new ratings, for the members and the
        listing here (then :meth:`relist_everywhere`)."""
        self.members.rated_game(pool, changes, winner, now=now)
        self.listing.changed()

    async def relist_everywhere(self) -> None:
        """Every node's listing is read again (ratings changed here)."""
        try:
            await self.reach.relist()
        except Exception as exc:  # Redis away: the other nodes list the old ratings a while
            log.warning("the lobby's listing: other nodes not told of new ratings: %s", exc)

    async def joined(self, member: Member) -> None:
        """A user's first connection here."""
        if await self.presence.join(member.online()):
            await self.announce(p.PlayerOnline(user=member.wire()))

    async def left(self, member: Member) -> None:
        """A user's last connection here went: if it was their last anywhere, their
        offers go with them."""
        if await self.presence.leave(member.online()):
            await self.gone(member.online())

    async def gone(self, user: Online) -> None:
        """A user is offline everywhere: their seeks and challenges are withdrawn."""
        withdrawn = await self.seeks.withdraw_all(user.user_id)
        if withdrawn:
            self.listing.changed()
        for seek in withdrawn:
            await self.announce(p.SeekRemoved(seek_id=seek.seek_id))
        for challenge in await self.challenges.withdraw_all(user.user_id):
            await self.tell_ended(challenge, "cancelled", None)
        await self.announce(p.PlayerOffline(name=user.name))
        for listener in self.on_offline:
            await listener(user.user_id)

    async def find(self, name: str) -> Online | None:
        """The online user of this name (the nodes are looked up again before saying
        they are not: one may have started a moment ago)."""
        return (await self.find_all([name]))[0]

    async def find_all(self, names: Sequence[str]) -> list[Online | None]:
        """``find`` for each name, in one look (two if one is not found)."""
        found = await self.presence.find_all(names)
        if None in found:
            await self.reach.look_again()
            found = await self.presence.find_all(names)
        return found

    async def to_user(self, user_id: int, nodes: Iterable[str], frames: list[bytes]) -> None:
        """Frames for a user's connections on ``nodes`` (this one included)."""
        nodes = tuple(nodes)
        if self.node_id in nodes:
            self.members.send(user_id, frames)
        await self.reach.send_elsewhere(user_id, [n for n in nodes if n != self.node_id],
                                        frames)

    async def tell(self, user_id: int, name: str, frames: list[bytes]) -> None:
        """Frames for a user wherever they are connected."""
        found = await self.find(name)
        if found is not None:
            await self.to_user(user_id, found.nodes, frames)

    async def fresh(self, member: Member) -> Member:
        """``member`` with their ratings as stored now (a rated game of theirs may have
        ended in another process)."""
        if member.kind != "guest":
            stored = await self.store.ratings.of_users([member.user_id])
            member.ratings = {pool.pool: pool for pool in stored.get(member.user_id, [])}
        return member

    async def check_can_play(self, me: Member, other: Online | None = None) -> None:
        """``conflict`` if the user (or ``other``, counted in the same query) has as many
        games in progress, wherever they run, as anyone may (``max_games_per_user``)."""
        cap = self.settings.max_games_per_user
        users = [(me.user_id, "you have")]
        if other is not None:
            users.append((other.user_id, f"{other.name} has"))
        counts = await self.placement.playing_counts([user_id for user_id, _ in users])
        for user_id, who in users:
            if counts.get(user_id, 0) >= cap:
                raise ProtocolError(f"{who} {cap} games in progress, the most allowed",
                                    code=ErrorCode.CONFLICT)

    async def is_pending_for(self, challenge_id: int, member: Member | None) -> bool:
        """Whether ``member`` has challenge ``challenge_id`` to answer."""
        if member is None:
            return False
        found = await self.challenges.get(challenge_id)
        return found is not None and found.target_id == member.user_id

    # -- the snapshot --------------------------------------------------------------------
    async def subscribe(self, session: Any) -> p.Prepared:
        """Add a lobby subscriber here: the lobby's first page (``server.listing``)."""
        self.members.subscribers.add(session)
        return await self.listing.page(FIRST)

    async def page(self, cursor: str, request_id: int) -> p.Prepared:
        """The page a ``lobby`` reply's ``next_cursor`` names (``bad_request`` for other
        text)."""
        return await self.listing.page(Position.parse(cursor, request_id))

    # -- seeks ---------------------------------------------------------------------------
    async def seek(self, me: Member, m: p.Seek, peer: str) -> p.ServerMessage:
        """Open a seek, or pair it at once: ``game_started``, ``seek_taken`` (both),
        ``seek_removed``, then ``seek_created``."""
        if m.rating_min is not None and m.rating_max is not None and (
                m.rating_min > m.rating_max):
            raise p.BadRequest("seek: rating_min is above rating_max", request_id=m.id)
        offer = Offer(m.game, dict(m.options), m.clock, bool(m.rated), m.rating_min,
                      m.rating_max)
        check_rated(offer, me)
        me = await self.fresh(me)
        await self.check_can_play(me)
        seek_id = await self.seeks.new_id()
        record = Seek(p.OpenSeek(seek_id=seek_id, user=me.wire_in(m.game), game=m.game,
                                 options=dict(m.options), clock=m.clock,
                                 rated=offer.rated or None, rating_min=offer.rating_min,
                                 rating_max=offer.rating_max),
                      me.user_id, self.node_id, _now_ms(), me.rating_in(m.game),
                      address_key(peer))
        partner = await self._pair(record)
        if partner is None:
            await self.announce(p.SeekAdded(seek=record.open_seek))
            return p.SeekCreated(id=m.id, seek_id=seek_id)
        seats = [Online(partner.user_id, partner.open_seek.user.name,
                        partner.open_seek.user.kind), me.online()]
        secrets.SystemRandom().shuffle(seats)
        room = await self.start_game(offer, (seats[0], seats[1]), {
            partner.user_id: lambda room: [_seek_taken(partner.seek_id, room)]})
        me.send(_seek_taken(seek_id, room))
        await self.announce(p.SeekRemoved(seek_id=partner.seek_id))
        return p.SeekCreated(id=m.id, seek_id=seek_id)

    async def _pair(self, record: Seek) -> Seek | None:
        """Open ``record``, or take the oldest seek it pairs with whose owner may start a
        game more (a seek of an owner at the cap stays open, and is passed over)."""
        cap = self.settings.max_games_per_user
        passed: set[int] = set()
        while True:
            partner = await self.seeks.open(record, self.seek_caps, passed)
            self.listing.changed()  # opened, or its partner taken out (announced later)
            if partner is None:
                return None
            counts = await self.placement.playing_counts([partner.user_id])
            if counts.get(partner.user_id, 0) < cap:
                return partner
            await self.seeks.restore(partner)
            self.listing.changed()
            passed.add(partner.user_id)

    async def accept_seek(self, me: Member, m: p.AcceptSeek) -> p.ServerMessage:
        """``game_started``, ``seek_taken`` (to its owner), ``seek_removed``, then ok."""
        me = await self.fresh(me)
        wanted = await self.seeks.get(m.seek_id)
        owner: Online | None = None
        if wanted is not None and wanted.user_id != me.user_id:
            _check_may_take(wanted, me)  # neither its flag nor its range changes
            owner = Online(wanted.user_id, wanted.open_seek.user.name,
                           wanted.open_seek.user.kind)
        # both counted in one query; the seek stays open if its owner cannot play
        await self.check_can_play(me, owner)
        seek = await self.seeks.take(m.seek_id, me.user_id)
        self.listing.changed()  # seek_removed is announced once the game has started
        open_seek = seek.open_seek
        seats = [Online(seek.user_id, open_seek.user.name, open_seek.user.kind), me.online()]
        secrets.SystemRandom().shuffle(seats)
        offer = Offer(open_seek.game, dict(open_seek.options), open_seek.clock, seek.rated,
                      open_seek.rating_min, open_seek.rating_max)
        try:
            await self.start_game(offer, (seats[0], seats[1]), {
                seek.user_id: lambda room: [_seek_taken(seek.seek_id, room)]})
        finally:
            await self.announce(p.SeekRemoved(seek_id=seek.seek_id))
        return p.Ok(id=m.id)

    async def cancel_seek(self, me: Member, m: p.CancelSeek) -> p.ServerMessage:
        await self.seeks.cancel(m.seek_id, me.user_id)
        self.listing.changed()
        await self.announce(p.SeekRemoved(seek_id=m.seek_id))
        return p.Ok(id=m.id)

    # -- challenges ----------------------------------------------------------------------
    async def challenge(self, me: Member, m: p.Challenge, peer: str = "?") -> p.ServerMessage:
        """``forbidden`` if the target takes no challenge from ``me`` (their choice, stored
        with their account); ``conflict`` over a cap of ``me`` or of its address."""
        me = await self.fresh(me)
        target = await self.find(m.to)
        if target is None:
            raise ProtocolError(f"{m.to} is not online", code=ErrorCode.NOT_FOUND)
        if target.user_id == me.user_id:
            raise ProtocolError("you cannot challenge yourself", code=ErrorCode.BAD_REQUEST)
        address = address_key(peer)
        # the caps first: a flooder at its cap costs no read of the database
        await self.challenges.check_room(me.user_id, address, self.challenge_caps)
        terms = await self.store.challenge_terms(target.user_id, me.user_id)
        check_welcome(terms.policy, me, target.name)
        check_rated(Offer(m.game, dict(m.options), m.clock, bool(m.rated)), me, target)
        await self.check_can_play(me, target)
        challenge_id = await self.seeks.new_id()
        received = p.ChallengeReceived(challenge_id=challenge_id, from_=me.wire_in(m.game),
                                       game=m.game, options=dict(m.options), clock=m.clock,
                                       color=m.color, rated=m.rated or None)
        made = Challenge(received, me.user_id, self.node_id, target.user_id,
                         User(name=target.name, kind=target.kind),  # type: ignore[arg-type]
                         target.nodes[0] if target.nodes else self.node_id, address)
        await self.challenges.create(made, self.challenge_caps)
        if not terms.acquainted:
            self._lapse_later(challenge_id, me.user_id)
        await self.to_user(target.user_id, target.nodes, [event_frame(received)])
        return p.ChallengeCreated(id=m.id, challenge_id=challenge_id)

    def _lapse_later(self, challenge_id: int, challenger_id: int) -> None:
        """A stranger's challenge is withdrawn ``stranger_challenge_s`` from now if it is
        still pending then (both told: ``cancelled``, saying it expired)."""
        if self.spawn is None:
            return
        spawn = self.spawn

        def due() -> None:
            self.lapsing.pop(challenge_id, None)
            with contextlib.suppress(RuntimeError):  # the server is stopping
                spawn(self._lapse(challenge_id, challenger_id))

        self.lapsing[challenge_id] = asyncio.get_running_loop().call_later(
            self.settings.stranger_challenge_s, due)

    async def _lapse(self, challenge_id: int, challenger_id: int) -> None:
        try:
            entry = await self.challenges.withdraw(challenge_id, challenger_id)
        except ProtocolError:
            return  # answered or withdrawn meanwhile, on any node
        await self.tell_ended(entry, "cancelled", f"expired: a challenge from a player with "
                              f"no game with {entry.target.name} waits "
                              f"{self.settings.stranger_challenge_s:g} s for an answer")

    def _forget_lapse(self, challenge_id: int) -> None:
        timer = self.lapsing.pop(challenge_id, None)
        if timer is not None:
            timer.cancel()

    async def accept_challenge(self, me: Member, m: p.AcceptChallenge) -> p.ServerMessage:
        """``game_started``, ``challenge_ended`` (accepted), then ok."""
        me = await self.fresh(me)
        entry = await self.challenges.get(m.challenge_id)
        if entry is None or entry.target_id != me.user_id:
            raise ProtocolError(f"no pending challenge {m.challenge_id} for you",
                                code=ErrorCode.NOT_FOUND)
        received = entry.received
        challenger = Online(entry.challenger_id, received.from_.name, received.from_.kind)
        await self.check_can_play(me, challenger)  # refused: it stays pending
        entry = await self.challenges.answer(m.challenge_id, me.user_id)
        self._forget_lapse(m.challenge_id)
        seats = [challenger, me.online()]
        if received.color == "random":
            secrets.SystemRandom().shuffle(seats)
        elif received.color == 1:
            seats.reverse()
        ended = event_frame(p.ChallengeEnded(challenge_id=m.challenge_id, reason="accepted"))
        offer = Offer(received.game, dict(received.options), received.clock,
                      bool(received.rated))
        try:
            await self.start_game(offer, (seats[0], seats[1]),
                                  {entry.challenger_id: lambda _: [ended]})
        except BaseException:
            await self.tell_ended(entry, "cancelled", None)
            raise
        me.send(ended)
        return p.Ok(id=m.id)

    async def decline_challenge(self, me: Member, m: p.DeclineChallenge) -> p.ServerMessage:
        entry = await self.challenges.answer(m.challenge_id, me.user_id)
        await self.tell_ended(entry, "declined", m.message)
        return p.Ok(id=m.id)

    async def cancel_challenge(self, me: Member, m: p.CancelChallenge) -> p.ServerMessage:
        entry = await self.challenges.withdraw(m.challenge_id, me.user_id)
        await self.tell_ended(entry, "cancelled", None)
        return p.Ok(id=m.id)

    async def tell_ended(self, entry: Challenge, reason: str, message: str | None) -> None:
        self._forget_lapse(entry.challenge_id)
        frame = event_frame(p.ChallengeEnded(challenge_id=entry.challenge_id,
                                             reason=reason,  # type: ignore[arg-type]
                                             message=message))
        for user_id, name in ((entry.challenger_id, entry.received.from_.name),
                              (entry.target_id, entry.target.name)):
            await self.tell(user_id, name, [frame])

    # -- games between users on any nodes ------------------------------------------------
    async def start_game(self, offer: Offer, seats: tuple[Online, Online],
                         after: dict[int, AfterStart]) -> GameRoom:
        """Start a game here between two online users (the first takes seat 0), each shown
        with their rating in the game's pool as stored now; each user's connections, here
        and on other nodes, get ``game_started``, then ``after[user](room)``."""
        where: list[tuple[str, ...]] = []
        seated: list[list[Any]] = []
        for user, found in zip(seats, await self.find_all([user.name for user in seats]),
                               strict=True):
            nodes = found.nodes if found else ()
            where.append(nodes)
            here = self.members.get(user.user_id)
            seated.append([*(here.sessions if here is not None else ()),
                           *self.reach.seats_elsewhere(user.user_id, self._others(nodes))])
        stored = await self.store.ratings.of_users(  # a guest has none
            [user.user_id for user in seats if user.kind != "guest"], offer.game)
        period_s = self.members.rating_period_s
        players = tuple(Player(user.user_id, user.name, user.kind, next(
            (shown(pool, period_s) for pool in stored.get(user.user_id, ())), None))
            for user in seats)
        room = await self.games.start(offer.game, offer.options, offer.clock,
                                      (players[0], players[1]), seated, rated=offer.rated)
        started = room.events[0][1] if room.events else event_frame(
            p.GameStarted(game_id=room.game_id, seq=1, snapshot=room.snapshot()))
        for user, nodes in zip(seats, where, strict=True):
            extra = after[user.user_id](room) if user.user_id in after else []
            self.members.send(user.user_id, extra)
            others = self._others(nodes)
            if others:
                await self.reach.seat_elsewhere(room, user.user_id, others, started, extra)
        return room

    def _others(self, nodes: Iterable[str]) -> list[str]:
        return [node for node in nodes if node != self.node_id]


def _seek_taken(seek_id: int, room: GameRoom) -> bytes:
    return event_frame(p.SeekTaken(seek_id=seek_id, game_id=room.game_id))


__all__ = ["Lobby", "Member", "Members", "Offer", "check_rated"]
