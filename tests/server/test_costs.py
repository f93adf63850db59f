"""Budgets by cost (issue 24): a request is charged for the bytes it makes the server send,
and a connection and an address have an egress budget; over it, requests that list are
refused ``rate_limited`` with ``retry_after_ms`` while play goes on."""

from __future__ import annotations

import asyncio
from typing import Any

import protocol as p
from clients.connection import ServerError

from .conftest import Serve, one_backend
from .support import Player

pytestmark = one_backend

SEEKERS = 4  # each with 5 open seeks (max_open_seeks): a page of 20 seeks, some 3.5 KB


def clock_of(k: int) -> p.Fischer:
    return p.Fischer(base_ms=600_000 + 1000 * k, increment_ms=0)


async def open_seeks(live: Any) -> int:
    """20 seeks by others; the size in bytes of a lobby page listing them all."""
    for i in range(SEEKERS):
        seeker = await live.clients.guest()
        for j in range(5):
            await seeker.call(p.Seek, game="hadron", options={}, clock=clock_of(5 * i + j))
    looker = await live.clients.connect()
    lobby = await looker.call(p.LobbySubscribe)
    assert len(lobby.seeks) == 5 * SEEKERS
    await looker.close()
    return len(p.encode(lobby))


async def until_refused(player: Player, kind: type[Any], **fields: Any) -> tuple[int, Any]:
    """How many ``kind`` requests are answered, one after the other, before the first
    refusal; and that refusal."""
    answered = 0
    while answered < 1000:
        try:
            await player.call(kind, **fields)
        except Exception as exc:
            return answered, exc
        answered += 1
    raise AssertionError(f"{kind.TAG}: never refused")


async def test_a_request_is_charged_for_the_bytes_of_its_reply(serve: Serve) -> None:
    async with serve(lobby_page=100, conn_rate=1, conn_burst=40, token_bytes=512) as live:
        size = await open_seeks(live)
        cost = 1 + size // 512  # tokens a lobby page costs
        assert cost >= 4
        asker, pinger = await live.clients.guest(), await live.clients.guest()
        answered, refused = await until_refused(asker, p.LobbySubscribe)
        assert answered <= 40 // cost + 2  # not 40: the budget counts bytes, not requests
        assert refused.code == "rate_limited" and refused.retry_after_ms > 0
        pings, refused = await until_refused(pinger, p.Ping)
        # a ping costs one token (its hello and guest took 4: the welcome is 1 KB)
        assert pings >= 35 and refused.code == "rate_limited"


async def test_over_its_egress_a_connection_is_refused_listings_but_plays_on(
        serve: Serve) -> None:
    async with serve(lobby_page=100, egress_rate=5_000, egress_burst=8_000,
                     address_egress_rate=0, conn_rate=1000, conn_burst=1000) as live:
        size = await open_seeks(live)
        asker = await live.clients.guest()
        answered = 0
        while True:  # a listing, then a ping, until the listing is refused
            try:
                await asker.call(p.LobbySubscribe)
            except ServerError as exc:
                refused = exc
                break
            answered += 1
            # the ping right after the listing that spent the budget is answered too
            assert isinstance(await asker.call(p.Ping), p.Pong)
        assert 1 <= answered <= 8_000 // size + 1
        assert refused.code == "rate_limited" and 0 < refused.retry_after_ms <= 1000
        await asker.call(p.Seek, game="hadron", options={}, clock=clock_of(99))
        other = await live.clients.guest()  # another connection of the address: its own
        assert isinstance(await other.call(p.LobbySubscribe), p.Lobby)
        await asyncio.sleep(refused.retry_after_ms / 1000)
        assert isinstance(await asker.call(p.LobbySubscribe), p.Lobby)  # paid back


async def test_an_address_has_an_egress_budget_over_its_connections(serve: Serve) -> None:
    async with serve(lobby_page=100, address_egress_rate=2_000, address_egress_burst=20_000,
                     conn_rate=1000, conn_burst=1000) as live:
        size = await open_seeks(live)
        first, second = await live.clients.guest(), await live.clients.guest()
        answered, refused = await until_refused(first, p.LobbySubscribe)
        assert answered <= 20_000 // size and refused.code == "rate_limited"
        assert isinstance(await second.call(p.Ping), p.Pong)  # play goes on
        refused = await second.refused(p.LobbySubscribe)  # the same address: spent
        assert refused.code == "rate_limited" and refused.retry_after_ms > 0
