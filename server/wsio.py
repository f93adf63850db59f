"""Every touch of websockets' internals, in one place: frames out without a task.

websockets' asyncio connection sends each frame with an awaited ``send()`` and a write per
frame. The server instead frames a message at once into the connection's sans-I/O protocol
(``ws.protocol.send_binary``) and, at the end of the event loop's turn, hands everything
framed for that connection to its transport in ONE write (:class:`Outbox`): a move's
``moved`` and ``move_ack`` reach the mover in one system call, a reply costs no task switch,
and an idle connection owns no writer task. :func:`flush` is a copy of websockets'
``Connection.send_data`` that joins the bytes first.

An open connection lets go of its opening handshake's response
(:func:`forget_handshake`, from ``ServerConnection.handshake``), and keeps its drain waiters
(none, unless its writes are paused) in a list rather than a deque of 700 bytes.

The caps on connections (:mod:`server.admission`) need two more hooks, also here:
:func:`reporting_connection` (``serve``'s ``create_connection``, with
``ServerConnection.connection_made`` and ``connection_lost``: a method call each, no
callback object per connection) and :func:`is_lost` (``Connection.connection_lost_waiter``).
And a lost connection's reference cycles are broken here (:func:`release`, from
``connection_lost``), so that it is freed at once rather than by the cyclic garbage
collector.

This relies on websockets 17's ``Connection.protocol`` (``send_binary``, ``data_to_send``,
``state``, ``parser``, ``parser_exc``), ``Connection.transport`` (and asyncio's
``_read_ready_cb`` on it), ``Connection.send_data``, ``Connection.drain_waiters`` (only
appended to, removed from and iterated) and the hooks above;
tests/server/test_wsio.py is pinned to that version and checks each of them, so an upgrade
that moves one fails loudly there rather than quietly here.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Callable
from typing import Any, Protocol

from websockets.asyncio.connection import Connection
from websockets.asyncio.server import Server, ServerConnection
from websockets.protocol import State

from .proxies import BadProxyHeader, proxy_header

WEBSOCKETS_VERSION = "17.4"
"""The websockets release this module was written against (pinned in pyproject.toml)."""


def frame_binary(ws: Connection, frame: bytes) -> bool:
    """Frame a binary message into the connection's protocol, where it waits for the next
    flush; False (nothing framed) once the connection is not open any more."""
    protocol = ws.protocol
    if protocol.state is not State.OPEN:
        return False
    protocol.send_binary(frame)
    return True


def flush(ws: Connection) -> int:
    """Hand the frames framed since the last flush to the transport, in one write; the
    bytes the transport now holds unsent (-1 when the connection is closing)."""
    writes = ws.protocol.data_to_send()
    transport = ws.transport
    if not writes:
        return transport.get_write_buffer_size()  # websockets sent them already
    if transport.is_closing():
        return -1
    if not all(writes):  # an end of stream follows: written as websockets' send_data does
        for data in writes:
            if data:
                transport.write(data)
            elif transport.can_write_eof():
                transport.write_eof()
            else:
                transport.close()
        return -1
    transport.write(writes[0] if len(writes) == 1 else b"".join(writes))
    return transport.get_write_buffer_size()


class Outbox:
    """Connections with frames waiting, flushed once per event-loop turn.

    ``add(flush)`` registers a connection's flush callback the first time it has something
    to send in a turn; one ``call_soon`` at the end of the turn runs them all, in order.
    Anything websockets itself sends meanwhile (a pong, a close frame) goes out with the
    frames framed ahead of it, so order is kept.
    """

    __slots__ = ("_loop", "_waiting")

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: list[Callable[[], None]] = []

    def add(self, flush_one: Callable[[], None]) -> None:
        if not self._waiting:
            if self._loop is None:
                self._loop = asyncio.get_running_loop()
            self._loop.call_soon(self.flush)
        self._waiting.append(flush_one)

    def flush(self) -> None:
        waiting, self._waiting = self._waiting, []
        for flush_one in waiting:
            flush_one()


def is_lost(ws: Connection) -> bool:
    """Whether the connection's transport is gone already (websockets'
    ``Connection.connection_lost_waiter`` is resolved exactly once, in ``connection_lost``)."""
    waiter: asyncio.Future[None] = ws.connection_lost_waiter
    return waiter.done()


async def until_lost(ws: Connection, timeout_s: float) -> None:
    """Wait ``timeout_s``, or less if the connection's transport goes meanwhile."""
    waiter: asyncio.Future[None] = ws.connection_lost_waiter
    if not waiter.done():
        await asyncio.wait((waiter,), timeout=timeout_s)


def reporting_connection(accepted: Callable[[ServerConnection], None],
                         lost: Callable[[ServerConnection], None] = lambda _: None,
                         proxy_from: Callable[[str], bool] | None = None,
                         ) -> type[ServerConnection]:
    """A ``ServerConnection`` class (websockets.serve's ``create_connection``) that calls
    ``accepted`` with each connection as soon as its socket is accepted, before it has sent
    anything, and ``lost`` once its transport is gone, whatever ended it (the handshake
    failed or timed out, the handler returned, the peer vanished): once each, in order.

    With ``proxy_from`` (``--proxy-protocol``), a connection must come from a peer it
    accepts and begin with a PROXY protocol header (:func:`server.proxies.proxy_header`),
    or it is cut before anything else is read; the client the header names is kept in
    ``proxied``."""

    class Reported(ServerConnection):
        proxied: str | None = None  # the client a PROXY protocol header named

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # websockets appends, removes and iterates its drain waiters (none unless
            # writes are paused): a list does that, in 56 bytes where an empty deque
            # takes about 700, for every connection
            self.drain_waiters = []  # type: ignore[assignment]

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            accepted(self)

        async def handshake(self, *args: Any, **kwargs: Any) -> None:
            await super().handshake(*args, **kwargs)
            forget_handshake(self)

        def connection_lost(self, exc: Exception | None) -> None:
            super().connection_lost(exc)
            release(self)
            lost(self)

    if proxy_from is None:
        return Reported

    class Proxied(Reported):
        """A connection that begins with a PROXY protocol header (a subclass, so that
        the other servers' every read is not one call longer)."""

        _header: bytearray | None = None  # its bytes so far, until it is whole

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self._header = bytearray()
            super().connection_made(transport)

        def data_received(self, data: bytes) -> None:
            if self._header is None:  # the header is read: frames go on as they come
                super().data_received(data)
                return
            assert proxy_from is not None
            self._header += data
            peer = self.transport.get_extra_info("peername")
            try:
                if not proxy_from(str(peer[0]) if peer else "?"):
                    raise BadProxyHeader("not from a trusted proxy")
                found = proxy_header(bytes(self._header))
            except BadProxyHeader:
                self._header = None
                self.transport.abort()
                return
            if found is None:
                return
            client, used = found
            rest, self._header = bytes(self._header[used:]), None
            self.proxied = client
            if rest:
                super().data_received(rest)

    return Proxied


def keep_alive(ws: Connection, interval: float | None, timeout: float | None) -> None:
    """Start websockets' keepalive pings on a connection served without (``serve``'s
    ``ping_interval=None``): a ping every ``interval`` seconds, the connection failed if its
    pong takes over ``timeout``. The server starts them once a connection has said hello,
    so that each of a wave of connections that never does costs no ping task (its hello
    deadline closes it before a first ping would be due)."""
    if interval is None or ws.keepalive_task is not None:
        return
    ws.ping_interval, ws.ping_timeout = interval, timeout
    ws.start_keepalive()


def forget_handshake(ws: ServerConnection) -> None:
    """Let go of the opening handshake's HTTP response once it is over: its headers are
    about 1.4 KB of small objects that every open connection would keep for its whole life,
    and nothing reads them after the handshake. (The request stays: websockets reads
    ``request is None`` as "the request is still to come", and its parser's suspended
    generator holds the request anyway.)"""
    if ws.protocol.state is State.OPEN:
        ws.response = None


def release(ws: Connection) -> None:
    """Break the reference cycles a lost connection leaves, so that reference counting
    frees it (and its buffers) as soon as its handler lets go, not the cyclic collector.

    Two cycles outlive a connection: the
    transport holds a bound method of itself (asyncio's ``_read_ready_cb``), with its
    socket; and the sans-I/O protocol holds its parser, a generator whose frame holds the
    protocol, which after an unclean close also sits in ``parser_exc``'s traceback. Called
    once the transport is gone (``connection_lost``): nothing reads from either again, and
    the parser's exception keeps its message for ``ConnectionClosed.__cause__``."""
    transport = ws.transport
    if getattr(transport, "_read_ready_cb", None) is not None:
        transport._read_ready_cb = None  # type: ignore[attr-defined]
    protocol = ws.protocol
    protocol.parser.close()
    if protocol.parser_exc is not None:
        protocol.parser_exc.__traceback__ = None


def abort(ws: Connection) -> None:
    """Drop the connection at once (no close handshake, nothing more sent)."""
    ws.transport.abort()


def close_at_once(ws: Connection, code: int, reason: str) -> None:
    """Send the close frame with ``code`` and end the TCP connection after it, without
    waiting for the peer's close frame (the peer still reads the code: its bytes go before
    the FIN). For connections closed by a deadline, which come by the thousand in a flood:
    the handshake's second half (reading the peer's frame, its timeout) is work the server
    then does not do."""
    if ws.protocol.state is State.OPEN:
        ws.protocol.send_close(code, reason)
        ws.send_data()
    ws.transport.close()


def close_after_response(ws: Connection) -> None:
    """Close the connection once the HTTP response to its opening request is written
    (called from ``process_request``, whose response websockets writes before it next
    yields; ``transport.close`` sends what is buffered first). websockets itself only
    half-closes after a refusal and waits for the client, up to its handshake timeout."""
    asyncio.get_running_loop().call_soon(ws.transport.close)


def accept_in_batches(server: Server, queue: int) -> None:
    """Let the kernel queue up to ``queue`` connections for ``server``'s sockets, which were
    opened with a small backlog: asyncio accepts at most its ``backlog`` connections in one
    loop turn (``BaseSelectorEventLoop._accept_connection``) and passes the same number to
    ``listen()``. Listening again on a duplicate of the socket deepens the kernel's queue
    and keeps the small batch, so a flood of new connections is taken a few at a time
    between the frames of the connections already open, not a hundred at once."""
    for listening in server.sockets:
        with listening.dup() as duplicate:
            duplicate.listen(queue)


READ_ON_AFTER_S = 0.05  # a request in its handler this long (to twice) lets pings pass it


class ReadsOn(Protocol):
    """A connection that can read on past its slow request."""

    def read_on(self) -> None: ...


class Handling:
    """The sessions in the middle of a request, and the look that makes those still in the
    same one since the last look read on (:meth:`server.session.Session.read_on`). A
    request costs two dict operations; the look runs every ``READ_ON_AFTER_S`` over the
    requests in progress.
    """

    def __init__(self) -> None:
        self.now: dict[ReadsOn, int] = {}  # session -> the number of its request
        self._seen: dict[ReadsOn, int] = {}

    def look(self) -> None:
        seen, self._seen = self._seen, dict(self.now)
        for session, number in self._seen.items():
            if seen.get(session) == number:
                session.read_on()

    async def run(self) -> None:
        while True:
            await asyncio.sleep(READ_ON_AFTER_S)
            self.look()


class CannotListen(Exception):
    """The server could not listen on its address (the port is taken, the host is not
    this machine's, ...); the message says which and what to do."""


def listen_problem(host: str, port: int, exc: OSError) -> str:
    """One line for the operator about an ``OSError`` from binding ``host:port``."""
    if exc.errno == errno.EADDRINUSE:
        return (f"port {port} on {host} is already in use (another server?): stop it, or "
                "choose another port with --port")
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {host}: not an address of this machine (--host)"
    if exc.errno == errno.EACCES:
        return f"not allowed to listen on port {port} (ports below 1024 need privileges)"
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
