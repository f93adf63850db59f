"""An asyncio client connection: requests with replies, and a stream of events.

Every client (text client, bot SDK, arena, benchmarks) uses this one adapter around the
sans-I/O protocol package::

    async with await Connection.open("ws://127.0.0.1:8765/ws") as conn:
        authed = await conn.call(protocol.Guest)
        await conn.call(protocol.Seek, game="hadron", options={}, clock=protocol.Unlimited())
        event = await conn.next_event()

``call`` raises :class:`ServerError` when the server answers with an ``error``.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Any, TypeVar

import websockets
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

import protocol as p

R = TypeVar("R")

DEFAULT_URL = "ws://127.0.0.1:8765/ws"


class ServerError(Exception):
    """The server refused a request: ``code`` is the stable wire error code."""

    def __init__(self, reply: p.ErrorReply) -> None:
        super().__init__(f"{reply.code}: {reply.message}")
        self.code = reply.code
        self.message = reply.message
        self.retry_after_ms = reply.retry_after_ms
        self.game_id = reply.game_id


class Disconnected(Exception):
    """The connection closed before the reply came."""


class Connection:
    """One websocket connection speaking protocol version 1."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.pending = p.PendingRequests()
        self._waiting: dict[int, asyncio.Future[p.ServerMessage]] = {}
        self.events: asyncio.Queue[p.ServerMessage | None] = asyncio.Queue()
        self.welcome: p.Welcome | None = None
        self.closed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, url: str = DEFAULT_URL, *, client: str = "tessera-client",
                   open_timeout: float = 10.0, origin: str | None = None,
                   local_addr: tuple[str, int] | None = None) -> Connection:
        """Connect and say hello; the server's welcome is kept in ``welcome``.

        ``local_addr`` binds the client's end (``tessera siege`` speaks from several
        loopback addresses, as several hosts would).
        """
        extra: dict[str, Any] = {} if local_addr is None else {"local_addr": local_addr}
        ws = await websockets.connect(url, max_size=p.MAX_SERVER_FRAME_BYTES, compression=None,
                                      open_timeout=open_timeout,
                                      origin=origin, **extra)  # type: ignore[arg-type]
        conn = cls(ws)
        try:
            welcome = await conn.call(p.Hello, version=p.PROTOCOL_VERSION, client=client)
        except BaseException:
            await conn.close()
            raise
        assert isinstance(welcome, p.Welcome)
        conn.welcome = welcome
        return conn

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        await self.ws.close()
        with contextlib.suppress(BaseException):
            await self._reader

    async def _read(self) -> None:
        try:
            async for frame in self.ws:
                if isinstance(frame, str):
                    continue
                message = p.decode_server(frame)
                reply_id = getattr(message, "id", None)
                if reply_id is not None and reply_id in self._waiting:
                    self.pending.resolve(message)  # type: ignore[arg-type]
                    future = self._waiting.pop(reply_id)
                    if not future.done():
                        future.set_result(message)
                else:
                    self.events.put_nowait(message)
        except (ConnectionClosed, p.ProtocolError):
            pass
        finally:
            self.closed.set()
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(Disconnected("connection closed"))
            self._waiting.clear()
            self.events.put_nowait(None)

    async def send(self, message: p.ClientMessage) -> asyncio.Future[p.ServerMessage]:
        """Send a request built by the caller; return the future of its reply."""
        future: asyncio.Future[p.ServerMessage] = asyncio.get_running_loop().create_future()
        if self.closed.is_set():
            raise Disconnected("connection closed")
        self.pending.add(message)
        self._waiting[message.id] = future
        try:
            await self.ws.send(p.encode(message))
        except BaseException as exc:  # closed, or cancelled mid-send: no reply will be read
            self._waiting.pop(message.id, None)
            self.pending.resolve(p.Ok(id=message.id))
            future.cancel()
            if isinstance(exc, ConnectionClosed):
                raise Disconnected(str(exc)) from None
            raise
        return future

    async def call(self, kind: type[Any], **fields: Any) -> p.ServerMessage:
        """Send ``kind(id=<fresh>, **fields)`` and return its reply (ServerError if refused)."""
        request = kind(id=self.pending.next_id(), **fields)
        reply = await (await self.send(request))
        if isinstance(reply, p.ErrorReply):
            raise ServerError(reply)
        return reply

    async def next_event(self, timeout: float | None = None) -> p.ServerMessage:
        """The next event (or unrequested message); Disconnected once the connection ends."""
        event = await asyncio.wait_for(self.events.get(), timeout)
        if event is None:
            self.events.put_nowait(None)
            raise Disconnected("connection closed")
        return event

    async def wait_for(self, kind: type[R], timeout: float | None = 10.0,
                       **match: Any) -> R:
        """Skip events until one of type ``kind`` whose fields equal ``match`` arrives."""
        async def find() -> R:
            while True:
                event = await self.next_event()
                if isinstance(event, kind) and all(
                        getattr(event, k) == v for k, v in match.items()):
                    return event

        return await asyncio.wait_for(find(), timeout)
