"""Seeks and challenges shared by every node: Redis stores, and in-memory twins.

A lobby offer is taken once, whichever nodes race for it: each operation that decides who
gets an offer is one Lua script, so Redis runs it whole, one at a time.

    SeekStore        open (pair with the oldest compatible seek of another user, or add),
                     take (accept_seek), cancel, withdraw_all (the owner left), listing
    ChallengeStore   create, answer (accept or decline: the target only, once),
                     withdraw (the challenger only), withdraw_all (either side left)

Both are ``Protocol`` interfaces with two implementations: ``RedisSeeks`` /
``RedisChallenges`` for a cluster and ``MemorySeeks`` / ``MemoryChallenges`` for one
process (what ``server/lobby.py`` keeps in its dicts today, behind the same interface, so
the lobby can be moved onto it without a branch per mode). Refusals are
``protocol.ProtocolError`` with the wire code the client gets, as in ``server/lobby.py``.

A record carries its protocol event already encoded (``seek_added`` for a seek,
``challenge_received`` for a challenge) and the node of the user who made it, where the
game that pairs it must be announced. Stores do not announce anything themselves: the
caller publishes lobby events (``feeds.Feed``) after the store decided.

Redis layout (under ``tessera:{cluster}:``)::

    seeks                      hash  seek id -> the record
    seeks:owner                hash  seek id -> "user id:offer key" (read by the scripts)
    seeks:range                hash  seek id -> "rating:rating_min:rating_max" (pairing)
    seeks:offer:{offer key}    zset  the open seeks of one offer, scored by id (oldest first)
    seeks:user:{user id}       set   one user's open seek ids
    challenges                 hash  challenge id -> the record
    challenges:parties         hash  challenge id -> "challenger id:target id"
    challenges:user:{user id}  set   the challenges a user made or received
    lobby:ids                  counter of seek and challenge ids

Scripts touch keys derived inside them (another user's set): fine on one Redis server; a
Redis Cluster would need the cluster's keys in one hash slot.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from dataclasses import dataclass
from typing import Any, Protocol

import msgpack
import redis.asyncio as aioredis

import protocol as p
from protocol import ErrorCode, ProtocolError

from .keys import Keys


def offer_key(game: str, options: dict[str, Any], clock: p.TimeControl,
              rated: bool = False) -> str:
    """What makes two seeks compatible (same game, options and time control, both rated or
    both casual), as a key; the rating ranges are checked on top of it."""
    parts: list[Any] = [game, sorted(options.items()), clock.to_wire()]
    if rated:  # a casual seek's key is what it was before seeks were rated
        parts.append("rated")
    canonical = msgpack.packb(parts, use_bin_type=True)
    return hashlib.sha256(canonical).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Seek:
    """An open seek: ``open_seek`` is what the lobby lists (with ``rated`` and the range);
    ``node_id`` is where its owner is connected; ``rating``: the owner's rating in the
    game's pool when they made it, what the other side's range is checked against."""

    open_seek: p.OpenSeek
    user_id: int
    node_id: str
    created_ms: int
    rating: float = 1500.0

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
        return _pack([self.user_id, self.node_id, self.created_ms, frame, self.rating])

    @classmethod
    def unpack(cls, data: bytes) -> Seek:
        user_id, node_id, created_ms, frame, *rest = msgpack.unpackb(data)
        event = p.decode_server(frame)
        assert isinstance(event, p.SeekAdded)
        return cls(event.seek, user_id, node_id, created_ms, *rest)


@dataclass(frozen=True, slots=True)
class Challenge:
    """A pending challenge: ``received`` is the event its target gets."""

    received: p.ChallengeReceived
    challenger_id: int
    challenger_node: str
    target_id: int
    target: p.User
    target_node: str

    @property
    def challenge_id(self) -> int:
        return self.received.challenge_id

    def pack(self) -> bytes:
        return _pack([p.encode(self.received), self.challenger_id, self.challenger_node,
                      self.target_id, self.target.name, self.target.kind, self.target_node])

    @classmethod
    def unpack(cls, data: bytes) -> Challenge:
        frame, challenger_id, challenger_node, target_id, name, kind, target_node = (
            msgpack.unpackb(data))
        received = p.decode_server(frame)
        assert isinstance(received, p.ChallengeReceived)
        return cls(received, challenger_id, challenger_node, target_id,
                   p.User(name=name, kind=kind), target_node)


def _pack(value: object) -> bytes:
    packed: bytes = msgpack.packb(value, use_bin_type=True)
    return packed


def _bounds(seek: Seek) -> list[str]:
    """A seek's rating_min and rating_max for a script ('' for none)."""
    s = seek.open_seek
    return ["" if b is None else str(b) for b in (s.rating_min, s.rating_max)]


def now_ms() -> int:
    return int(time.time() * 1000)


def _refuse(outcome: str, what: str) -> ProtocolError:
    if outcome == "own":
        return ProtocolError("you cannot accept your own seek", code=ErrorCode.CONFLICT)
    if outcome == "full":
        return ProtocolError(what, code=ErrorCode.CONFLICT)
    if outcome == "forbidden":
        return ProtocolError(what, code=ErrorCode.FORBIDDEN)
    return ProtocolError(what, code=ErrorCode.NOT_FOUND)


# -- interfaces ------------------------------------------------------------------------------


class SeekStore(Protocol):
    async def new_id(self) -> int:
        """A seek or challenge id unused so far."""

    async def open(self, seek: Seek, max_open: int) -> Seek | None:
        """Pair ``seek`` with the oldest compatible seek of another user, each within the
        other's rating range (``Seek.pairs_with``; returned, and closed), or else add it
        (None). ``conflict`` if its owner has ``max_open``."""

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

    async def listing(self) -> list[Seek]:
        """Every open seek, oldest first."""


class ChallengeStore(Protocol):
    async def create(self, challenge: Challenge) -> None:
        """Record a pending challenge (its id from ``SeekStore.new_id``)."""

    async def answer(self, challenge_id: int, target_id: int) -> Challenge:
        """Close a challenge its target accepts or declines: ``not_found`` for anyone else,
        and for the second answer."""

    async def withdraw(self, challenge_id: int, challenger_id: int) -> Challenge:
        """Close a challenge its challenger takes back: ``forbidden`` for its target,
        ``not_found`` for anyone else."""

    async def withdraw_all(self, user_id: int) -> list[Challenge]:
        """Close every challenge a user made or received (they went offline)."""


# -- Redis -------------------------------------------------------------------------------------

_OPEN = """
-- KEYS: seeks, owners, offer zset, my seeks, ranges; ARGV: uid, max, id, record, offer key,
-- users' seeks prefix, my rating, my rating_min, my rating_max, my range entry
-- (a bound is '' for none): the oldest seek of another user of the same offer whose range
-- admits my rating and whose owner's rating my range admits
if redis.call('SCARD', KEYS[4]) >= tonumber(ARGV[2]) then return {'full'} end
local function admits(lo, hi, rating)
  return (lo == '' or rating >= tonumber(lo)) and (hi == '' or rating <= tonumber(hi))
end
local mine = tonumber(ARGV[7])
for _, member in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  local sep = string.find(member, ':', 1, true)
  local id, owner = string.sub(member, 1, sep - 1), string.sub(member, sep + 1)
  if owner ~= ARGV[1] then
    local entry = redis.call('HGET', KEYS[5], id) or '1500::'
    local a = string.find(entry, ':', 1, true)
    local b = string.find(entry, ':', a + 1, true)
    local theirs = tonumber(string.sub(entry, 1, a - 1))
    if admits(string.sub(entry, a + 1, b - 1), string.sub(entry, b + 1), mine)
        and admits(ARGV[8], ARGV[9], theirs) then
      local record = redis.call('HGET', KEYS[1], id)
      redis.call('HDEL', KEYS[1], id)
      redis.call('HDEL', KEYS[2], id)
      redis.call('HDEL', KEYS[5], id)
      redis.call('ZREM', KEYS[3], member)
      redis.call('SREM', ARGV[6] .. owner, id)
      return {'paired', record}
    end
  end
end
redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[1] .. ':' .. ARGV[5])
redis.call('HSET', KEYS[5], ARGV[3], ARGV[10])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[3] .. ':' .. ARGV[1])
redis.call('SADD', KEYS[4], ARGV[3])
return {'added'}
"""
_CLOSE_SEEK = """
-- KEYS: seeks, owners, ranges; ARGV: id, uid, mode (take | cancel | withdraw), offers
-- prefix, users' seeks prefix
local meta = redis.call('HGET', KEYS[2], ARGV[1])
if not meta then return {'not_found'} end
local sep = string.find(meta, ':', 1, true)
local owner, offer = string.sub(meta, 1, sep - 1), string.sub(meta, sep + 1)
if ARGV[3] == 'take' and owner == ARGV[2] then return {'own'} end
if ARGV[3] ~= 'take' and owner ~= ARGV[2] then return {'forbidden'} end
local record = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('ZREM', ARGV[4] .. offer, ARGV[1] .. ':' .. owner)
redis.call('SREM', ARGV[5] .. owner, ARGV[1])
return {'closed', record}
"""
_CREATE_CHALLENGE = """
-- KEYS: challenges, parties, challenger's set, target's set; ARGV: id, record, parties
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
return 1
"""
_CLOSE_CHALLENGE = """
-- KEYS: challenges, parties; ARGV: id, uid, mode (answer | withdraw | leave), users' prefix
local parties = redis.call('HGET', KEYS[2], ARGV[1])
if not parties then return {'not_found'} end
local sep = string.find(parties, ':', 1, true)
local challenger, target = string.sub(parties, 1, sep - 1), string.sub(parties, sep + 1)
if ARGV[3] == 'answer' and ARGV[2] ~= target then return {'not_found'} end
if ARGV[3] == 'withdraw' then
  if ARGV[2] == target then return {'forbidden'} end
  if ARGV[2] ~= challenger then return {'not_found'} end
end
if ARGV[3] == 'leave' and ARGV[2] ~= target and ARGV[2] ~= challenger then
  return {'not_found'}
end
local record = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('SREM', ARGV[4] .. challenger, ARGV[1])
redis.call('SREM', ARGV[4] .. target, ARGV[1])
return {'closed', record}
"""


class RedisSeeks:
    """``SeekStore`` in Redis, for every node of a cluster."""

    def __init__(self, redis: aioredis.Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys
        self._open = redis.register_script(_OPEN)
        self._close = redis.register_script(_CLOSE_SEEK)

    async def new_id(self) -> int:
        return int(await self.redis.incr(self.keys.lobby_ids))

    async def open(self, seek: Seek, max_open: int) -> Seek | None:
        k = self.keys
        outcome = await self._open(
            keys=[k.seeks, k.seek_owners, k.seeks_matching(seek.offer_key),
                  k.seeks_of(seek.user_id), k.seek_ranges],
            args=[seek.user_id, max_open, seek.seek_id, seek.pack(), seek.offer_key,
                  k.seeks_of_prefix, repr(seek.rating), *_bounds(seek), seek.range_entry])
        if outcome[0] == b"full":
            raise _refuse("full", f"at most {max_open} open seeks")
        return Seek.unpack(outcome[1]) if outcome[0] == b"paired" else None

    async def get(self, seek_id: int) -> Seek | None:
        record: bytes | None = await self.redis.hget(  # type: ignore[assignment]
            self.keys.seeks, str(seek_id))
        return None if record is None else Seek.unpack(record)

    async def take(self, seek_id: int, taker_id: int) -> Seek:
        return await self._close_one(seek_id, taker_id, "take")

    async def cancel(self, seek_id: int, owner_id: int) -> Seek:
        return await self._close_one(seek_id, owner_id, "cancel")

    async def withdraw_all(self, user_id: int) -> list[Seek]:
        closed = []
        for seek_id in sorted(int(i) for i in await self.redis.smembers(
                self.keys.seeks_of(user_id))):
            outcome = await self._run_close(seek_id, user_id, "withdraw")
            if outcome[0] == b"closed":
                closed.append(Seek.unpack(outcome[1]))
        return closed

    async def listing(self) -> list[Seek]:
        records: dict[bytes, bytes] = await self.redis.hgetall(  # type: ignore[assignment]
            self.keys.seeks)
        return sorted((Seek.unpack(r) for r in records.values()), key=lambda s: s.seek_id)

    async def _close_one(self, seek_id: int, user_id: int, mode: str) -> Seek:
        outcome = await self._run_close(seek_id, user_id, mode)
        if outcome[0] != b"closed":
            what = (f"seek {seek_id} is not yours" if outcome[0] == b"forbidden"
                    else f"no open seek {seek_id}")
            raise _refuse(outcome[0].decode(), what)
        return Seek.unpack(outcome[1])

    async def _run_close(self, seek_id: int, user_id: int, mode: str) -> list[Any]:
        k = self.keys
        result: list[Any] = await self._close(
            keys=[k.seeks, k.seek_owners, k.seek_ranges],
            args=[seek_id, user_id, mode, k.seeks_matching_prefix, k.seeks_of_prefix])
        return result


class RedisChallenges:
    """``ChallengeStore`` in Redis, for every node of a cluster."""

    def __init__(self, redis: aioredis.Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys
        self._create = redis.register_script(_CREATE_CHALLENGE)
        self._close = redis.register_script(_CLOSE_CHALLENGE)

    async def create(self, challenge: Challenge) -> None:
        if challenge.challenger_id == challenge.target_id:
            raise ProtocolError("you cannot challenge yourself", code=ErrorCode.BAD_REQUEST)
        k = self.keys
        await self._create(
            keys=[k.challenges, k.challenge_parties, k.challenges_of(challenge.challenger_id),
                  k.challenges_of(challenge.target_id)],
            args=[challenge.challenge_id, challenge.pack(),
                  f"{challenge.challenger_id}:{challenge.target_id}"])

    async def answer(self, challenge_id: int, target_id: int) -> Challenge:
        return await self._close_one(challenge_id, target_id, "answer")

    async def withdraw(self, challenge_id: int, challenger_id: int) -> Challenge:
        return await self._close_one(challenge_id, challenger_id, "withdraw")

    async def withdraw_all(self, user_id: int) -> list[Challenge]:
        closed = []
        for challenge_id in sorted(int(i) for i in await self.redis.smembers(
                self.keys.challenges_of(user_id))):
            outcome = await self._run_close(challenge_id, user_id, "leave")
            if outcome[0] == b"closed":
                closed.append(Challenge.unpack(outcome[1]))
        return closed

    async def _close_one(self, challenge_id: int, user_id: int, mode: str) -> Challenge:
        outcome = await self._run_close(challenge_id, user_id, mode)
        if outcome[0] != b"closed":
            what = (f"challenge {challenge_id} is not yours to withdraw"
                    if outcome[0] == b"forbidden"
                    else f"no pending challenge {challenge_id} for you")
            raise _refuse(outcome[0].decode(), what)
        return Challenge.unpack(outcome[1])

    async def _run_close(self, challenge_id: int, user_id: int, mode: str) -> list[Any]:
        k = self.keys
        result: list[Any] = await self._close(
            keys=[k.challenges, k.challenge_parties],
            args=[challenge_id, user_id, mode, k.challenges_of_prefix])
        return result


# -- one process -----------------------------------------------------------------------------


class MemorySeeks:
    """``SeekStore`` in one process's memory (a lone server)."""

    def __init__(self) -> None:
        self._seeks: dict[int, Seek] = {}  # insertion order is age order
        self._ids = itertools.count(1)

    async def new_id(self) -> int:
        return next(self._ids)

    async def open(self, seek: Seek, max_open: int) -> Seek | None:
        if sum(s.user_id == seek.user_id for s in self._seeks.values()) >= max_open:
            raise _refuse("full", f"at most {max_open} open seeks")
        partner = next((s for s in self._seeks.values() if s.pairs_with(seek)), None)
        if partner is not None:
            del self._seeks[partner.seek_id]
            return partner
        self._seeks[seek.seek_id] = seek
        return None

    async def get(self, seek_id: int) -> Seek | None:
        return self._seeks.get(seek_id)

    async def take(self, seek_id: int, taker_id: int) -> Seek:
        seek = self._seeks.get(seek_id)
        if seek is None:
            raise _refuse("not_found", f"no open seek {seek_id}")
        if seek.user_id == taker_id:
            raise _refuse("own", "")
        return self._seeks.pop(seek_id)

    async def cancel(self, seek_id: int, owner_id: int) -> Seek:
        seek = self._seeks.get(seek_id)
        if seek is None:
            raise _refuse("not_found", f"no open seek {seek_id}")
        if seek.user_id != owner_id:
            raise _refuse("forbidden", f"seek {seek_id} is not yours")
        return self._seeks.pop(seek_id)

    async def withdraw_all(self, user_id: int) -> list[Seek]:
        mine = [s for s in self._seeks.values() if s.user_id == user_id]
        for seek in mine:
            del self._seeks[seek.seek_id]
        return mine

    async def listing(self) -> list[Seek]:
        return list(self._seeks.values())


class MemoryChallenges:
    """``ChallengeStore`` in one process's memory (a lone server)."""

    def __init__(self) -> None:
        self._pending: dict[int, Challenge] = {}

    async def create(self, challenge: Challenge) -> None:
        if challenge.challenger_id == challenge.target_id:
            raise ProtocolError("you cannot challenge yourself", code=ErrorCode.BAD_REQUEST)
        self._pending[challenge.challenge_id] = challenge

    async def answer(self, challenge_id: int, target_id: int) -> Challenge:
        found = self._pending.get(challenge_id)
        if found is None or found.target_id != target_id:
            raise _refuse("not_found", f"no pending challenge {challenge_id} for you")
        return self._pending.pop(challenge_id)

    async def withdraw(self, challenge_id: int, challenger_id: int) -> Challenge:
        found = self._pending.get(challenge_id)
        if found is not None and found.target_id == challenger_id:
            raise _refuse("forbidden", f"challenge {challenge_id} is not yours to withdraw")
        if found is None or found.challenger_id != challenger_id:
            raise _refuse("not_found", f"no pending challenge {challenge_id} for you")
        return self._pending.pop(challenge_id)

    async def withdraw_all(self, user_id: int) -> list[Challenge]:
        theirs = [c for c in self._pending.values() if user_id in (c.challenger_id, c.target_id)]
        for challenge in theirs:
            del self._pending[challenge.challenge_id]
        return theirs
