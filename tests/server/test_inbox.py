"""A player's inbox of challenges: a flood of strangers' challenges does not lock out a
legitimate challenger (caps per challenger and per address, none per target), strangers'
challenges lapse, and a player chooses who may challenge them (issue 24)."""

from __future__ import annotations

import asyncio
from typing import Any

import protocol as p

from .conftest import Serve, both_topologies
from .support import FAST_CLOCK, TIMEOUT, Clients, Player, _player, start_game

pytestmark = both_topologies

OFFER: dict[str, Any] = {"game": "hadron", "options": {}, "clock": FAST_CLOCK}


async def guest_from(clients: Clients, address: str) -> Player:
    """A guest connected from ``address`` (a loopback address: several hosts)."""
    url = clients.pick()
    conn = await clients.connect(url, local_addr=(address, 0))
    return _player(conn, await asyncio.wait_for(conn.call(p.Guest), TIMEOUT), url)


async def registered_from(clients: Clients, address: str, name: str) -> Player:
    url = clients.pick()
    conn = await clients.connect(url, local_addr=(address, 0))
    authed = await asyncio.wait_for(
        conn.call(p.Register, username=name, password=f"{name}-password"), TIMEOUT)
    return _player(conn, authed, url)


async def login(clients: Clients, name: str, password: str) -> Player:
    url = clients.pick()
    conn = await clients.connect(url)
    authed = await asyncio.wait_for(conn.call(p.Login, username=name, password=password),
                                    TIMEOUT)
    return _player(conn, authed, url)


async def reaches(challenger: Player, target: Player) -> int:
    """``challenger`` challenges ``target``, who is told: the challenge's id."""
    created = await challenger.call(p.Challenge, to=target.name, **OFFER)
    assert isinstance(created, p.ChallengeCreated)
    await target.wait_for(p.ChallengeReceived, challenge_id=created.challenge_id)
    return created.challenge_id


async def test_a_flood_of_challenges_leaves_a_legitimate_challenger_through(
        serve: Serve) -> None:
    """More guests' challenges to one player than one shared cap per target used to take
    (50): every one is taken, each within its own challenger's and address's caps, and a
    registered challenger from elsewhere still reaches the player, every time."""
    async with serve() as live:
        target = await registered_from(live.clients, "127.0.0.20", "target")
        legit = await registered_from(live.clients, "127.0.0.21", "friend")
        flooders = [await guest_from(live.clients, f"127.1.0.{1 + k // 3}")
                    for k in range(27)]
        for _ in range(2):
            for flooder in flooders:
                await flooder.call(p.Challenge, to=target.name, **OFFER)
        for _ in range(3):
            challenge_id = await reaches(legit, target)
            await target.call(p.DeclineChallenge, challenge_id=challenge_id)


async def test_pending_challenges_are_capped_per_challenger_and_per_address(
        serve: Serve) -> None:
    async with serve(max_challenges_per_challenger=2, max_challenges_per_address=3) as live:
        t1, t2, t3 = [await guest_from(live.clients, "127.0.0.30") for _ in range(3)]
        a, b = [await guest_from(live.clients, "127.0.0.31") for _ in range(2)]
        await a.call(p.Challenge, to=t1.name, **OFFER)
        second = await a.call(p.Challenge, to=t2.name, **OFFER)
        refused = await a.refused(p.Challenge, to=t3.name, **OFFER)
        assert refused.code == p.ErrorCode.CONFLICT and "at most 2 pending" in refused.message
        await t2.call(p.DeclineChallenge, challenge_id=second.challenge_id)
        await a.call(p.Challenge, to=t3.name, **OFFER)  # a place again
        await b.call(p.Challenge, to=t1.name, **OFFER)  # the address's third
        refused = await b.refused(p.Challenge, to=t2.name, **OFFER)
        assert refused.code == p.ErrorCode.CONFLICT and "one address" in refused.message
        elsewhere = await guest_from(live.clients, "127.0.0.32")
        await reaches(elsewhere, t1)  # t1 has three waiting: no cap of its own
        await a.close()  # leaving withdraws its challenges, and frees the address's share
        await t1.wait_for(p.ChallengeEnded, reason="cancelled")
        await b.call(p.Challenge, to=t2.name, **OFFER)


async def test_a_player_chooses_who_may_challenge_them(serve: Serve) -> None:
    """``set_challenge_policy``: everyone, registered players only, or nobody; refusals
    are ``forbidden`` saying why; the choice is stored with the account (told in
    ``authed``) and holds wherever the challenger is connected."""
    async with serve() as live:
        target = await live.clients.register("picky", "picky-password")
        assert target.authed.challenge_policy is None  # everyone
        member = await live.clients.register("member", "member-password")
        guest = await live.clients.guest()

        assert isinstance(await target.call(p.SetChallengePolicy, policy="registered"), p.Ok)
        refused = await guest.refused(p.Challenge, to=target.name, **OFFER)
        assert refused.code == p.ErrorCode.FORBIDDEN
        assert "registered players only" in refused.message
        await target.call(p.DeclineChallenge, challenge_id=await reaches(member, target))

        await target.call(p.SetChallengePolicy, policy="nobody")
        for challenger in (guest, member):
            refused = await challenger.refused(p.Challenge, to=target.name, **OFFER)
            assert refused.code == p.ErrorCode.FORBIDDEN and "nobody" in refused.message
        assert not [e for e in await target.drain() if isinstance(e, p.ChallengeReceived)]

        again = await login(live.clients, "picky", "picky-password")
        assert again.authed.challenge_policy == "nobody"  # stored with the account
        await again.call(p.SetChallengePolicy, policy="everyone")
        await target.call(p.DeclineChallenge, challenge_id=await reaches(guest, target))
        relogged = await login(live.clients, "picky", "picky-password")
        assert relogged.authed.challenge_policy is None


async def test_a_guest_may_choose_too(serve: Serve) -> None:
    async with serve() as live:
        target, other = await live.clients.guest(), await live.clients.guest()
        await target.call(p.SetChallengePolicy, policy="registered")
        refused = await other.refused(p.Challenge, to=target.name, **OFFER)
        assert refused.code == p.ErrorCode.FORBIDDEN


async def test_strangers_challenges_lapse_and_acquaintances_do_not(serve: Serve) -> None:
    """A challenge from someone who never played the target lapses after
    ``stranger_challenge_s``: both are told (``cancelled``, saying it expired); one from
    a player who has a game with the target waits for its answer."""
    async with serve(stranger_challenge_s=0.5) as live:
        target, stranger, known = [await live.clients.guest() for _ in range(3)]
        await start_game(known, target, "hadron")  # a game together: acquainted
        await asyncio.sleep(0.7)  # the accepted challenge's expiry passes, unnoticed
        assert await target.drain() == [] and await known.drain() == []

        lapsing = await reaches(stranger, target)
        waiting = await reaches(known, target)
        for player in (stranger, target):
            ended = await player.wait_for(p.ChallengeEnded, challenge_id=lapsing)
            assert ended.reason == "cancelled" and "expired" in (ended.message or "")
        await asyncio.sleep(0.7)
        assert await known.drain() == []
        await target.call(p.DeclineChallenge, challenge_id=waiting)  # still pending
