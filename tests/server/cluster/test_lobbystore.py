"""The lobby's stores (``server.offers``): one contract, run against Redis and against the
in-memory implementations; races for one offer run against Redis from many clients at
once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis

import protocol as p
from protocol import ErrorCode, ProtocolError
from server.cluster.keys import Keys
from server.cluster.lobbystore import RedisChallenges, RedisRematches, RedisSeeks
from server.offers import (
    Challenge,
    ChallengeCaps,
    ChallengeStore,
    MemoryChallenges,
    MemoryRematches,
    MemorySeeks,
    RematchOffer,
    RematchStore,
    Seek,
    SeekCaps,
    SeekStore,
)

FAST = p.Fischer(base_ms=60_000, increment_ms=0)
FIVE = SeekCaps(5)
CHALLENGES = ChallengeCaps()
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


async def listed(store: SeekStore) -> list[Seek]:
    seeks, more = await store.page(0, 10_000)
    assert (more, len(seeks)) == (0, await store.count())
    return seeks


async def test_pages_of_seeks_oldest_first(stores: tuple[SeekStore, ChallengeStore]
                                           ) -> None:
    seeks, _ = stores
    made = [await seek(seeks, user_id, clock=p.Fischer(base_ms=60_000 + user_id * 1000,
                                                         increment_ms=0))
            for user_id in range(1, 8)]
    for opened in reversed(made):  # opened newest first: pages are by id all the same
        assert await seeks.open(opened, FIVE) is None
    ids = [s.seek_id for s in made]
    first, more = await seeks.page(0, 3)
    assert ([s.seek_id for s in first], more) == (ids[:3], 4)
    assert first[0] == made[0]  # whole records
    second, more = await seeks.page(ids[2], 3)
    assert ([s.seek_id for s in second], more) == (ids[3:6], 1)
    await seeks.cancel(ids[6], 7)  # a page after a change: what is open now
    await seeks.take(ids[4], 99)
    assert await seeks.page(ids[2], 3) == ([made[3], made[5]], 0)
    assert await seeks.page(ids[-1], 3) == ([], 0)
    paired = await seeks.open(await seek(seeks, 9, clock=made[0].open_seek.clock), FIVE)
    assert paired == made[0]  # paired: gone from the pages
    assert [s.seek_id for s in (await seeks.page(0, 10))[0]] == [ids[1], ids[2], ids[3],
                                                                   ids[5]]


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
        assert await seeks.open(opened, FIVE) is None  # never paired with one's own
    assert await seeks.open(await seek(seeks, 2), FIVE) == first  # the oldest compatible
    assert [s.seek_id for s in await listed(seeks)] == [
        again.seek_id, other_clock.seek_id, other_size.seek_id]
    assert await seeks.open(await seek(seeks, 9), FIVE) == again
    assert [s.seek_id for s in await listed(seeks)] == [other_clock.seek_id,
                                                          other_size.seek_id]
    assert (await listed(seeks))[0] == other_clock  # the record round-trips whole


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
        assert await seeks.open(opened, FIVE) is None
    # 1500 is below the strong seek's range, and casual seeks never pair with rated ones
    weak = await rated_seek(seeks, 3, 1500.0)
    assert await seeks.open(weak, FIVE) is None
    # in the strong seek's range, but the strong player is above this one's range (and
    # the weak one below it)
    capped = await rated_seek(seeks, 4, 1750.0, low=1600, high=1790)
    assert await seeks.open(capped, FIVE) is None
    # the oldest rated seek whose range admits 1720 and whose owner 1720's range admits
    assert await seeks.open(await rated_seek(seeks, 5, 1720.0, low=1600), FIVE) == strong
    assert [s.seek_id for s in await listed(seeks)] == [
        casual.seek_id, weak.seek_id, capped.seek_id]
    by_id = {s.seek_id: s for s in await listed(seeks)}
    assert by_id[capped.seek_id] == capped  # rated flag, range and rating round-trip
    assert await seeks.get(capped.seek_id) == capped
    assert await seeks.get(strong.seek_id) is None
    # a casual seek of the same offer pairs with the casual one only
    casual_too = await rated_seek(seeks, 6, 1000.0, rated=False)
    assert await seeks.open(casual_too, FIVE) == casual
    assert await seeks.take(weak.seek_id, 6) == weak
    assert await seeks.cancel(capped.seek_id, 4) == capped
    assert await listed(seeks) == []


async def test_open_seeks_are_bounded_per_user(stores: tuple[SeekStore, ChallengeStore]
                                               ) -> None:
    seeks, _ = stores
    for size in (5, 7):
        assert await seeks.open(await seek(seeks, 1, size=size), SeekCaps(2)) is None
    refused = await code_of(seeks.open(await seek(seeks, 1, size=9), SeekCaps(2)))
    assert refused == ErrorCode.CONFLICT
    assert len(await listed(seeks)) == 2


async def test_take_cancel_and_withdraw(stores: tuple[SeekStore, ChallengeStore]) -> None:
    seeks, _ = stores
    a, b, c = await seek(seeks, 1), await seek(seeks, 1, SLOW), await seek(seeks, 2, size=7)
    for opened in (a, b, c):
        await seeks.open(opened, FIVE)
    assert await code_of(seeks.take(a.seek_id, 1)) == ErrorCode.CONFLICT  # my own
    assert await code_of(seeks.take(999, 2)) == ErrorCode.NOT_FOUND
    assert await seeks.take(a.seek_id, 2) == a
    assert await code_of(seeks.take(a.seek_id, 3)) == ErrorCode.NOT_FOUND  # taken once
    assert await code_of(seeks.cancel(c.seek_id, 1)) == ErrorCode.FORBIDDEN
    assert await code_of(seeks.cancel(a.seek_id, 1)) == ErrorCode.NOT_FOUND
    assert await seeks.withdraw_all(1) == [b]
    assert await seeks.withdraw_all(1) == []
    assert await seeks.cancel(c.seek_id, 2) == c
    assert await listed(seeks) == []
    # the bound counts what is open
    assert await seeks.open(await seek(seeks, 3), SeekCaps(1)) is None


async def test_seeks_are_bounded_per_address_and_in_all(
        stores: tuple[SeekStore, ChallengeStore]) -> None:
    seeks, _ = stores
    caps = SeekCaps(per_owner=5, per_address=2, total=3)

    async def from_(user_id: int, address: str, size: int) -> Seek:
        made = await seek(seeks, user_id, size=size)
        return Seek(made.open_seek, made.user_id, made.node_id, made.created_ms,
                    made.rating, address)

    assert await seeks.open(await from_(1, "10.0.0.1", 5), caps) is None
    assert await seeks.open(await from_(2, "10.0.0.1", 6), caps) is None
    with pytest.raises(ProtocolError, match="from one address"):
        await seeks.open(await from_(3, "10.0.0.1", 7), caps)
    assert await seeks.open(await from_(3, "10.0.0.2", 7), caps) is None
    with pytest.raises(ProtocolError, match="the lobby is full"):
        await seeks.open(await from_(4, "10.0.0.3", 8), caps)
    # a seek that pairs is taken whatever the caps (it adds nothing)
    paired = await seeks.open(await from_(4, "10.0.0.1", 5), caps)
    assert paired is not None and paired.user_id == 1
    # the address's count went down with the pairing, and goes with a cancel
    assert await seeks.open(await from_(5, "10.0.0.1", 9), caps) is None
    assert await code_of(seeks.open(await from_(6, "10.0.0.1", 10), caps)) == "conflict"
    await seeks.cancel((await listed(seeks))[0].seek_id, 2)
    assert await seeks.open(await from_(6, "10.0.0.1", 10), caps) is None
    assert [s.address for s in await listed(seeks)] == ["10.0.0.2", "10.0.0.1", "10.0.0.1"]


async def test_a_passed_over_owner_is_excluded_and_a_seek_restored_in_its_place(
        stores: tuple[SeekStore, ChallengeStore]) -> None:
    seeks, _ = stores
    # ranges that keep the first two apart while both admit a player rated 1500
    first = await rated_seek(seeks, 1, 1400.0, low=1400, high=1550)
    second = await rated_seek(seeks, 2, 1600.0, low=1450, high=1600)
    other = await rated_seek(seeks, 3, 1500.0, rated=False)
    for opened in (first, second, other):
        assert await seeks.open(opened, FIVE) is None
    mine = await rated_seek(seeks, 4, 1500.0)
    taken = await seeks.open(mine, FIVE, exclude=[1])
    assert taken == second  # user 1 passed over: its seek stays open
    await seeks.restore(taken)  # given back: listed in its place by age, pairs again
    assert [s.seek_id for s in await listed(seeks)] == [first.seek_id, second.seek_id,
                                                        other.seek_id]
    assert await seeks.open(mine, FIVE, exclude=[1, 2]) is None  # nobody else: added
    assert await seeks.open(await rated_seek(seeks, 5, 1500.0), FIVE, exclude=[]) == first


async def test_pending_challenges_are_bounded_per_challenger_and_per_address(
        stores: tuple[SeekStore, ChallengeStore]) -> None:
    """Caps per challenger and per address; none per target, however many wait for it."""
    seeks, challenges = stores
    caps = ChallengeCaps(per_challenger=2, per_address=3)

    async def challenge(challenger: int, target: int, address: str) -> Challenge:
        made = Challenge(p.ChallengeReceived(
            challenge_id=await seeks.new_id(),
            from_=p.User(name=f"user{challenger}", kind="human"), game="hadron",
            options={}, clock=FAST, color=0), challenger, "n1", target,
            p.User(name=f"user{target}", kind="human"), "n2", address)
        await challenges.create(made, caps)
        return made

    one = await challenge(1, 9, "10.0.0.1")
    await challenge(1, 8, "10.0.0.1")
    with pytest.raises(ProtocolError, match="at most 2 pending challenges:"):
        await challenge(1, 7, "10.0.0.9")
    await challenges.check_room(1, "10.0.0.9", ChallengeCaps(per_challenger=3))
    with pytest.raises(ProtocolError, match="at most 2 pending challenges:"):
        await challenges.check_room(1, "10.0.0.9", caps)  # the same look, before the work
    await challenge(2, 9, "10.0.0.1")  # the address's third
    with pytest.raises(ProtocolError, match="at most 3 pending challenges from one address"):
        await challenge(3, 9, "10.0.0.1")
    with pytest.raises(ProtocolError, match="from one address"):
        await challenges.check_room(3, "10.0.0.1", caps)
    await challenges.check_room(3, "10.0.0.2", caps)
    for k in range(30, 50):  # twenty more for user 9, from elsewhere: no cap of its own
        await challenge(k, 9, f"10.0.1.{k}")
    assert await challenges.get(one.challenge_id) == one
    assert await challenges.answer(one.challenge_id, 9) == one
    assert await challenges.get(one.challenge_id) is None
    await challenge(3, 9, "10.0.0.1")  # the address's count went down with the answer
    await challenge(1, 7, "10.0.0.2")  # and so did the challenger's
    left = await challenges.withdraw_all(2)
    assert [c.challenger_id for c in left] == [2]
    await challenge(50, 9, "10.0.0.1")  # a leaver's challenges free its address's share
    assert len(await challenges.withdraw_all(9)) == 22


@pytest.fixture(params=["memory", "redis"])
def rematches(request: pytest.FixtureRequest) -> RematchStore:
    if request.param == "memory":
        return MemoryRematches()
    redis: aioredis.Redis = request.getfixturevalue("redis")
    keys: Keys = request.getfixturevalue("keys")
    return RedisRematches(redis, keys)


async def test_a_rematch_offer_is_accepted_once_and_lapses_with_a_player(
        rematches: RematchStore) -> None:
    offer = RematchOffer("g1", 0, (11, 12))
    assert await rematches.offer(offer) == "offered"
    assert await rematches.offer(offer) == "again"
    assert await rematches.get("g1") == offer
    assert await rematches.close("g1", not_seat=0) is None  # one's own is not accepted
    assert await rematches.offer(RematchOffer("g1", 1, (11, 12))) == "accept"
    assert await rematches.get("g1") is None
    assert await rematches.offer(RematchOffer("g2", 1, (11, 13))) == "offered"
    assert await rematches.offer(RematchOffer("g3", 0, (14, 11))) == "offered"
    assert await rematches.close("g2", not_seat=0) == RematchOffer("g2", 1, (11, 13))
    assert await rematches.withdraw_all(11) == [RematchOffer("g3", 0, (14, 11))]
    assert await rematches.withdraw_all(14) == []
    assert await rematches.close("g3") is None


async def test_challenges_are_answered_once_by_their_target(
        stores: tuple[SeekStore, ChallengeStore]) -> None:
    seeks, challenges = stores

    async def challenge(challenger: int, target: int) -> Challenge:
        made = Challenge(p.ChallengeReceived(
            challenge_id=await seeks.new_id(),
            from_=p.User(name=f"user{challenger}", kind="human"), game="xodd",
            options={"size": 9}, clock=FAST, color="random"), challenger, "n1", target,
            p.User(name=f"user{target}", kind="bot"), "n2")
        await challenges.create(made, CHALLENGES)
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
        await stores[0].open(target, FIVE)
        results = await asyncio.gather(
            *(stores[k % 8].take(target.seek_id, 100 + k) for k in range(40)),
            return_exceptions=True)
        assert sum(isinstance(r, Seek) for r in results) == 1
        assert all(isinstance(r, Seek) or r.code == ErrorCode.NOT_FOUND  # type: ignore[union-attr]
                   for r in results)

        # 40 users seeking the same game at once: every seek paired at most once
        made = [await seek(stores[0], 200 + k) for k in range(40)]
        partners = await asyncio.gather(*(stores[k % 8].open(made[k], FIVE)
                                          for k in range(40)))
        paired = [s.seek_id for s in partners if s is not None]
        still_open = [s.seek_id for s in await listed(stores[0])]
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
        partners = await asyncio.gather(*(stores[k % 8].open(made[k], FIVE)
                                          for k in range(40)))
        pairs = [(made[k], partner) for k, partner in enumerate(partners) if partner]
        paired = [seek.seek_id for pair in pairs for seek in pair]
        still_open = await listed(stores[0])
        assert len(set(paired)) == len(paired)  # nobody paired twice
        assert not set(paired) & {s.seek_id for s in still_open}
        assert len(paired) + len(still_open) == 40
        assert all(a.pairs_with(b) for a, b in pairs)  # each within the other's range
        # no two seeks left waiting could have paired
        assert not any(a.pairs_with(b) for a in still_open for b in still_open)
    finally:
        for client in clients:
            await client.aclose()
