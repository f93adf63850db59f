"""The bus against a real Redis: publish/subscribe, requests between nodes, and a Redis that
goes away (a private redis-server, killed and started again, or stopped with SIGSTOP)."""

from __future__ import annotations

import asyncio
import os
import random
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

import protocol as p
from server.cluster.bus import UNKNOWN_OP, Bus, Envelope
from server.cluster.errors import BusUnavailable, NodeUnreachable, RemoteError, RequestTimeout
from server.cluster.keys import Keys

from .conftest import PrivateRedis, eventually


@asynccontextmanager
async def running(url: str, keys: Keys, node_id: str, **options: Any) -> AsyncIterator[Bus]:
    bus = Bus(url, keys, node_id, **options)
    await bus.start()
    try:
        await bus.wait_connected(5)
        yield bus
    finally:
        await bus.close()


def collect() -> tuple[list[tuple[str, bytes]], Callable[[str, bytes], None]]:
    got: list[tuple[str, bytes]] = []
    return got, lambda channel, data: got.append((channel, data))


async def test_a_subscription_is_live_when_subscribe_returns(redis_url: str, keys: Keys
                                                             ) -> None:
    channel = keys.game_channel("g1")
    async with running(redis_url, keys, "a") as a, running(redis_url, keys, "b") as b:
        got, handler = collect()
        await a.subscribe(channel, handler)
        assert await b.publish(channel, b"one") == 1  # no sleep: it was confirmed
        await b.publish(channel, b"two")
        await eventually(lambda: len(got) == 2)
        assert got == [(channel, b"one"), (channel, b"two")]
        with pytest.raises(ValueError, match="has a handler"):
            await a.subscribe(channel, handler)
        await a.unsubscribe(channel)
        assert channel not in a.channels

        async def nobody_listens() -> bool:
            return (await b.redis.pubsub_numsub(channel))[0][1] == 0

        await eventually(nobody_listens)
        await b.publish(channel, b"three")
        await asyncio.sleep(0.1)
        assert len(got) == 2


async def test_request_and_reply_between_two_nodes(redis_url: str, keys: Keys) -> None:
    frame = p.encode(p.Move(id=7, game_id="k3v9q2x7ma", ply=3, move="c3"))
    seen: list[tuple[Any, str]] = []

    async def echo(body: Any, sender: str) -> Any:
        seen.append((body, sender))
        return {"frame": body, "by": "b"}

    async with running(redis_url, keys, "a") as a, running(redis_url, keys, "b") as b:
        b.serve("echo", echo)
        reply = await a.request("b", "echo", frame)
        assert reply == {"frame": frame, "by": "b"}
        assert seen == [(frame, "a")]
        assert p.decode_client(reply["frame"]) == p.Move(id=7, game_id="k3v9q2x7ma", ply=3,
                                                         move="c3")


async def test_concurrent_requests_get_their_own_replies(redis_url: str, keys: Keys) -> None:
    async def slow_echo(body: Any, _sender: str) -> Any:
        await asyncio.sleep(random.random() / 20)
        return body * 2

    async with running(redis_url, keys, "a") as a, running(redis_url, keys, "b") as b:
        b.serve("double", slow_echo)
        replies = await asyncio.gather(*(a.request("b", "double", n) for n in range(60)))
        assert replies == [2 * n for n in range(60)]


async def test_failures_come_back_as_clear_errors(redis_url: str, keys: Keys) -> None:
    async def refuse(_body: Any, _sender: str) -> Any:
        raise p.ProtocolError("no such game", code=p.ErrorCode.NOT_FOUND)

    async def crash(_body: Any, _sender: str) -> Any:
        raise RuntimeError("boom")

    async def stall(_body: Any, _sender: str) -> Any:
        await asyncio.sleep(1.0)
        return "late"

    async with running(redis_url, keys, "a") as a, running(redis_url, keys, "b") as b:
        b.serve("refuse", refuse)
        b.serve("crash", crash)
        b.serve("stall", stall)
        with pytest.raises(RemoteError) as refused:
            await a.request("b", "refuse")
        assert (refused.value.code, refused.value.message) == ("not_found", "no such game")
        with pytest.raises(RemoteError) as crashed:
            await a.request("b", "crash")
        assert crashed.value.code == "internal_error" and "boom" in crashed.value.message
        with pytest.raises(RemoteError) as unknown:
            await a.request("b", "nothing")
        assert unknown.value.code == UNKNOWN_OP
        with pytest.raises(NodeUnreachable, match="'nobody'"):
            await a.request("nobody", "echo")
        with pytest.raises(RequestTimeout, match=r"no reply from node 'b' to 'stall' within "
                                                 r"0.2 s"):
            await a.request("b", "stall", timeout_s=0.2)
        await eventually(lambda: a.stats.dropped == 1, 3)  # the late reply, matched to nobody


async def test_a_request_to_a_node_that_died_fails_when_its_channel_empties(
        redis_url: str, keys: Keys) -> None:
    """The target got the request and died before replying: the asker learns it from the
    target's channel emptying (within a few ``probe_s``), not at the request's timeout."""
    got = asyncio.Event()

    async def stall(_body: Any, _sender: str) -> Any:
        got.set()
        await asyncio.sleep(60)

    async with running(redis_url, keys, "a", probe_s=0.1) as a:
        b = Bus(redis_url, keys, "b")
        await b.start()
        await b.wait_connected(5)
        b.serve("stall", stall)
        asked = asyncio.ensure_future(a.request("b", "stall", timeout_s=60))
        await asyncio.wait_for(got.wait(), 10)
        await b.close()  # b dies (its connection to Redis closes)
        with pytest.raises(RequestTimeout, match="nobody listens any more"):
            await asyncio.wait_for(asked, 20)


async def test_malformed_messages_on_a_node_channel_are_dropped(redis_url: str, keys: Keys
                                                                ) -> None:
    async def echo(body: Any, _sender: str) -> Any:
        return body

    async with running(redis_url, keys, "a") as a, running(redis_url, keys, "b") as b:
        b.serve("echo", echo)
        for junk in (b"\xc1", b"\x93\x01\x02\x03", Envelope("x", 1, "a").pack(),
                     b"\x83\xa1k\xa1q\xa2id\x01\xa4from\xa1a"):  # a request without its op
            await a.publish(b.channel, junk)
        assert await a.request("b", "echo", "still here") == "still here"
        assert b.stats.dropped == 4


async def test_the_reader_survives_a_redis_restart_and_reports_the_gap(
        private_redis: PrivateRedis) -> None:
    keys = Keys("restart")
    gaps: list[str] = []
    channel = keys.game_channel("g1")
    options = {"ping_s": 0.5, "backoff_s": (0.02, 0.2), "request_timeout_s": 2.0}

    async def echo(body: Any, _sender: str) -> Any:
        return body

    async with running(private_redis.url, keys, "a", on_gap=lambda: gaps.append("a"),
                       **options) as a, \
            running(private_redis.url, keys, "b", on_gap=lambda: gaps.append("b"),
                    **options) as b:
        b.serve("echo", echo)
        got, handler = collect()
        await a.subscribe(channel, handler)
        await b.publish(channel, b"before")
        assert await a.request("b", "echo", 1) == 1

        private_redis.stop()
        await eventually(lambda: not a.connected and not b.connected, 5)
        with pytest.raises(BusUnavailable):
            await a.request("b", "echo", 2)
        with pytest.raises(BusUnavailable):
            await b.publish(channel, b"lost")
        later = keys.game_channel("g2")  # subscribed while Redis is down
        pending = asyncio.ensure_future(a.subscribe(later, handler, timeout_s=10))
        await asyncio.sleep(0.3)
        assert not pending.done()
        assert gaps == []

        private_redis.start()
        await pending  # confirmed once the reader is back
        await a.wait_connected(5)
        await b.wait_connected(5)
        assert sorted(gaps) == ["a", "b"]  # each told once that it may have missed messages
        assert a.stats.gaps == 1 and a.stats.connects == 2
        await b.publish(channel, b"after")
        await b.publish(later, b"new channel")
        assert await a.request("b", "echo", 3) == 3
        await eventually(lambda: len(got) == 3)
        assert got == [(channel, b"before"), (channel, b"after"), (later, b"new channel")]


async def test_a_redis_that_stops_answering_is_noticed(private_redis: PrivateRedis) -> None:
    """A stopped Redis keeps its sockets open: only the reader's PING finds it silent."""
    gaps: list[int] = []
    async with running(private_redis.url, Keys("frozen"), "a", ping_s=0.25,
                       backoff_s=(0.02, 0.1), command_timeout_s=0.5,
                       on_gap=lambda: gaps.append(1)) as a:
        assert private_redis.process is not None
        os.kill(private_redis.process.pid, signal.SIGSTOP)
        try:
            await eventually(lambda: not a.connected, 5)
        finally:
            os.kill(private_redis.process.pid, signal.SIGCONT)
        await a.wait_connected(5)
        assert gaps == [1]


async def test_a_burst_of_commands_waits_for_the_pool(redis_url: str, keys: Keys) -> None:
    got, handler = collect()
    async with running(redis_url, keys, "a", max_connections=2) as a:
        await a.subscribe(keys.lobby_channel, handler)
        counts = await asyncio.gather(*(a.publish(keys.lobby_channel, b"%d" % n)
                                        for n in range(300)))
        assert counts == [1] * 300
        await eventually(lambda: len(got) == 300)
