"""The lobby's shared state in Redis, for every node of a cluster: seeks, challenges and
rematch offers (``server.offers`` declares the interfaces and the in-memory twins).

An offer is taken once, whichever nodes race for it: each operation that decides who gets
an offer is one Lua script, so Redis runs it whole, one at a time.

Redis layout (under ``tessera:{cluster}:``)::

    seeks                      hash  seek id -> the record
    seeks:owner                hash  seek id -> "user id:offer key" (read by the scripts)
    seeks:range                hash  seek id -> "rating:rating_min:rating_max" (pairing)
    seeks:address              hash  seek id -> the address that opened it
    seeks:addresses            hash  address -> its open seeks (non-zero counts only)
    seeks:ids                  zset  every open seek id, scored by id (the lobby's pages)
    seeks:offer:{offer key}    zset  the open seeks of one offer, scored by id (oldest first)
    seeks:user:{user id}       set   one user's open seek ids
    challenges                 hash  challenge id -> the record
    challenges:parties         hash  challenge id -> "challenger id:target id"
    challenges:user:{user id}  set   the challenges a user made or received
    challenges:out:{user id}   set   the challenges a user made
    challenges:address         hash  challenge id -> the address that sent it
    challenges:addresses       hash  address -> its pending challenges (non-zero counts only)
    rematches                  hash  game id -> "offering seat:user id 0:user id 1"
    rematches:user:{user id}   set   the games a user has an offer open for
    lobby:ids                  counter of seek and challenge ids

Scripts touch keys derived inside them (another user's set): fine on one Redis server; a
Redis Cluster would need the cluster's keys in one hash slot.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import redis.asyncio as aioredis

from server.offers import (
    Challenge,
    ChallengeCaps,
    RematchOffer,
    Seek,
    SeekCaps,
    challenges_full,
    not_yourself,
    refuse,
    seeks_full,
)

from .keys import Keys, as_str


def _bounds(seek: Seek) -> list[str]:
    """A seek's rating_min and rating_max for a script ('' for none)."""
    s = seek.open_seek
    return ["" if b is None else str(b) for b in (s.rating_min, s.rating_max)]


# -- Redis -------------------------------------------------------------------------------------

_FORGET_SEEK = """
local function forget_seek(id, owner, offer, offers_prefix, users_prefix)
  redis.call('HDEL', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('ZREM', offers_prefix .. offer, id .. ':' .. owner)
  redis.call('ZREM', KEYS[6], id)
  redis.call('SREM', users_prefix .. owner, id)
  local address = redis.call('HGET', KEYS[4], id)
  if address then
    redis.call('HDEL', KEYS[4], id)
    if redis.call('HINCRBY', KEYS[5], address, -1) <= 0 then
      redis.call('HDEL', KEYS[5], address)
    end
  end
end
"""
_OPEN = _FORGET_SEEK + """
-- KEYS: seeks, owners, ranges, addresses, per-address counts, all ids, my seeks;
-- ARGV: uid, per-owner cap, id, record, offer key, offers prefix, users' seeks prefix,
-- my rating, my rating_min, my rating_max, my range entry, address, per-address cap,
-- total cap, excluded owners (",1,2,")
-- (a bound is '' for none): the oldest seek of another user of the same offer whose range
-- admits my rating and whose owner's rating my range admits
if redis.call('SCARD', KEYS[7]) >= tonumber(ARGV[2]) then return {'owner'} end
local function admits(lo, hi, rating)
  return (lo == '' or rating >= tonumber(lo)) and (hi == '' or rating <= tonumber(hi))
end
local mine = tonumber(ARGV[8])
local offers = ARGV[6] .. ARGV[5]
for _, member in ipairs(redis.call('ZRANGE', offers, 0, -1)) do
  local sep = string.find(member, ':', 1, true)
  local id, owner = string.sub(member, 1, sep - 1), string.sub(member, sep + 1)
  if owner ~= ARGV[1] and not string.find(ARGV[15], ',' .. owner .. ',', 1, true) then
    local entry = redis.call('HGET', KEYS[3], id) or '1500::'
    local a = string.find(entry, ':', 1, true)
    local b = string.find(entry, ':', a + 1, true)
    local theirs = tonumber(string.sub(entry, 1, a - 1))
    if admits(string.sub(entry, a + 1, b - 1), string.sub(entry, b + 1), mine)
        and admits(ARGV[9], ARGV[10], theirs) then
      local record = redis.call('HGET', KEYS[1], id)
      forget_seek(id, owner, ARGV[5], ARGV[6], ARGV[7])
      return {'paired', record}
    end
  end
end
if tonumber(redis.call('HGET', KEYS[5], ARGV[12]) or '0') >= tonumber(ARGV[13]) then
  return {'address'}
end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[14]) then return {'lobby'} end
redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[1] .. ':' .. ARGV[5])
redis.call('HSET', KEYS[3], ARGV[3], ARGV[11])
redis.call('HSET', KEYS[4], ARGV[3], ARGV[12])
redis.call('HINCRBY', KEYS[5], ARGV[12], 1)
redis.call('ZADD', offers, ARGV[3], ARGV[3] .. ':' .. ARGV[1])
redis.call('ZADD', KEYS[6], ARGV[3], ARGV[3])
redis.call('SADD', KEYS[7], ARGV[3])
return {'added'}
"""
_CLOSE_SEEK = _FORGET_SEEK + """
-- KEYS: seeks, owners, ranges, addresses, per-address counts, all ids;
-- ARGV: id, uid, mode (take | cancel | withdraw), offers prefix, users' seeks prefix
local meta = redis.call('HGET', KEYS[2], ARGV[1])
if not meta then return {'not_found'} end
local sep = string.find(meta, ':', 1, true)
local owner, offer = string.sub(meta, 1, sep - 1), string.sub(meta, sep + 1)
if ARGV[3] == 'take' and owner == ARGV[2] then return {'own'} end
if ARGV[3] ~= 'take' and owner ~= ARGV[2] then return {'forbidden'} end
local record = redis.call('HGET', KEYS[1], ARGV[1])
forget_seek(ARGV[1], owner, offer, ARGV[4], ARGV[5])
return {'closed', record}
"""
_SEEK_PAGE = """
-- KEYS: all ids, seeks; ARGV: after id, limit
-- {how many more after the page, the page's records (oldest first)}
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf', 'LIMIT', 0,
                       tonumber(ARGV[2]))
local after = redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[1], '+inf')
local records = {}
if #ids > 0 then records = redis.call('HMGET', KEYS[2], unpack(ids)) end
return {after - #ids, records}
"""
_CREATE_CHALLENGE = """
-- KEYS: challenges, parties, challenger's set, target's set, challenger's sent, addresses,
-- per-address counts; ARGV: id, record, parties, per-challenger cap, address, per-address cap
if redis.call('SCARD', KEYS[5]) >= tonumber(ARGV[4]) then return 'challenger' end
if tonumber(redis.call('HGET', KEYS[7], ARGV[5]) or '0') >= tonumber(ARGV[6]) then
  return 'address'
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('SADD', KEYS[5], ARGV[1])
redis.call('HSET', KEYS[6], ARGV[1], ARGV[5])
redis.call('HINCRBY', KEYS[7], ARGV[5], 1)
return 'created'
"""
_CLOSE_CHALLENGE = """
-- KEYS: challenges, parties, addresses, per-address counts; ARGV: id, uid, mode (answer |
-- withdraw | leave), users' prefix, sent prefix
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
redis.call('SREM', ARGV[5] .. challenger, ARGV[1])
local address = redis.call('HGET', KEYS[3], ARGV[1])
if address then
  redis.call('HDEL', KEYS[3], ARGV[1])
  if redis.call('HINCRBY', KEYS[4], address, -1) <= 0 then
    redis.call('HDEL', KEYS[4], address)
  end
end
return {'closed', record}
"""
_OFFER_REMATCH = """
-- KEYS: rematches, seat 0's set, seat 1's set; ARGV: game id, seat, value
-- 'offered' (new), 'again' (mine already), or 'accept' (the other's, now closed)
local held = redis.call('HGET', KEYS[1], ARGV[1])
if held then
  if string.sub(held, 1, 1) == ARGV[2] then return 'again' end
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('SREM', KEYS[2], ARGV[1])
  redis.call('SREM', KEYS[3], ARGV[1])
  return 'accept'
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
return 'offered'
"""
_CLOSE_REMATCH = """
-- KEYS: rematches; ARGV: game id, a seat whose offer stays ('' for none), users' prefix
-- closes an offer: 'closed' + the value, or 'none'
local held = redis.call('HGET', KEYS[1], ARGV[1])
if not held then return {'none'} end
if ARGV[2] ~= '' and string.sub(held, 1, 1) == ARGV[2] then return {'own'} end
local a = string.find(held, ':', 1, true)
local b = string.find(held, ':', a + 1, true)
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('SREM', ARGV[3] .. string.sub(held, a + 1, b - 1), ARGV[1])
redis.call('SREM', ARGV[3] .. string.sub(held, b + 1), ARGV[1])
return {'closed', held}
"""


class RedisSeeks:
    """``SeekStore`` in Redis, for every node of a cluster."""

    def __init__(self, redis: aioredis.Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys
        self._open = redis.register_script(_OPEN)
        self._close = redis.register_script(_CLOSE_SEEK)
        self._page = redis.register_script(_SEEK_PAGE)

    def _keys(self) -> list[str]:
        k = self.keys
        return [k.seeks, k.seek_owners, k.seek_ranges, k.seek_addresses, k.seeks_per_address,
                k.seek_ids]

    async def new_id(self) -> int:
        return int(await self.redis.incr(self.keys.lobby_ids))

    async def open(self, seek: Seek, caps: SeekCaps,
                   exclude: Iterable[int] = ()) -> Seek | None:
        k = self.keys
        skip = "," + ",".join(str(user_id) for user_id in exclude) + ","
        outcome = await self._open(
            keys=[*self._keys(), k.seeks_of(seek.user_id)],
            args=[seek.user_id, caps.per_owner, seek.seek_id, seek.pack(), seek.offer_key,
                  k.seeks_matching_prefix, k.seeks_of_prefix, repr(seek.rating),
                  *_bounds(seek), seek.range_entry, seek.address, caps.per_address,
                  caps.total, skip])
        if outcome[0] == b"paired":
            return Seek.unpack(outcome[1])
        if outcome[0] != b"added":
            raise seeks_full(outcome[0].decode(), caps)
        return None

    async def restore(self, seek: Seek) -> None:
        k = self.keys
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(k.seeks, str(seek.seek_id), seek.pack())
            pipe.hset(k.seek_owners, str(seek.seek_id), f"{seek.user_id}:{seek.offer_key}")
            pipe.hset(k.seek_ranges, str(seek.seek_id), seek.range_entry)
            pipe.hset(k.seek_addresses, str(seek.seek_id), seek.address)
            pipe.hincrby(k.seeks_per_address, seek.address, 1)
            pipe.zadd(k.seeks_matching(seek.offer_key),
                      {f"{seek.seek_id}:{seek.user_id}": seek.seek_id})
            pipe.sadd(k.seeks_of(seek.user_id), str(seek.seek_id))
            pipe.zadd(k.seek_ids, {str(seek.seek_id): seek.seek_id})
            await pipe.execute()

    def held(self) -> int:
        return 0  # in Redis

    def compact(self) -> None:
        """Nothing: the seeks are in Redis."""

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

    async def page(self, after: int, limit: int) -> tuple[list[Seek], int]:
        more, records = await self._page(keys=[self.keys.seek_ids, self.keys.seeks],
                                         args=[after, limit])
        return [Seek.unpack(record) for record in records if record is not None], int(more)

    async def count(self) -> int:
        return int(await self.redis.hlen(self.keys.seeks))

    async def _close_one(self, seek_id: int, user_id: int, mode: str) -> Seek:
        outcome = await self._run_close(seek_id, user_id, mode)
        if outcome[0] != b"closed":
            what = (f"seek {seek_id} is not yours" if outcome[0] == b"forbidden"
                    else f"no open seek {seek_id}")
            raise refuse(outcome[0].decode(), what)
        return Seek.unpack(outcome[1])

    async def _run_close(self, seek_id: int, user_id: int, mode: str) -> list[Any]:
        k = self.keys
        result: list[Any] = await self._close(
            keys=self._keys(),
            args=[seek_id, user_id, mode, k.seeks_matching_prefix, k.seeks_of_prefix])
        return result


class RedisChallenges:
    """``ChallengeStore`` in Redis, for every node of a cluster."""

    def __init__(self, redis: aioredis.Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys
        self._create = redis.register_script(_CREATE_CHALLENGE)
        self._close = redis.register_script(_CLOSE_CHALLENGE)

    async def create(self, challenge: Challenge, caps: ChallengeCaps) -> None:
        if challenge.challenger_id == challenge.target_id:
            raise not_yourself()
        k = self.keys
        outcome = as_str(await self._create(
            keys=[k.challenges, k.challenge_parties, k.challenges_of(challenge.challenger_id),
                  k.challenges_of(challenge.target_id), k.challenges_out(challenge.challenger_id),
                  k.challenge_addresses, k.challenges_per_address],
            args=[challenge.challenge_id, challenge.pack(),
                  f"{challenge.challenger_id}:{challenge.target_id}", caps.per_challenger,
                  challenge.address, caps.per_address]))
        if outcome != "created":
            raise challenges_full(outcome, caps)

    async def check_room(self, challenger_id: int, address: str, caps: ChallengeCaps
                         ) -> None:
        k = self.keys
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.scard(k.challenges_out(challenger_id))
            pipe.hget(k.challenges_per_address, address)
            sent, from_address = await pipe.execute()
        if int(sent) >= caps.per_challenger:
            raise challenges_full("challenger", caps)
        if int(from_address or 0) >= caps.per_address:
            raise challenges_full("address", caps)

    async def get(self, challenge_id: int) -> Challenge | None:
        record: bytes | None = await self.redis.hget(  # type: ignore[assignment]
            self.keys.challenges, str(challenge_id))
        return None if record is None else Challenge.unpack(record)

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
            raise refuse(outcome[0].decode(), what)
        return Challenge.unpack(outcome[1])

    async def _run_close(self, challenge_id: int, user_id: int, mode: str) -> list[Any]:
        k = self.keys
        result: list[Any] = await self._close(
            keys=[k.challenges, k.challenge_parties, k.challenge_addresses,
                  k.challenges_per_address],
            args=[challenge_id, user_id, mode, k.challenges_of_prefix,
                  k.challenges_out_prefix])
        return result


def _rematch_of(game_id: str, value: bytes | str) -> RematchOffer:
    seat, first, second = as_str(value).split(":")
    return RematchOffer(game_id, int(seat), (int(first), int(second)))


class RedisRematches:
    """``RematchStore`` in Redis, for every node of a cluster."""

    def __init__(self, redis: aioredis.Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys
        self._offer = redis.register_script(_OFFER_REMATCH)
        self._close = redis.register_script(_CLOSE_REMATCH)

    async def offer(self, offer: RematchOffer) -> str:
        k = self.keys
        first, second = offer.user_ids
        return as_str(await self._offer(
            keys=[k.rematches, k.rematches_of(first), k.rematches_of(second)],
            args=[offer.game_id, offer.seat, f"{offer.seat}:{first}:{second}"]))

    async def get(self, game_id: str) -> RematchOffer | None:
        held = await self.redis.hget(self.keys.rematches, game_id)
        return None if held is None else _rematch_of(game_id, held)

    async def close(self, game_id: str, not_seat: int | None = None) -> RematchOffer | None:
        outcome: list[Any] = await self._close(
            keys=[self.keys.rematches],
            args=[game_id, "" if not_seat is None else not_seat,
                  self.keys.rematches_of_prefix])
        return _rematch_of(game_id, outcome[1]) if outcome[0] == b"closed" else None

    async def withdraw_all(self, user_id: int) -> list[RematchOffer]:
        closed = []
        for raw in sorted(await self.redis.smembers(
                self.keys.rematches_of(user_id))):
            found = await self.close(as_str(raw))
            if found is not None:
                closed.append(found)
        return closed


__all__ = ["RedisChallenges", "RedisRematches", "RedisSeeks"]
