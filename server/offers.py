"""The lobby's shared state: who is online, open seeks, pending challenges, rematch offers.

Each is an interface (``PresenceStore``, ``SeekStore``, ``ChallengeStore``,
``RematchStore``) with two implementations chosen when the server starts
(:mod:`server.seam`): the in-memory ones here, for one process, and the Redis ones in
``server.cluster``, for every node of a cluster. Both pass one contract suite
(tests/server/test_offers.py). An offer is taken once, whichever requests race: in memory
because nothing awaits inside an operation, in Redis because each operation that decides
is one Lua script.

Refusals are :class:`protocol.ProtocolError` with the wire code the client gets. A record
carries its protocol event already encoded (``seek_added``, ``challenge_received``) and the
node of the user who made it; stores announce nothing themselves.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgpack

import protocol as p
from protocol import ErrorCode, ProtocolError

from .storage import name_key

LOCAL_NODE = "local"  # the one node of a lone server
Entry = tuple[str, str, frozenset[str]]  # a ladder bot's name, kind and the games it plays


def offer_key(game: str, options: dict[str, Any], clock: p.TimeControl,
              rated: bool = False) -> str:
    """What makes two seeks compatible (same game, options and time control, both rated or
    both casual), as a key; the rating ranges are checked on top of it."""
    parts: list[Any] = [game, sorted(options.items()), clock.to_wire()]
    if rated:  # a casual seek's key is what it was before seeks were rated
        parts.append("rated")
    canonical = msgpack.packb(parts, use_bin_type=True)
    return hashlib.sha256(canonical).hexdigest()[:32]


def _pack(value: object) -> bytes:
    packed: bytes = msgpack.packb(value, use_bin_type=True)
    return packed


# -- records ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Online:
    """A user with a connection somewhere, the nodes they are connected to, and since when
    (``since_ms``: the lobby lists users in the order they came)."""

    user_id: int
    name: str
    kind: str
    nodes: tuple[str, ...] = ()
    since_ms: int = 0

    def pack(self) -> bytes:
        return _pack([self.user_id, self.name, self.kind, self.since_ms])

    @classmethod
    def unpack(cls, data: bytes, nodes: tuple[str, ...] = ()) -> Online:
        user_id, name, kind, *since = msgpack.unpackb(data)
        return cls(user_id, name, kind, nodes, *since)


@dataclass(frozen=True, slots=True)
class Seek:
    """An open seek: ``open_seek`` is what the lobby lists (with ``rated`` and the range);
    ``node_id`` is where its owner is connected; ``rating``: the owner's rating in the
    game's pool when they made it, what the other side's range is checked against;
    ``address``: the address of the connection that opened it (a cap counts them)."""

    open_seek: p.OpenSeek
    user_id: int
    node_id: str
    created_ms: int
    rating: float = 1500.0
    address: str = "?"

    @property
    def seek_id(self) -> int:
        return self.open_seek.seek_id

    @property
    def rated(self) -> bool:
        return bool(self.open_seek.rated)

    @property
    def offer_key(self) -> str:
        s = self.open_seek
        return offer_key(s.game, dict(s.options), s.clock, bool(s.rated))

    def admits(self, rating: float) -> bool:
        """Whether a player rated ``rating`` in the game's pool is within the range."""
        s = self.open_seek
        return ((s.rating_min is None or rating >= s.rating_min)
                and (s.rating_max is None or rating <= s.rating_max))

    def pairs_with(self, other: Seek) -> bool:
        """Compatible offers of two users, each within the other's range."""
        return (self.user_id != other.user_id and self.offer_key == other.offer_key
                and self.admits(other.rating) and other.admits(self.rating))

    @property
    def range_entry(self) -> str:
        """The pairing script's view: "rating:rating_min:rating_max" (empty: no bound)."""
        s = self.open_seek
        bound = ["" if b is None else str(b) for b in (s.rating_min, s.rating_max)]
        return f"{self.rating!r}:{bound[0]}:{bound[1]}"

    def pack(self) -> bytes:
        frame = p.encode(p.SeekAdded(seek=self.open_seek))
        return _pack([self.user_id, self.node_id, self.created_ms, frame, self.rating,
                      self.address])

    @classmethod
    def unpack(cls, data: bytes) -> Seek:
        user_id, node_id, created_ms, frame, *rest = msgpack.unpackb(data)
        event = p.decode_server(frame)
        assert isinstance(event, p.SeekAdded)
        return cls(event.seek, user_id, node_id, created_ms, *rest)


@dataclass(frozen=True, slots=True)
class Challenge:
    """A pending challenge: ``received`` is the event its target gets; ``address``: the
    address of the connection that sent it (a cap counts them)."""

    received: p.ChallengeReceived
    challenger_id: int
    challenger_node: str
    target_id: int
    target: p.User
    target_node: str
    address: str = "?"

    @property
    def challenge_id(self) -> int:
        return self.received.challenge_id

    def pack(self) -> bytes:
        return _pack([p.encode(self.received), self.challenger_id, self.challenger_node,
                      self.target_id, self.target.name, self.target.kind, self.target_node,
                      self.address])

    @classmethod
    def unpack(cls, data: bytes) -> Challenge:
        frame, challenger_id, challenger_node, target_id, name, kind, target_node, *rest = (
            msgpack.unpackb(data))
        received = p.decode_server(frame)
        assert isinstance(received, p.ChallengeReceived)
        return cls(received, challenger_id, challenger_node, target_id,
                   p.User(name=name, kind=kind), target_node, *rest)


@dataclass(frozen=True, slots=True)
class SeekCaps:
    """Open seeks at most: per account, per address, in all."""

    per_owner: int = 5
    per_address: int = 50
    total: int = 5_000


@dataclass(frozen=True, slots=True)
class ChallengeCaps:
    """Pending challenges at most: sent by one user, and sent from one address. There is
    no cap per target: one shared by every challenger would be the flooder's to fill, and
    a legitimate challenger refused (what the challenges one user can be sent cost is
    bounded by the users and addresses that send them)."""

    per_challenger: int = 10
    per_address: int = 50


@dataclass(frozen=True, slots=True)
class RematchOffer:
    """An open rematch offer of a finished game: the seat that offered, both players."""

    game_id: str
    seat: int
    user_ids: tuple[int, int]


# -- refusals --------------------------------------------------------------------------------


def refuse(outcome: str, what: str) -> ProtocolError:
    """The client's refusal for a store's outcome."""
    if outcome == "own":
        return ProtocolError("you cannot accept your own seek", code=ErrorCode.CONFLICT)
    if outcome == "full":
        return ProtocolError(what, code=ErrorCode.CONFLICT)
    if outcome == "forbidden":
        return ProtocolError(what, code=ErrorCode.FORBIDDEN)
    return ProtocolError(what, code=ErrorCode.NOT_FOUND)


def seeks_full(outcome: str, caps: SeekCaps) -> ProtocolError:
    """A seek refused over a cap (``owner``, ``address`` or ``lobby``)."""
    if outcome == "owner":
        return refuse("full", f"at most {caps.per_owner} open seeks")
    if outcome == "address":
        return refuse("full", f"at most {caps.per_address} open seeks from one address")
    return refuse("full", f"the lobby is full ({caps.total} open seeks): accept one, or "
                          "try again later")


def challenges_full(outcome: str, caps: ChallengeCaps) -> ProtocolError:
    """A challenge refused over a cap (``challenger`` or ``address``)."""
    if outcome == "challenger":
        return refuse("full", f"at most {caps.per_challenger} pending challenges: wait for "
                              "an answer or cancel one")
    return refuse("full", f"at most {caps.per_address} pending challenges from one "
                          "address: wait for answers or cancel some")


def not_yourself() -> ProtocolError:
    return ProtocolError("you cannot challenge yourself", code=ErrorCode.BAD_REQUEST)


# -- interfaces ------------------------------------------------------------------------------


class PresenceStore(Protocol):
    async def join(self, user: Online) -> bool:
        """This node has the user's first connection here; True if they were offline
        everywhere until now (announce ``player_online``)."""

    async def leave(self, user: Online) -> bool:
        """This node lost the user's last connection here; True if they are now offline
        everywhere (announce ``player_offline``)."""

    async def find(self, name: str) -> Online | None:
        """The online user of this name (any letter case), with the nodes they are on."""

    async def find_all(self, names: Sequence[str]) -> list[Online | None]:
        """``find`` for each name, at once."""

    async def everyone(self) -> list[Online]:
        """Every online user, in the order they came (then by name)."""


class SeekStore(Protocol):
    async def new_id(self) -> int:
        """A seek or challenge id unused so far."""

    async def open(self, seek: Seek, caps: SeekCaps,
                   exclude: Iterable[int] = ()) -> Seek | None:
        """Pair ``seek`` with the oldest compatible seek of another user, each within the
        other's rating range (``Seek.pairs_with``), not of a user in ``exclude``; returned,
        and closed. Else add it (None): ``conflict`` if its owner has ``caps.per_owner``
        open (checked first), its address ``caps.per_address``, or the lobby
        ``caps.total``."""

    async def restore(self, seek: Seek) -> None:
        """Open again a seek that ``open`` paired and the pairing gave back (its owner
        could not play): in its place by age, with no cap checked."""

    async def get(self, seek_id: int) -> Seek | None:
        """An open seek (to check its rated flag and range before taking it: neither
        changes while it is open, and an id is never used again)."""

    async def take(self, seek_id: int, taker_id: int) -> Seek:
        """Close a seek for ``taker_id`` to accept: ``not_found``, or ``conflict`` if it is
        the taker's own. Exactly one of several takers gets it."""

    async def cancel(self, seek_id: int, owner_id: int) -> Seek:
        """Close one's own seek: ``not_found``, or ``forbidden`` if it is someone else's."""

    async def withdraw_all(self, user_id: int) -> list[Seek]:
        """Close every seek of a user (who went offline)."""

    async def page(self, after: int, limit: int) -> tuple[list[Seek], int]:
        """The oldest ``limit`` open seeks of ids above ``after`` (0: from the oldest),
        oldest first, and how many more there are after them."""

    async def count(self) -> int:
        """How many seeks are open."""

    def held(self) -> int:
        """How many seeks this process holds in its memory (what a flood adds here)."""

    def compact(self) -> None:
        """Rebuild what this process holds at its present size (a dict never shrinks)."""


class ChallengeStore(Protocol):
    async def create(self, challenge: Challenge, caps: ChallengeCaps) -> None:
        """Record a pending challenge (its id from ``SeekStore.new_id``): ``bad_request``
        to oneself, ``conflict`` over a cap (the challenger's, then its address's)."""

    async def check_room(self, challenger_id: int, address: str, caps: ChallengeCaps
                         ) -> None:
        """``conflict`` if the challenger or the address has its cap of pending challenges
        now: a cheap look before the work a challenge costs (``create`` decides)."""

    async def get(self, challenge_id: int) -> Challenge | None:
        """A pending challenge."""

    async def answer(self, challenge_id: int, target_id: int) -> Challenge:
        """Close a challenge its target accepts or declines: ``not_found`` for anyone else,
        and for the second answer."""

    async def withdraw(self, challenge_id: int, challenger_id: int) -> Challenge:
        """Close a challenge its challenger takes back: ``forbidden`` for its target,
        ``not_found`` for anyone else."""

    async def withdraw_all(self, user_id: int) -> list[Challenge]:
        """Close every challenge a user made or received (they went offline)."""


class RematchStore(Protocol):
    async def offer(self, offer: RematchOffer) -> str:
        """``offered`` (new), ``again`` (this seat's already), or ``accept`` (the other
        seat's offer was open: now closed)."""

    async def get(self, game_id: str) -> RematchOffer | None:
        """The open offer of a game."""

    async def close(self, game_id: str, not_seat: int | None = None) -> RematchOffer | None:
        """Close a game's offer (not one made by ``not_seat``): the offer, or None."""

    async def withdraw_all(self, user_id: int) -> list[RematchOffer]:
        """Close every offer of a user's games (they went offline)."""


# -- one process -----------------------------------------------------------------------------


class LadderRoster(Protocol):
    """The ladder's bots, wherever they are connected, and who pairs the rounds."""

    async def enter(self, user_id: int, entry: Entry) -> None: ...

    async def exit(self, user_id: int) -> None: ...

    async def read(self) -> dict[int, Entry]:
        """Every bot on the ladder."""

    async def leading(self) -> bool:
        """Whether this process pairs the rounds (now)."""


class MemoryPresence:
    """``PresenceStore`` of one process (a lone server: one node)."""

    def __init__(self, node_id: str = LOCAL_NODE) -> None:
        self.node_id = node_id
        self._online: dict[str, Online] = {}

    async def join(self, user: Online) -> bool:
        key = name_key(user.name)
        if key in self._online:
            return False
        self._online[key] = Online(user.user_id, user.name, user.kind, (self.node_id,),
                                   user.since_ms)
        return True

    async def leave(self, user: Online) -> bool:
        return self._online.pop(name_key(user.name), None) is not None

    async def find(self, name: str) -> Online | None:
        return self._online.get(name_key(name))

    async def find_all(self, names: Sequence[str]) -> list[Online | None]:
        return [self._online.get(name_key(name)) for name in names]

    async def everyone(self) -> list[Online]:
        return list(self._online.values())  # in the order they came

    def compact(self) -> None:
        self._online = dict(self._online)


class MemorySeeks:
    """``SeekStore`` in one process's memory, indexed so that an operation costs what it
    touches (the seeks of one offer, of one user), not what the lobby holds."""

    def __init__(self) -> None:
        self._seeks: dict[int, Seek] = {}  # insertion order is id order
        self._by_offer: dict[str, dict[int, Seek]] = {}  # id order
        self._by_user: dict[int, set[int]] = {}
        self._by_address: dict[str, int] = {}  # non-zero counts only
        self._ids = itertools.count(1)

    async def new_id(self) -> int:
        return next(self._ids)

    async def open(self, seek: Seek, caps: SeekCaps,
                   exclude: Iterable[int] = ()) -> Seek | None:
        if len(self._by_user.get(seek.user_id, ())) >= caps.per_owner:
            raise seeks_full("owner", caps)
        skip = set(exclude)
        same = self._by_offer.get(seek.offer_key)
        partner = None if same is None else next(
            (s for s in same.values() if s.user_id not in skip and s.pairs_with(seek)), None)
        if partner is not None:
            self._forget(partner)
            return partner
        if self._by_address.get(seek.address, 0) >= caps.per_address:
            raise seeks_full("address", caps)
        if len(self._seeks) >= caps.total:
            raise seeks_full("lobby", caps)
        self._add(seek)
        return None

    async def restore(self, seek: Seek) -> None:
        self._add(seek)
        self._seeks = dict(sorted(self._seeks.items()))
        self._by_offer[seek.offer_key] = dict(sorted(self._by_offer[seek.offer_key].items()))

    def held(self) -> int:
        return len(self._seeks)

    def _add(self, seek: Seek) -> None:
        self._seeks[seek.seek_id] = seek
        self._by_offer.setdefault(seek.offer_key, {})[seek.seek_id] = seek
        self._by_user.setdefault(seek.user_id, set()).add(seek.seek_id)
        self._by_address[seek.address] = self._by_address.get(seek.address, 0) + 1

    def _forget(self, seek: Seek) -> None:
        del self._seeks[seek.seek_id]
        same = self._by_offer[seek.offer_key]
        del same[seek.seek_id]
        if not same:
            del self._by_offer[seek.offer_key]
        mine = self._by_user[seek.user_id]
        mine.discard(seek.seek_id)
        if not mine:
            del self._by_user[seek.user_id]
        left = self._by_address[seek.address] - 1
        if left:
            self._by_address[seek.address] = left
        else:
            del self._by_address[seek.address]

    async def get(self, seek_id: int) -> Seek | None:
        return self._seeks.get(seek_id)

    async def take(self, seek_id: int, taker_id: int) -> Seek:
        seek = self._seeks.get(seek_id)
        if seek is None:
            raise refuse("not_found", f"no open seek {seek_id}")
        if seek.user_id == taker_id:
            raise refuse("own", "")
        self._forget(seek)
        return seek

    async def cancel(self, seek_id: int, owner_id: int) -> Seek:
        seek = self._seeks.get(seek_id)
        if seek is None:
            raise refuse("not_found", f"no open seek {seek_id}")
        if seek.user_id != owner_id:
            raise refuse("forbidden", f"seek {seek_id} is not yours")
        self._forget(seek)
        return seek

    async def withdraw_all(self, user_id: int) -> list[Seek]:
        mine = [self._seeks[i] for i in sorted(self._by_user.get(user_id, ()))]
        for seek in mine:
            self._forget(seek)
        return mine

    async def page(self, after: int, limit: int) -> tuple[list[Seek], int]:
        later = [seek for seek_id, seek in self._seeks.items() if seek_id > after]
        # ids are taken before the seek opens: insertion order is nearly, not exactly, id order
        shown = heapq.nsmallest(limit, later, key=lambda seek: seek.seek_id)
        return shown, len(later) - len(shown)

    async def count(self) -> int:
        return len(self._seeks)

    def compact(self) -> None:
        """Rebuild the tables at their present size (a dict never shrinks)."""
        self._seeks = dict(self._seeks)
        self._by_offer = {key: dict(same) for key, same in self._by_offer.items()}
        self._by_user = dict(self._by_user)
        self._by_address = dict(self._by_address)


class MemoryChallenges:
    """``ChallengeStore`` in one process's memory."""

    def __init__(self) -> None:
        self._pending: dict[int, Challenge] = {}
        self._out: dict[int, set[int]] = {}
        self._in: dict[int, set[int]] = {}
        self._by_address: dict[str, int] = {}  # non-zero counts only

    async def create(self, challenge: Challenge, caps: ChallengeCaps) -> None:
        if challenge.challenger_id == challenge.target_id:
            raise not_yourself()
        if len(self._out.get(challenge.challenger_id, ())) >= caps.per_challenger:
            raise challenges_full("challenger", caps)
        if self._by_address.get(challenge.address, 0) >= caps.per_address:
            raise challenges_full("address", caps)
        self._pending[challenge.challenge_id] = challenge
        self._out.setdefault(challenge.challenger_id, set()).add(challenge.challenge_id)
        self._in.setdefault(challenge.target_id, set()).add(challenge.challenge_id)
        self._by_address[challenge.address] = self._by_address.get(challenge.address, 0) + 1

    async def check_room(self, challenger_id: int, address: str, caps: ChallengeCaps
                         ) -> None:
        if len(self._out.get(challenger_id, ())) >= caps.per_challenger:
            raise challenges_full("challenger", caps)
        if self._by_address.get(address, 0) >= caps.per_address:
            raise challenges_full("address", caps)

    async def get(self, challenge_id: int) -> Challenge | None:
        return self._pending.get(challenge_id)

    def _close(self, challenge: Challenge) -> Challenge:
        del self._pending[challenge.challenge_id]
        for table, user_id in ((self._out, challenge.challenger_id),
                               (self._in, challenge.target_id)):
            ids = table[user_id]
            ids.discard(challenge.challenge_id)
            if not ids:
                del table[user_id]
        left = self._by_address[challenge.address] - 1
        if left:
            self._by_address[challenge.address] = left
        else:
            del self._by_address[challenge.address]
        return challenge

    async def answer(self, challenge_id: int, target_id: int) -> Challenge:
        found = self._pending.get(challenge_id)
        if found is None or found.target_id != target_id:
            raise refuse("not_found", f"no pending challenge {challenge_id} for you")
        return self._close(found)

    async def withdraw(self, challenge_id: int, challenger_id: int) -> Challenge:
        found = self._pending.get(challenge_id)
        if found is not None and found.target_id == challenger_id:
            raise refuse("forbidden", f"challenge {challenge_id} is not yours to withdraw")
        if found is None or found.challenger_id != challenger_id:
            raise refuse("not_found", f"no pending challenge {challenge_id} for you")
        return self._close(found)

    async def withdraw_all(self, user_id: int) -> list[Challenge]:
        ids = sorted({*self._out.get(user_id, ()), *self._in.get(user_id, ())})
        return [self._close(self._pending[i]) for i in ids]

    def compact(self) -> None:
        self._pending = dict(self._pending)
        self._out = dict(self._out)
        self._in = dict(self._in)
        self._by_address = dict(self._by_address)


class MemoryRematches:
    """``RematchStore`` in one process's memory."""

    def __init__(self) -> None:
        self._offers: dict[str, RematchOffer] = {}
        self._by_user: dict[int, set[str]] = {}

    async def offer(self, offer: RematchOffer) -> str:
        held = self._offers.get(offer.game_id)
        if held is not None:
            if held.seat == offer.seat:
                return "again"
            self._close(held)
            return "accept"
        self._offers[offer.game_id] = offer
        for user_id in offer.user_ids:
            self._by_user.setdefault(user_id, set()).add(offer.game_id)
        return "offered"

    async def get(self, game_id: str) -> RematchOffer | None:
        return self._offers.get(game_id)

    def _close(self, offer: RematchOffer) -> RematchOffer:
        del self._offers[offer.game_id]
        for user_id in offer.user_ids:
            games = self._by_user.get(user_id)
            if games is not None:
                games.discard(offer.game_id)
                if not games:
                    del self._by_user[user_id]
        return offer

    async def close(self, game_id: str, not_seat: int | None = None) -> RematchOffer | None:
        held = self._offers.get(game_id)
        if held is None or held.seat == not_seat:
            return None
        return self._close(held)

    async def withdraw_all(self, user_id: int) -> list[RematchOffer]:
        return [self._close(self._offers[g]) for g in sorted(self._by_user.get(user_id, ()))]


__all__ = [
    "LOCAL_NODE", "Challenge", "ChallengeCaps", "ChallengeStore", "MemoryChallenges",
    "MemoryPresence", "MemoryRematches", "MemorySeeks", "Online", "PresenceStore",
    "RematchOffer", "RematchStore", "Seek", "SeekCaps", "SeekStore", "offer_key",
]


class MemoryRoster:
    """``LadderRoster`` of one process: it pairs every round."""

    def __init__(self) -> None:
        self._entries: dict[int, Entry] = {}

    async def enter(self, user_id: int, entry: Entry) -> None:
        self._entries[user_id] = entry

    async def exit(self, user_id: int) -> None:
        self._entries.pop(user_id, None)

    async def read(self) -> dict[int, Entry]:
        return dict(self._entries)

    async def leading(self) -> bool:
        return True
