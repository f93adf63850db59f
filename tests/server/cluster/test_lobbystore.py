"""Seeks and challenges: one contract, run against Redis and against the in-memory twins;
races for one offer run against Redis from many clients at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis

import protocol as p
from protocol import ErrorCode, ProtocolError
from server.cluster.keys import Keys
from server.cluster.lobbystore import (
    Challenge,
    ChallengeStore,
    MemoryChallenges,
    MemorySeeks,
    RedisChallenges,
    RedisSeeks,
    Seek,
    SeekStore,
)

FAST = p.Fischer(base_ms=60_000, increment_ms=0)
SLOW = p.Fischer(base_ms=600_000, increment_ms=5_000)


@pytest.fixture(params=["memory", "redis"])
def stores(request: pytest.FixtureRequest) -> tuple[SeekStore, ChallengeStore]:
    if request.param == "memory":
        return MemorySeeks(), MemoryChallenges()
    redis: aioredis.Redis = request.getfixturevalue("redis")
    keys: Keys = request.getfixturevalue("keys")
    return RedisSeeks(redis, keys), RedisChallenges(redis, keys)


async def seek(store: SeekStore, user_id: int, clock: Any = FAST, game: str = "hadron",
               size: int = 5) -> Seek:
    return Seek(p.OpenSeek(seek_id=await store.new_id(),
                           user=p.User(name=f"user{user_id}", kind="human"), game=game,
                           options={"size": size}, clock=clock), user_id, f"node{user_id}",
                1_767_225_600_000 + user_id)


async def code_of(call: Any) -> str:
    with pytest.raises(ProtocolError) as refused:
        await call
    return str(refused.value.code)


async def test_a_seek_pairs_with_the_oldest_compatible_one(
        stores: tuple[SeekStore, ChallengeStore]) -> None:
    seeks, _ = stores
    first, again = await seek(seeks, 1), await seek(seeks, 1)  # one user, one offer, twice
    other_clock, other_size = await seek(seeks, 3, SLOW), await seek(seeks, 4, size=7)
    for opened in (first, again, other_clock, other_size):
        assert await seeks.open(opened, 5) is None  # never paired with one's own
    assert await seeks.open(await seek(seeks, 2), 5) == first  # the oldest compatible
    assert [s.seek_id for s in await seeks.listing()] == [
        again.seek_id, other_clock.seek_id, other_size.seek_id]
    assert await seeks.open(await seek(seeks, 9), 5) == again
    assert [s.seek_id for s in await seeks.listing()] == [other_clock.seek_id,
                                                          other_size.seek_id]
    assert (await seeks.listing())[0] == other_clock  # the record round-trips whole


async def rated_seek(store: SeekStore, user_id: int, rating: float, *, rated: bool = True,
                     low: int | None = None, high: int | None = None) -> Seek:
    return Seek(p.OpenSeek(seek_id=await store.new_id(),
                           user=p.User(name=f"user{user_id}", kind="human"), game="hadron",
                           options={}, clock=FAST, rated=rated or None, rating_min=low,
                           rating_max=high), user_id, f"node{user_id}",
                1_767_225_600_000 + user_id, rating)


async def test_rated_seeks_pair_only_with_rated_ones_within_both_ranges(
        stores: tuple[SeekStore, ChallengeStore]) -> None:
    seeks, _ = stores
    strong = await rated_seek(seeks, 1, 1800.0, low=1700)  # wants 1700 or more
    casual = await rated_seek(seeks, 2, 1800.0, rated=False)
    for opened in (strong, casual):
        assert await seeks.open(opened, 5) is None
    # 1500 is below the strong seek's range, and casual seeks never pair with rated ones
    weak = await rated_seek(seeks, 3, 1500.0)
    assert await seeks.open(weak, 5) is None
    # in the strong seek's range, but the strong player is above this one's range (and
    # the weak one below it)
    capped = await rated_seek(seeks, 4, 1750.0, low=1600, high=1790)
    assert await seeks.open(capped, 5) is None
    # the oldest rated seek whose range admits 1720 and whose owner 1720's range admits
    assert await seeks.open(await rated_seek(seeks, 5, 1720.0, low=1600), 5) == strong
    assert [s.seek_id for s in await seeks.listing()] == [
        casual.seek_id, weak.seek_id, capped.seek_id]
    listed = {s.seek_id: s for s in await seeks.listing()}
    assert listed[capped.seek_id] == capped  # rated flag, range and rating round-trip
    assert await seeks.get(capped.seek_id) == capped
    assert await seeks.get(strong.seek_id) is None
    # a casual seek of the same offer pairs with the casual one only
    assert await seeks.open(await rated_seek(seeks, 6, 1000.0, rated=False), 5) == casual
    assert await seeks.take(weak.seek_id, 6) == weak
    assert await seeks.cancel(capped.seek_id, 4) == capped
    assert await seeks.listing() == []


async def test_open_seeks_are_bounded_per_user(stores: tuple[SeekStore, ChallengeStore]
                                               ) -> None:
    seeks, _ = stores
    for size in (5, 7):
        assert await seeks.open(await seek(seeks, 1, size=size), 2) is None
    assert await code_of(seeks.open(await seek(seeks, 1, size=9), 2)) == ErrorCode.CONFLICT
    assert len(await seeks.listing()) == 2


async def test_take_cancel_and_withdraw(stores: tuple[SeekStore, ChallengeStore]) -> None:
    seeks, _ = stores
    a, b, c = await seek(seeks, 1), await seek(seeks, 1, SLOW), await seek(seeks, 2, size=7)
    for opened in (a, b, c):
        await seeks.open(opened, 5)
    assert await code_of(seeks.take(a.seek_id, 1)) == ErrorCode.CONFLICT  # my own
    assert await code_of(seeks.take(999, 2)) == ErrorCode.NOT_FOUND
    assert await seeks.take(a.seek_id, 2) == a
    assert await code_of(seeks.take(a.seek_id, 3)) == ErrorCode.NOT_FOUND  # taken once
    assert await code_of(seeks.cancel(c.seek_id, 1)) == ErrorCode.FORBIDDEN
    assert await code_of(seeks.cancel(a.seek_id, 1)) == ErrorCode.NOT_FOUND
    assert await seeks.withdraw_all(1) == [b]
    assert await seeks.withdraw_all(1) == []
    assert await seeks.cancel(c.seek_id, 2) == c
    assert await seeks.listing() == []
    assert await seeks.open(await seek(seeks, 3), 1) is None  # the bound counts what is open


async def test_challenges_are_answered_once_by_their_target(
        stores: tuple[SeekStore, ChallengeStore]) -> None:
    seeks, challenges = stores

    async def challenge(challenger: int, target: int) -> Challenge:
        made = Challenge(p.ChallengeReceived(
            challenge_id=await seeks.new_id(),
            from_=p.User(name=f"user{challenger}", kind="human"), game="xodd",
            options={"size": 9}, clock=FAST, color="random"), challenger, "n1", target,
            p.User(name=f"user{target}", kind="bot"), "n2")
        await challenges.create(made)
        return made

    one, two, three = await challenge(1, 2), await challenge(1, 3), await challenge(4, 1)
    assert await code_of(challenges.answer(one.challenge_id, 1)) == ErrorCode.NOT_FOUND
    assert await code_of(challenges.withdraw(one.challenge_id, 2)) == ErrorCode.FORBIDDEN
    assert await code_of(challenges.withdraw(one.challenge_id, 9)) == ErrorCode.NOT_FOUND
    assert await challenges.answer(one.challenge_id, 2) == one
    assert await code_of(challenges.answer(one.challenge_id, 2)) == ErrorCode.NOT_FOUND
    assert await challenges.withdraw(two.challenge_id, 1) == two
    four = await challenge(5, 6)
    assert await challenges.withdraw_all(1) == [three]  # as challenger and as target
    assert await challenges.withdraw_all(5) == [four]
    with pytest.raises(ProtocolError, match="yourself"):
        await challenge(7, 7)


async def test_a_seek_is_taken_once_whichever_clients_race(
        redis_url: str, keys: Keys) -> None:
    clients = [aioredis.Redis.from_url(redis_url) for _ in range(8)]
    stores = [RedisSeeks(client, keys) for client in clients]
    try:
        target = await seek(stores[0], 1)
        await stores[0].open(target, 5)
        results = await asyncio.gather(
            *(stores[k % 8].take(target.seek_id, 100 + k) for k in range(40)),
            return_exceptions=True)
        assert sum(isinstance(r, Seek) for r in results) == 1
        assert all(isinstance(r, Seek) or r.code == ErrorCode.NOT_FOUND  # type: ignore[union-attr]
                   for r in results)

        # 40 users seeking the same game at once: every seek paired at most once
        made = [await seek(stores[0], 200 + k) for k in range(40)]
        partners = await asyncio.gather(*(stores[k % 8].open(made[k], 5) for k in range(40)))
        paired = [s.seek_id for s in partners if s is not None]
        still_open = [s.seek_id for s in await stores[0].listing()]
        assert len(set(paired)) == len(paired) and not set(paired) & set(still_open)
        assert len(still_open) + 2 * len(paired) == 40
        assert len(still_open) <= 1  # compatible seeks never wait for each other
    finally:
        for client in clients:
            await client.aclose()


async def test_rated_seeks_with_ranges_racing_pair_once_and_within_range(
        redis_url: str, keys: Keys) -> None:
    clients = [aioredis.Redis.from_url(redis_url) for _ in range(8)]
    stores = [RedisSeeks(client, keys) for client in clients]
    try:
        # 40 users rated 1400..1790, each wanting an opponent within 50 points, all at once
        made = []
        for k in range(40):
            rating = 1400 + 10 * (k * 7 % 40)
            made.append(await rated_seek(stores[0], 300 + k, float(rating),
                                         low=rating - 50, high=rating + 50))
        partners = await asyncio.gather(*(stores[k % 8].open(made[k], 5) for k in range(40)))
        pairs = [(made[k], partner) for k, partner in enumerate(partners) if partner]
        paired = [seek.seek_id for pair in pairs for seek in pair]
        still_open = await stores[0].listing()
        assert len(set(paired)) == len(paired)  # nobody paired twice
        assert not set(paired) & {s.seek_id for s in still_open}
        assert len(paired) + len(still_open) == 40
        assert all(a.pairs_with(b) for a, b in pairs)  # each within the other's range
        # no two seeks left waiting could have paired
        assert not any(a.pairs_with(b) for a in still_open for b in still_open)
    finally:
        for client in clients:
            await client.aclose()
