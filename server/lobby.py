"""The lobby: open seeks paired automatically, direct challenges, and who is online.

Seeks and challenges live in memory only: they are offers, not games, and a restart
withdraws them (clients see the connection drop and seek again). A seek is paired with the
oldest compatible seek of another user: same game, same options, same time control, both
rated or both casual, and each player's rating in the game's pool within the other's
range (a seek's ``rating_min``/``rating_max``; a player without a rating counts as 1500).

Each member carries their stored ratings (loaded at login, replaced when a rated game of
theirs ends), so the lobby shows them beside names without asking the database.

Everything a stranger can add here is bounded (docs/RELIABILITY.md, "Bounded structures"):
open seeks per account, per address and in all; pending challenges per target and per
challenger; and the ``lobby`` reply shows at most so many seeks and players, with a count of
the rest. Pairing looks only at the seeks with the same offer (``Offer.key``), oldest first,
so a seek costs the same with 10 or 10,000 open; a member's seeks and challenges are indexed
on the member, so leaving costs what the member had, not what the lobby holds.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import protocol as p
from protocol import (
    ChallengeEnded,
    ErrorCode,
    OpenSeek,
    PlayerOffline,
    PlayerOnline,
    ProtocolError,
    SeekAdded,
    SeekRemoved,
    TimeControl,
    User,
    event_frame,
)

from .ratings.glicko2 import DEFAULT
from .ratings.shown import aged_now, shown
from .storage import GameRatings, PoolRating
from .storage.rating_writes import score_of

if TYPE_CHECKING:
    from .config import Settings

DEFAULT_PERIOD_S = 86_400.0


@dataclass(eq=False, slots=True)
class Member:
    """An online user, their connections (anything with ``send_frame``), and what they
    have open in the lobby (seek ids; challenge ids sent and received).

    The ids are dict keys (values None), not sets: most members have none open, and an
    empty dict is 64 bytes where an empty set is 216, for each online user."""

    user_id: int
    name: str
    kind: str
    sessions: set[Any] = field(default_factory=set)
    seeks: dict[int, None] = field(default_factory=dict)
    challenges_out: dict[int, None] = field(default_factory=dict)
    challenges_in: dict[int, None] = field(default_factory=dict)
    ratings: dict[str, PoolRating] = field(default_factory=dict)  # by pool (game key)
    period_s: float = DEFAULT_PERIOD_S

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

    def send(self, frame: bytes) -> None:
        for session in list(self.sessions):
            session.send_frame(frame)


OfferKey = tuple[str, tuple[tuple[str, Any], ...], TimeControl, bool]


@dataclass(frozen=True)
class Offer:
    """What a seek or challenge proposes."""

    game: str
    options: dict[str, Any]
    clock: TimeControl
    rated: bool = False
    rating_min: int | None = None
    rating_max: int | None = None

    def matches(self, other: Offer) -> bool:
        return ((self.game, self.options, self.clock, self.rated)
                == (other.game, other.options, other.clock, other.rated))

    def key(self) -> OfferKey:
        """Equal for exactly the offers that ``matches`` (the pairing index's key)."""
        return self.game, tuple(sorted(self.options.items())), self.clock, self.rated

    def admits(self, rating: float) -> bool:
        """Whether a player rated ``rating`` in this game's pool is within the range."""
        return ((self.rating_min is None or rating >= self.rating_min)
                and (self.rating_max is None or rating <= self.rating_max))


@dataclass(eq=False)
class OpenSeekEntry:
    seek_id: int
    owner: Member
    offer: Offer
    address: str = "?"  # of the connection that opened it
    created: float = field(default_factory=time.monotonic)

    def wire(self) -> OpenSeek:
        offer = self.offer
        return OpenSeek(seek_id=self.seek_id, user=self.owner.wire_in(offer.game),
                        game=offer.game, options=offer.options, clock=offer.clock,
                        rated=offer.rated or None, rating_min=offer.rating_min,
                        rating_max=offer.rating_max)

    def admits(self, member: Member) -> bool:
        """Whether ``member`` may take this seek (within its rating range)."""
        return self.offer.admits(member.rating_in(self.offer.game))


@dataclass(eq=False)
class ChallengeEntry:
    challenge_id: int
    challenger: Member
    target: Member
    offer: Offer
    color: int | str  # the challenger's seat, or "random"


@dataclass(frozen=True)
class LobbyCaps:
    """The lobby's bounds (from :class:`~server.config.Settings`)."""

    open_seeks: int = 5  # per account
    seeks_per_address: int = 50
    seeks: int = 5_000
    seeks_shown: int = 1_000
    players_shown: int = 1_000
    challenges_per_target: int = 50
    challenges_per_challenger: int = 10

    @classmethod
    def from_settings(cls, settings: Settings) -> LobbyCaps:
        return cls(open_seeks=settings.max_open_seeks,
                   seeks_per_address=settings.max_seeks_per_address,
                   seeks=settings.max_seeks, seeks_shown=settings.lobby_seeks_shown,
                   players_shown=settings.lobby_players_shown,
                   challenges_per_target=settings.max_challenges_per_target,
                   challenges_per_challenger=settings.max_challenges_per_challenger)


@dataclass(frozen=True)
class LobbyView:
    """What a ``lobby`` reply shows, and how many it leaves out."""

    seeks: tuple[OpenSeek, ...]
    players: tuple[User, ...]
    more_seeks: int
    more_players: int


class Lobby:
    """Online members, open seeks, pending challenges, and the lobby's subscribers."""

    def __init__(self, settings: Settings | None = None, caps: LobbyCaps | None = None
                 ) -> None:
        self.caps = caps or (LobbyCaps.from_settings(settings) if settings else LobbyCaps())
        self.members: dict[int, Member] = {}
        self._by_name: dict[str, Member] = {}  # by lower-case name, for challenges
        self.seeks: dict[int, OpenSeekEntry] = {}  # oldest first
        self._by_offer: dict[OfferKey, dict[int, OpenSeekEntry]] = {}  # oldest first
        self._by_address: dict[str, int] = {}  # open seeks per address (only non-zero)
        self.challenges: dict[int, ChallengeEntry] = {}
        self.subscribers: set[Any] = set()
        self._ids = itertools.count(1)
        self.rating_period_s = settings.rating_period_s if settings else DEFAULT_PERIOD_S
        # told of a member whose last connection closed (rematch offers lapse, the ladder)
        self.on_left: list[Callable[[int], None]] = []
        self.announce_presence = True  # False on a cluster node: its lobby feed does
        self.peak = 0  # the largest size() since the last take_peak()

    @property
    def max_open_seeks(self) -> int:
        return self.caps.open_seeks

    # -- presence ------------------------------------------------------------------------------
    def join(self, user_id: int, name: str, kind: str, session: Any,
             ratings: list[PoolRating] | None = None) -> Member:
        """A connection logged in as this user; ``ratings``: theirs, as stored now."""
        member = self.members.get(user_id)
        if member is None:
            member = self.members[user_id] = Member(user_id, name, kind,
                                                    period_s=self.rating_period_s)
            if ratings:  # else the empty default stays: a guest has none
                member.ratings = {pool.pool: pool for pool in ratings}
            key = name.lower()
            self._by_name[name if key == name else key] = member  # one string, not two
            if self.announce_presence:
                self._tell_subscribers(PlayerOnline(user=member.wire()))
        elif ratings is not None:
            member.ratings = {pool.pool: pool for pool in ratings}
        member.sessions.add(session)
        self.peak = max(self.peak, self.size())
        return member

    def rated_game(self, pool: str, changes: GameRatings, winner: int | None, *,
                   now: datetime) -> None:
        """A rated game ended: its online players' ratings become the game's afters (as
        the same transaction stored them)."""
        for change in changes:
            member = self.members.get(change.user_id)
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

    def leave(self, member: Member, session: Any) -> None:
        """Forget a connection; the member's last one takes their seeks and challenges."""
        member.sessions.discard(session)
        self.subscribers.discard(session)
        if member.sessions:
            return
        del self.members[member.user_id]
        if self._by_name.get(member.name.lower()) is member:
            del self._by_name[member.name.lower()]
        for seek_id in list(member.seeks):
            self.remove_seek(seek_id)
        for challenge_id in [*member.challenges_out, *member.challenges_in]:
            entry = self.challenges.get(challenge_id)
            if entry is not None:
                self.end_challenge(entry, "cancelled")
        if self.announce_presence:
            self._tell_subscribers(PlayerOffline(name=member.name))
        for listener in self.on_left:
            listener(member.user_id)

    def compact(self) -> None:
        """Rebuild the tables at their present size: a dict never shrinks as entries go, so
        after a flood of members or seeks they would keep the flood's size (a copy of a
        dict is sized for what it holds)."""
        self.members = dict(self.members)
        self._by_name = dict(self._by_name)
        self.seeks = dict(self.seeks)
        self._by_offer = {key: dict(same) for key, same in self._by_offer.items()}
        self._by_address = dict(self._by_address)
        self.challenges = dict(self.challenges)
        self.subscribers = set(self.subscribers)

    def take_peak(self) -> int:
        """The largest :meth:`size` since the last call."""
        peak, self.peak = max(self.peak, self.size()), self.size()
        return peak

    def size(self) -> int:
        """Members and open seeks: what a crowd adds."""
        return len(self.members) + len(self.seeks)

    def by_name(self, name: str) -> Member | None:
        return self._by_name.get(name.lower())

    def _tell_subscribers(self, event: Any) -> None:
        if not self.subscribers:
            return
        frame = event_frame(event)
        for session in list(self.subscribers):
            session.send_frame(frame)

    # -- the snapshot --------------------------------------------------------------------------
    def view(self) -> LobbyView:
        """The oldest open seeks and the members online, at most ``seeks_shown`` and
        ``players_shown`` of them, with how many more there are."""
        seeks = tuple(s.wire() for s in itertools.islice(self.seeks.values(),
                                                         self.caps.seeks_shown))
        players = tuple(m.wire() for m in itertools.islice(self.members.values(),
                                                           self.caps.players_shown))
        return LobbyView(seeks, players, len(self.seeks) - len(seeks),
                         len(self.members) - len(players))

    # -- seeks ---------------------------------------------------------------------------------
    def add_seek(self, owner: Member, offer: Offer, address: str = "?",
                 can_play: Callable[[Member], bool] = lambda _: True
                 ) -> tuple[int, OpenSeekEntry | None]:
        """Open a seek; return its id and the older compatible seek it pairs with, if any
        (of a member who ``can_play`` a game more).

        When a partner is found, neither seek stays open (the caller starts the game).
        Refused with ``conflict`` over a cap: the owner's open seeks, the address's, the
        lobby's.
        """
        caps = self.caps
        if len(owner.seeks) >= caps.open_seeks:
            raise ProtocolError(f"at most {caps.open_seeks} open seeks",
                                code=ErrorCode.CONFLICT)
        key = offer.key()
        same = self._by_offer.get(key)
        # the oldest of another user's; the owner has at most ``open_seeks`` of them
        mine = owner.rating_in(offer.game)
        partner = None if same is None else next(
            (s for s in same.values() if s.owner is not owner and can_play(s.owner)
             and s.offer.admits(mine) and offer.admits(s.owner.rating_in(offer.game))), None)
        seek_id = next(self._ids)
        if partner is not None:
            self.remove_seek(partner.seek_id)
            return seek_id, partner
        if self._by_address.get(address, 0) >= caps.seeks_per_address:
            raise ProtocolError(f"at most {caps.seeks_per_address} open seeks from one "
                                "address", code=ErrorCode.CONFLICT)
        if len(self.seeks) >= caps.seeks:
            raise ProtocolError(f"the lobby is full ({caps.seeks} open seeks): accept one, "
                                "or try again later", code=ErrorCode.CONFLICT)
        entry = OpenSeekEntry(seek_id, owner, offer, address)
        self.seeks[seek_id] = entry
        self._by_offer.setdefault(key, {})[seek_id] = entry
        self._by_address[address] = self._by_address.get(address, 0) + 1
        owner.seeks[seek_id] = None
        self.peak = max(self.peak, self.size())
        self._tell_subscribers(SeekAdded(seek=entry.wire()))
        return seek_id, None

    def take_seek(self, seek_id: int, taker: Member) -> OpenSeekEntry:
        """Close a seek for ``taker`` to accept; subscribers are told by ``seek_taken``
        (once the game has started, so that the taker sees ``game_started`` first)."""
        entry = self.seeks.get(seek_id)
        if entry is None:
            raise ProtocolError(f"no open seek {seek_id}", code=ErrorCode.NOT_FOUND)
        if entry.owner is taker:
            raise ProtocolError("you cannot accept your own seek", code=ErrorCode.CONFLICT)
        if not entry.admits(taker):
            raise ProtocolError(
                f"seek {seek_id} is for players rated {entry.offer.rating_min or ''}.."
                f"{entry.offer.rating_max or ''} in {entry.offer.game}; you are rated "
                f"{round(taker.rating_in(entry.offer.game))}", code=ErrorCode.FORBIDDEN)
        if entry.offer.rated and taker.kind == "guest":
            raise ProtocolError("guests play casual games only: log in to take a rated seek",
                                code=ErrorCode.FORBIDDEN)
        self._forget_seek(entry)
        return entry

    def seek_taken(self, seek_id: int) -> None:
        self._tell_subscribers(SeekRemoved(seek_id=seek_id))

    def cancel_seek(self, seek_id: int, owner: Member) -> None:
        entry = self.seeks.get(seek_id)
        if entry is None:
            raise ProtocolError(f"no open seek {seek_id}", code=ErrorCode.NOT_FOUND)
        if entry.owner is not owner:
            raise ProtocolError(f"seek {seek_id} is not yours", code=ErrorCode.FORBIDDEN)
        self.remove_seek(seek_id)

    def remove_seek(self, seek_id: int) -> None:
        entry = self.seeks.get(seek_id)
        if entry is not None:
            self._forget_seek(entry)
            self._tell_subscribers(SeekRemoved(seek_id=seek_id))

    def _forget_seek(self, entry: OpenSeekEntry) -> None:
        """Remove a seek from every index."""
        del self.seeks[entry.seek_id]
        key = entry.offer.key()
        same = self._by_offer[key]
        del same[entry.seek_id]
        if not same:
            del self._by_offer[key]
        left = self._by_address[entry.address] - 1
        if left:
            self._by_address[entry.address] = left
        else:
            del self._by_address[entry.address]
        entry.owner.seeks.pop(entry.seek_id, None)

    # -- challenges ----------------------------------------------------------------------------
    def add_challenge(self, challenger: Member, target: Member, offer: Offer,
                      color: int | str) -> ChallengeEntry:
        """A pending challenge; ``conflict`` when the challenger has
        ``challenges_per_challenger`` pending, or the target ``challenges_per_target``."""
        if target is challenger:
            raise ProtocolError("you cannot challenge yourself", code=ErrorCode.BAD_REQUEST)
        caps = self.caps
        if len(challenger.challenges_out) >= caps.challenges_per_challenger:
            raise ProtocolError(f"at most {caps.challenges_per_challenger} pending challenges: "
                                "wait for an answer or cancel one", code=ErrorCode.CONFLICT)
        if len(target.challenges_in) >= caps.challenges_per_target:
            raise ProtocolError(f"{target.name} has {caps.challenges_per_target} challenges "
                                "waiting already: try again later", code=ErrorCode.CONFLICT)
        entry = ChallengeEntry(next(self._ids), challenger, target, offer, color)
        self.challenges[entry.challenge_id] = entry
        challenger.challenges_out[entry.challenge_id] = None
        target.challenges_in[entry.challenge_id] = None
        return entry

    def pending(self, challenge_id: int, member: Member, *, as_target: bool) -> ChallengeEntry:
        """The challenge ``member`` may answer (``as_target``) or withdraw.

        not_found if there is none to answer; forbidden to withdraw someone else's.
        """
        entry = self.challenges.get(challenge_id)
        if entry is not None and not as_target and member is entry.target:
            raise ProtocolError(f"challenge {challenge_id} is not yours to withdraw",
                                code=ErrorCode.FORBIDDEN)
        if entry is None or member is not (entry.target if as_target else entry.challenger):
            raise ProtocolError(f"no pending challenge {challenge_id} for you",
                                code=ErrorCode.NOT_FOUND)
        return entry

    def is_pending_for(self, challenge_id: int, member: Member | None) -> bool:
        """Whether ``member`` has challenge ``challenge_id`` to answer."""
        return member is not None and challenge_id in member.challenges_in

    def end_challenge(self, entry: ChallengeEntry, reason: str, message: str | None = None
                      ) -> None:
        """Close a challenge and tell both sides why (``message``: in the words of whoever
        ended it)."""
        if not self._forget_challenge(entry):
            return
        self.tell_challenge_ended(entry, reason, message)

    def take_challenge(self, entry: ChallengeEntry) -> None:
        """Close an accepted challenge; ``tell_challenge_ended`` once the game has started."""
        self._forget_challenge(entry)

    def _forget_challenge(self, entry: ChallengeEntry) -> bool:
        if self.challenges.pop(entry.challenge_id, None) is None:
            return False
        entry.challenger.challenges_out.pop(entry.challenge_id, None)
        entry.target.challenges_in.pop(entry.challenge_id, None)
        return True

    def tell_challenge_ended(self, entry: ChallengeEntry, reason: str,
                             message: str | None = None) -> None:
        frame = event_frame(ChallengeEnded(challenge_id=entry.challenge_id,
                                           reason=reason,  # type: ignore[arg-type]
                                           message=message))
        entry.challenger.send(frame)
        entry.target.send(frame)
