"""Broken and hostile frames get an error or a close, and the rest of the server goes on."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable

import pytest

import protocol as p

from .conftest import Live, Serve, one_backend
from .support import Clients, Game, RawSocket, pack, start_game

pytestmark = one_backend  # frames and request budgets, all in the server's memory


@pytest.fixture
async def other_game(clients: Clients) -> Game:
    """A game between two other players, which must go on whatever happens."""
    a, b = await clients.guest(), await clients.guest()
    return await start_game(a, b, "yodd", {"size": 4})


async def goes_on(game: Game) -> None:
    ack = await game.play_quiet_move(random.Random(game.ply))
    assert ack.ply == game.ply - 1


def error(reply: p.ServerMessage, request_id: int | None) -> p.ErrorReply:
    assert isinstance(reply, p.ErrorReply), reply
    assert reply.id == request_id and reply.code == "bad_request", reply
    return reply


async def test_requests_before_hello(server: Live, other_game: Game) -> None:
    raw = await RawSocket.open(server.url, hello=False)
    for request in ({"t": "ping", "id": 1}, {"t": "guest", "id": 2},
                    {"t": "move", "id": 3, "game_id": other_game.game_id, "ply": 0,
                     "move": "Ba1"}):
        reply = error(await raw.request(request), request["id"])
        assert "hello" in reply.message
        await goes_on(other_game)
    assert isinstance(await raw.request({"t": "hello", "id": 4, "version": 1}), p.Welcome)
    reply = error(await raw.request({"t": "hello", "id": 5, "version": 1}), 5)  # twice
    assert "hello" in reply.message
    assert await raw.request({"t": "ping", "id": 6}) == p.Pong(id=6)
    await raw.close()


async def test_malformed_frames_get_bad_request(server: Live, other_game: Game) -> None:
    raw = await RawSocket.open(server.url)
    gid = other_game.game_id
    cases: list[tuple[bytes | str, int | None, str]] = [
        (b"\xc1\xff garbage", None, ""),
        (b"", None, ""),
        ("a text frame", None, "text"),
        (pack([1, 2, 3]), None, ""),
        (pack({"t": "ping", "id": 7}) + b"\x00", None, ""),  # bytes after the map
        (pack({"t": "teleport", "id": 8}), 8, "teleport"),
        (pack({"t": "ping", "id": 9, "extra": 1}), 9, "extra"),
        (pack({"t": "move", "id": 10, "game_id": gid, "ply": "3", "move": "Ba1"}), 10, "ply"),
        (pack({"t": "move", "id": 11, "game_id": gid, "ply": -1, "move": "Ba1"}), 11, "ply"),
        (pack({"t": "move", "id": 12, "game_id": gid, "ply": 0}), 12, "move"),
        (pack({"t": "seek", "id": 13, "game": "chess", "options": {},
               "clock": {"kind": "unlimited"}}), 13, "chess"),
        (pack({"t": "ping", "id": "14"}), None, "id"),
        (pack({1: "ping"}), None, ""),
    ]
    for frame, request_id, mentions in cases:
        await raw.send(frame)
        reply = await raw.receive()
        assert isinstance(reply, p.ErrorReply) and reply.code == "bad_request", (frame, reply)
        if request_id is not None:
            assert reply.id == request_id, (frame, reply)
        assert mentions in reply.message, (frame, reply)
        await goes_on(other_game)
    assert await raw.request({"t": "ping", "id": 15}) == p.Pong(id=15)  # still open
    await raw.close()


async def test_an_oversized_frame_closes_the_connection(server: Live, other_game: Game) -> None:
    raw = await RawSocket.open(server.url)
    await raw.send(pack({"t": "chat", "id": 2, "game_id": other_game.game_id,
                         "text": "x" * (p.MAX_CLIENT_FRAME_BYTES + 1)}))
    assert await raw.closed_with() == p.CLOSE_TOO_BIG
    await goes_on(other_game)


async def test_an_unsupported_version_is_refused_and_closed(server: Live,
                                                            other_game: Game) -> None:
    raw = await RawSocket.open(server.url, hello=False)
    reply = await raw.request({"t": "hello", "id": 1, "version": 2})
    assert isinstance(reply, p.ErrorReply)
    assert (reply.id, reply.code) == (1, "unsupported_version")
    assert await raw.closed_with() == p.CLOSE_POLICY_VIOLATION
    await goes_on(other_game)


BAD_HELLOS = [
    {"t": "hello", "id": 1, "version": float("nan")},
    {"t": "hello", "id": 1, "version": float("inf")},
    {"t": "hello", "id": 1, "version": 1.0},
    {"t": "hello", "id": 1, "version": 1, "client": "bot\u202egnp.exe"},  # right-to-left
    {"t": "hello", "id": 1, "version": 1, "client": "x" * 101},
    {"t": "hello", "id": 1, "version": "1\u00e9" * 40},  # quoted back in the message
    {"t": "hello", "id": 1},
    {"t": "hello", "id": 1, "version": 1, "extra": True},
]


@pytest.mark.parametrize("hello", BAD_HELLOS, ids=lambda h: repr(h)[:60])
async def test_a_bad_hello_is_refused_and_closed_at_once(serve: Serve,
                                                         hello: dict[str, object]) -> None:
    """A hello that is not valid gets bad_request, and the connection is closed at once
    with CLOSE_BAD_HELLO (not left open, answering nothing useful, until the hello
    deadline); the server answers other connections meanwhile."""
    async with serve(hello_timeout_s=60.0) as live:
        raw = await RawSocket.open(live.url, hello=False)
        began = asyncio.get_running_loop().time()
        reply = await raw.request(hello)
        assert isinstance(reply, p.ErrorReply) and reply.code == "bad_request", reply
        assert await raw.closed_with() == p.CLOSE_BAD_HELLO
        assert asyncio.get_running_loop().time() - began < 5.0
        other = await RawSocket.open(live.url)
        assert await other.request({"t": "ping", "id": 2}) == p.Pong(id=2)
        await other.close()


async def test_a_bad_second_hello_only_gets_bad_request(server: Live) -> None:
    """Once greeted, a bad hello is one more bad frame: the connection stays."""
    raw = await RawSocket.open(server.url)
    error(await raw.request({"t": "hello", "id": 2, "version": 1.0}), 2)
    assert await raw.request({"t": "ping", "id": 3}) == p.Pong(id=3)
    await raw.close()


async def test_too_many_requests_are_rate_limited(server: Live, other_game: Game) -> None:
    raw = await RawSocket.open(server.url)
    burst = int(server.settings.conn_burst)
    for i in range(burst + 5):
        await raw.send(pack({"t": "ping", "id": 100 + i}))
    replies = [await raw.receive() for _ in range(burst + 5)]
    pongs = [r for r in replies if isinstance(r, p.Pong)]
    limited = [r for r in replies if isinstance(r, p.ErrorReply)]
    assert len(pongs) >= burst - 1  # the one hello and the pings fit in the burst ...
    assert limited and all(r.code == "rate_limited" and r.retry_after_ms for r in limited)
    await goes_on(other_game)  # ... and other connections are not slowed down
    await raw.close()


async def test_a_flooding_connection_is_read_no_faster_than_its_budget(
        server: Live, other_game: Game) -> None:
    """Past its budget a connection gets one refusal and is then left unread until a
    token is back (TCP pushes back on the sender), not one refusal per frame: a flood of
    frames costs the server a refusal per wait, so it cannot take the loop from others."""
    raw = await RawSocket.open(server.url)
    burst, flood = int(server.settings.conn_burst), 400
    await asyncio.gather(*(raw.send(pack({"t": "ping", "id": 100 + i})) for i in range(flood)))
    replies: list[p.ServerMessage] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(1.0):  # the budget refills 20 a second: ~20 more served
            while True:
                replies.append(await raw.receive())
    limited = [r for r in replies if isinstance(r, p.ErrorReply)]
    pongs = [r for r in replies if isinstance(r, p.Pong)]
    assert limited and all(r.code == "rate_limited" for r in limited)
    # answered one by one as tokens come back: pongs beyond the burst, and a refusal per
    # pause, not the ~{flood - burst} refusals at once of a server that reads on
    assert len(pongs) > burst - 1 and len(limited) < 30, (len(pongs), len(limited))
    await goes_on(other_game)
    await raw.close()


async def test_a_stream_of_bad_frames_ends_in_a_close(serve: Serve) -> None:
    async with serve(conn_rate=10_000.0, conn_burst=10_000.0) as live:
        raw = await RawSocket.open(live.url)
        closed: Callable[[], Awaitable[int | None]] = raw.closed_with
        for _ in range(60):
            try:
                await raw.send(b"\xc1")
            except Exception:
                break
        assert await closed() == p.CLOSE_POLICY_VIOLATION
        conn = await live.clients.connect()  # the server itself is fine
        assert isinstance(await conn.call(p.Ping), p.Pong)


async def test_a_client_that_stops_reading_is_dropped(serve: Serve) -> None:
    async with serve(out_buffer_bytes=64 * 1024) as live:
        raw = await RawSocket.open(live.url)
        [session] = live.running.app.sessions
        assert raw.ws.transport is not None
        raw.ws.transport.pause_reading()  # the client reads nothing more
        frame = p.encode(p.Pong(id=1)) + bytes(60_000)  # the content does not matter
        server_transport = session.ws.transport
        sent = 0
        while not session.closing and sent < 100_000:  # the kernel's buffers fill first
            session.send_frame(frame)
            sent += 1
            await asyncio.sleep(0)
            # what waits in the server's memory stays bounded by the limit (and one frame)
            assert server_transport.get_write_buffer_size() <= 64 * 1024 + len(frame)
        assert session.closing
        raw.ws.transport.resume_reading()
        assert await raw.closed_with() == 1008  # after the frames it had let pile up
        conn = await live.clients.connect()  # the server itself is fine
        assert isinstance(await conn.call(p.Ping), p.Pong)
