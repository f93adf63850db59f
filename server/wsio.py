"""Every touch of websockets' internals, in one place: frames out without a task.

websockets' asyncio connection sends each frame with an awaited ``send()`` and a write per
frame. The server instead frames a message at once into the connection's sans-I/O protocol
(``ws.protocol.send_binary``) and, at the end of the event loop's turn, hands everything
framed for that connection to its transport in ONE write (:class:`Outbox`): a move's
``moved`` and ``move_ack`` reach the mover in one system call, a reply costs no task switch,
and an idle connection owns no writer task. :func:`flush` is a copy of websockets'
``Connection.send_data`` that joins the bytes first.

The caps on connections (:mod:`server.admission`) need two more hooks, also here:
:func:`on_connection_lost` (``Connection.connection_lost_waiter``) and
:func:`reporting_connection` (``serve``'s ``create_connection`` and
``ServerConnection.connection_made``). The connections it makes also let go of themselves
once closed (:func:`release`), so that the cyclic garbage collector is not needed to free
them.

This relies on websockets 17's ``Connection.protocol`` (``send_binary``, ``data_to_send``,
``state``, ``parser``, ``parser_exc``, ``handshake_exc``), ``Connection.transport``,
``Connection.send_data``, ``Connection.connection_lost`` and the hooks above, and on
asyncio's socket transport before Python 3.12 (``_read_ready_cb``);
tests/server/test_wsio.py is pinned to that version and checks each of them, so an
upgrade that moves one fails loudly there rather than quietly here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from websockets.asyncio.connection import Connection
from websockets.asyncio.server import ServerConnection
from websockets.protocol import State

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


def on_connection_lost(ws: Connection, callback: Callable[[], None]) -> None:
    """Call ``callback`` once the connection's transport is gone, whatever ended it (the
    handshake failed or timed out, the handler returned, the peer vanished): websockets'
    ``Connection.connection_lost_waiter`` is resolved exactly once, in ``connection_lost``."""
    waiter: asyncio.Future[None] = ws.connection_lost_waiter
    if waiter.done():
        callback()
        return
    waiter.add_done_callback(lambda _: callback())


def _drop_tracebacks(exc: BaseException | None, depth: int = 8) -> None:
    """Drop the tracebacks of ``exc`` and of the exceptions it was raised from."""
    while exc is not None and depth > 0:
        exc.__traceback__ = None
        exc = exc.__cause__ or exc.__context__
        depth -= 1


async def until_lost(ws: Connection, timeout_s: float) -> None:
    """Wait ``timeout_s``, or less if the connection's transport goes meanwhile."""
    waiter: asyncio.Future[None] = ws.connection_lost_waiter
    if not waiter.done():
        await asyncio.wait((waiter,), timeout=timeout_s)


def reporting_connection(accepted: Callable[[ServerConnection], None]
                         ) -> type[ServerConnection]:
    """A ``ServerConnection`` class (websockets.serve's ``create_connection``) that calls
    ``accepted`` with each connection as soon as its socket is accepted, before it has sent
    anything."""

    class Reported(ServerConnection):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            accepted(self)

        def connection_lost(self, exc: Exception | None) -> None:
            super().connection_lost(exc)
            release(self)

    return Reported


def release(ws: Connection) -> None:
    """Break the reference cycles a closed connection is left with, so that it is freed as
    soon as the server lets go of it rather than by the cyclic garbage collector.

    Two parts of every connection refer to themselves once it is closed: websockets'
    sans-I/O protocol keeps its parser, a generator suspended at its last ``yield`` whose
    frame holds the protocol; and before Python 3.12 asyncio's socket transport keeps a
    bound method of its own (``_read_ready_cb``; 3.12 clears it on close, CPython
    gh-100348). Each closed connection, with its buffers, then waited for a collection, and
    the server collects its young objects only every 50,000 allocations
    (``server.app.tune_gc``): after a flood of 6,500 short connections (the guest flood
    of ``tessera siege``) 18 MiB of them were still held 5 s later, and the heap they had
    grown stayed (docs/RELIABILITY.md, section 8). A connection that ended abruptly (the
    peer vanished, a bad frame, a failed handshake) also keeps the exception that ended
    its parser, whose traceback holds the parser's frame, which holds the protocol: the
    tracebacks go (the exceptions stay, for ``ConnectionClosed``'s cause). Called from
    ``connection_lost``, when websockets has fed the parser its end of stream
    (``receive_eof``): it is done."""
    protocol = ws.protocol
    protocol.parser.close()
    for exc in (protocol.parser_exc, protocol.handshake_exc):
        _drop_tracebacks(exc)
    transport = ws.transport
    if getattr(transport, "_read_ready_cb", None) is not None:
        transport._read_ready_cb = None  # type: ignore[attr-defined]


def abort(ws: Connection) -> None:
    """Drop the connection at once (no close handshake, nothing more sent)."""
    ws.transport.abort()


def close_after_response(ws: Connection) -> None:
    """Close the connection once the HTTP response to its opening request is written
    (called from ``process_request``, whose response websockets writes before it next
    yields; ``transport.close`` sends what is buffered first). websockets itself only
    half-closes after a refusal and waits for the client, up to its handshake timeout."""
    asyncio.get_running_loop().call_soon(ws.transport.close)
