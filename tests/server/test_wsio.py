"""What server/wsio.py relies on in websockets, pinned: an upgrade that moves it fails here.

server/wsio.py is the one module that touches websockets' internals (the connection's
sans-I/O protocol and transport) and copies ``Connection.send_data``. If websockets is
upgraded, these tests say exactly what changed; update wsio.py, then the pins.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import inspect
import re
import socket
import weakref
from asyncio import selector_events

import pytest
import websockets
from websockets.asyncio.connection import Connection
from websockets.asyncio.server import ServerConnection
from websockets.protocol import Protocol, State
from websockets.server import ServerProtocol

import protocol as p
from server import wsio

from .conftest import Live, Serve, one_backend
from .support import RawSocket

# sha256 of the source of websockets 17.4's Connection.send_data, which wsio.flush copies
SEND_DATA_SHA256 = "b01f84358ffee740710cf9cad998af659c4d3cb01f6014c033d74104c5b5f61b"


def test_websockets_is_the_pinned_release() -> None:
    assert websockets.version.version == wsio.WEBSOCKETS_VERSION, (
        "websockets was upgraded: check server/wsio.py against the new release, then pin")


def test_send_data_is_still_what_flush_copies() -> None:
    source = inspect.getsource(Connection.send_data)
    assert hashlib.sha256(source.encode()).hexdigest() == SEND_DATA_SHA256, (
        "websockets' Connection.send_data changed: compare it with server.wsio.flush")


def test_the_protocol_api_wsio_uses_is_there() -> None:
    for name in ("send_binary", "data_to_send"):
        assert callable(getattr(Protocol, name)), name
    assert State.OPEN.name == "OPEN"


async def test_a_live_connection_has_what_wsio_reaches_for(server: Live) -> None:
    client = await server.clients.guest()
    (session,) = [s for s in server.running.app.sessions
                  if s.user is not None and s.user.name == client.name]
    ws = session.ws
    assert isinstance(ws.protocol, Protocol)
    assert ws.transport.get_write_buffer_size() >= 0
    assert wsio.frame_binary(ws, p.encode(p.Pong(id=7)))
    assert wsio.flush(ws) >= 0  # handed to the transport in one write
    assert await client.conn.next_event(5) == p.Pong(id=7)
    await client.close()
    await ws.wait_closed()
    assert not wsio.frame_binary(ws, p.encode(p.Pong(id=8)))  # closed: nothing framed


async def test_connection_lost_waiter_and_create_connection_are_what_wsio_uses(
        server: Live) -> None:
    """``is_lost`` reads ``Connection.connection_lost_waiter`` (resolved once, in
    ``connection_lost``); ``reporting_connection`` hangs on ``serve``'s
    ``create_connection``, ``ServerConnection.connection_made``, ``handshake`` and
    ``connection_lost``: an open connection keeps no handshake, and the admission hears of
    its loss at once, with no callback of its own."""
    assert "create_connection" in inspect.signature(websockets.serve).parameters
    admission = server.running.app.admission
    client = await server.clients.guest()
    (session,) = [s for s in server.running.app.sessions
                  if s.user is not None and s.user.name == client.name]
    ws = session.ws
    assert type(ws).__name__ == "Reported"  # made by wsio.reporting_connection
    assert ws.request is not None and ws.response is None  # let go of once it is open
    assert ws.drain_waiters == []  # a list: websockets only appends, removes, iterates
    source = inspect.getsource(type(ws).__mro__[1])  # websockets' ServerConnection...
    source += inspect.getsource(type(ws).__mro__[2])  # ... and Connection
    uses = re.findall(r"drain_waiters(\.\w+|\b)", source)
    assert set(uses) <= {"", ".append", ".remove"}, uses
    assert not wsio.is_lost(ws) and ws in admission.admitted
    assert not ws.connection_lost_waiter._callbacks
    held = admission.total
    await client.close()
    await ws.wait_closed()
    await ws.connection_lost_waiter
    assert wsio.is_lost(ws)
    assert ws not in admission.admitted and admission.total == held - 1


def _live(kinds: tuple[type, ...]) -> dict[str, int]:
    """How many objects of each of ``kinds`` the collector tracks now (alive or garbage)."""
    counts = dict.fromkeys((k.__name__ for k in kinds), 0)
    for obj in gc.get_objects():
        for kind in kinds:
            if issubclass(type(obj), kind):  # not isinstance: a dead weakref.proxy raises
                counts[kind.__name__] += 1
    return counts


async def _raw_request(port: int, request: bytes) -> bytes:
    """Send ``request`` on a plain socket (no asyncio transport on this side to count),
    return the first bytes of the answer; the socket is closed at once after."""
    loop = asyncio.get_running_loop()
    with socket.socket() as sock:
        sock.setblocking(False)
        await loop.sock_connect(sock, ("127.0.0.1", port))
        await loop.sock_sendall(sock, request)
        return await asyncio.wait_for(loop.sock_recv(sock, 4096), 10)


async def test_a_closed_connection_is_freed_without_the_cyclic_collector(
        server: Live) -> None:
    """wsio.release: with the collector off, websocket connections dropped by their
    client (an unclean close: the parser's EOFError) and plain ``/healthz`` requests leave
    no server connection, sans-I/O protocol or transport behind (issue 16: 18,000 closed
    connections were the collector's to find, for pauses of seconds)."""
    transport: type = getattr(selector_events, "_SelectorSocketTransport")  # noqa: B009
    kinds = (ServerConnection, ServerProtocol, transport)
    port = server.http_port
    upgrade = (f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode()
    healthz = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    admission = server.running.app.admission
    gc.collect()
    gc.disable()
    try:
        before = _live(kinds)
        for _ in range(20):
            assert (await _raw_request(port, upgrade)).startswith(b"HTTP/1.1 101")
            assert (await _raw_request(port, healthz)).startswith(b"HTTP/1.1 200")
        for _ in range(200):  # until the server has seen every socket go
            if admission.held() == 0 and _live(kinds) == before:
                break
            await asyncio.sleep(0.02)
        assert _live(kinds) == before
    finally:
        gc.enable()


@pytest.mark.parametrize("ending", ["closed", "vanished"])
async def test_a_guest_connection_closed_or_vanished_is_freed_with_its_session(
        server: Live, ending: str) -> None:
    """``reporting_connection``'s connections call ``wsio.release`` once lost: their
    protocol (whose parser generator refers to it, and, when the peer vanished without a
    close frame, the parser's EOFError by its traceback) and transport (before Python
    3.12, a bound method of its own) are freed by reference counting, not left for a
    collection. Fails if websockets or asyncio grow another cycle there."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()  # only reference counting frees anything now
    try:
        client = await server.clients.guest()
        (session,) = [s for s in server.running.app.sessions
                      if s.user is not None and s.user.name == client.name]
        ws = session.ws
        assert inspect.isgenerator(ws.protocol.parser)  # what release() closes
        refs = [weakref.ref(ws), weakref.ref(ws.protocol), weakref.ref(ws.transport),
                weakref.ref(session)]
        if ending == "closed":
            await client.close()
        else:
            client.conn.ws.transport.abort()  # no close frame: the server's parser fails
        await ws.wait_closed()
        await ws.connection_lost_waiter
        if ending == "vanished":
            assert isinstance(ws.protocol.parser_exc, EOFError)
        del session, ws
        for _ in range(50):  # the handler's task and the transport's callbacks finish
            await asyncio.sleep(0.01)
            if all(ref() is None for ref in refs):
                break
        assert [ref() is None for ref in refs] == [True] * 4, [ref() for ref in refs]
    finally:
        if was_enabled:
            gc.enable()


@one_backend
async def test_a_connection_is_pinged_once_it_has_said_hello(serve: Serve) -> None:
    """``keep_alive`` starts websockets' keepalive (its task, its interval and timeout): a
    connection that has not said hello has no ping task (a wave of them would cost one
    each), one that has is pinged and kept."""
    async with serve(ping_interval=0.2, ping_timeout=5.0) as live:
        silent = await RawSocket.open(live.url, hello=False)
        greeted = await RawSocket.open(live.url)
        sessions = {s.proto.phase: s for s in live.running.app.sessions}
        quiet, said = sessions[p.Phase.CONNECTED], sessions[p.Phase.GREETED]
        assert quiet.ws.keepalive_task is None
        assert said.ws.keepalive_task is not None and not said.ws.keepalive_task.done()
        assert (said.ws.ping_interval, said.ws.ping_timeout) == (0.2, 5.0)
        pinged = said.ws.protocol.state  # still open after a few pings answered
        await asyncio.sleep(0.7)
        assert said.ws.protocol.state is pinged is State.OPEN
        assert said.ws.latency > 0  # a pong came back
        await silent.close()
        await greeted.close()
