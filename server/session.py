"""One websocket connection: frames in, requests dispatched, replies and events out.

The protocol's :class:`~protocol.ServerSession` keeps the connection's phase (connected ->
greeted -> authenticated) and makes every frame; this adapter adds I/O, rate limits and the
dispatch of each request to its handler (:mod:`server.handlers`, one per message type,
derived from the messages' declarations).

Frames leave by one door, :meth:`Session.send_frame`: framed at once into the connection
(:mod:`server.wsio`), they go out with the others of the same event-loop turn in one write.
A client that stops reading and lets more than ``out_buffer_bytes`` pile up unread is
disconnected, so a slow reader cannot make the server's memory grow.

**Budgets.** A request is let in with one token of the connection's budget (and of its
account's) and charged, once handled, for what it made the server send: one token more
per ``token_bytes`` of its reply, and the bytes themselves to the connection's and the
address's egress budgets. While either egress budget is spent, a request that lists
(``LISTS``: the lobby, games, a game's record) is refused ``rate_limited``, so a client
that asks for more than it can be sent gets refusals, not a queue.

A connection's requests are handled one at a time, in the order they come, but for
``ping``: a request still in its handler after a moment (:class:`server.wsio.Handling` looks every
``READ_ON_AFTER_S``; a move waiting for a busy database) makes the session read on and
answer each ``ping`` read meanwhile at once; the other requests read meanwhile wait their
turn, in order (up to ``MAX_HELD`` of them; then nothing more is read until they are
handled).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import TYPE_CHECKING, Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

import protocol as p

from . import wsio
from .ratelimit import TokenBucket, address_key
from .rooms import GameRoom, Watched
from .storage import WriteFailed, token_digest

if TYPE_CHECKING:
    from .host import Host
    from .lobby import Member
    from .seam import Caller
    from .storage import PoolRating, User

log = logging.getLogger(__name__)

CLOSE_TOO_SLOW = 1008
MAX_RATE_PAUSE_S = 1.0  # the longest a rate-limited connection goes unread
MAX_BAD_FRAMES = 50  # protocol errors in a row before the connection is closed
FLUSH_TIMEOUT_S = 5.0  # how long a closing connection may take to send what is queued
MAX_HELD = 16  # requests read on past a slow one, waiting their turn (then none are read)


def close_reason(text: str) -> str:
    """``text`` cut to fit a close frame's reason (at most 123 bytes of UTF-8)."""
    return text.encode()[:120].decode(errors="ignore")


class Session:
    """The server side of one connection."""

    def __init__(self, ws: ServerConnection, app: Host) -> None:
        self.ws = ws
        self.app = app
        settings = app.settings
        self.proto = p.ServerSession(max_frame_bytes=settings.max_frame_bytes)
        self.user: User | None = None
        self.member: Member | None = None
        self.token: str | None = None
        self.token_digest: str | None = None  # of the token it logged in with (revocation)
        self.rooms: dict[str, Watched] = {}
        self.bucket = TokenBucket(settings.conn_rate, settings.conn_burst)
        self.egress = TokenBucket(settings.egress_rate, settings.egress_burst)
        self.sent_bytes = 0  # frames handed to the connection so far
        self.out_limit = settings.out_buffer_bytes
        self.closing = False
        self.queued = False  # frames wait in the Outbox
        self._closer: asyncio.Task[None] | None = None
        self._greeted = False  # said hello: pinged from then on (wsio.keep_alive)
        self.bad_frames = 0
        self.peer = app.admission.client(ws)  # behind a trusted proxy, the one it names
        self.address = address_key(self.peer)  # what per-address budgets count by
        self.requests = 0  # requests dispatched so far (Handling tells them apart)
        self._reader: asyncio.Task[None] | None = None  # reading on past a slow request
        self._reading = False  # the reader waits in recv() (and may be cancelled there)
        self._stop_reading = False  # the reader stops after the ping it is answering
        # read on, waiting their turn; made when first needed (an empty deque is 760 bytes
        # of every idle connection)
        self._held: deque[str | bytes] | None = None

    # -- I/O ------------------------------------------------------------------------------------
    async def run(self) -> None:
        self.app.deadlines.set(self, self.app.settings.hello_timeout_s, self._hello_deadline)
        try:
            recv = self.ws.recv  # not ``async for``: its generator is one more frame a message
            while True:
                if self._held:
                    frame = self._held.popleft()
                else:
                    frame = await recv()
                if self.closing:  # read on, unheeded, so the close handshake completes
                    continue
                await self.handle(frame)
                if self._reader is not None:
                    await self._stop_reading_on()
        except ConnectionClosed:
            pass
        finally:
            if self._reader is not None:
                await self._stop_reading_on()
            self._cancel_deadline()
            await self.detach()
            # Our close frame (with its code) goes before websockets closes with 1000 when
            # this handler returns; what was sent before it is already in the transport.
            if self._closer is not None:
                with contextlib.suppress(TimeoutError, ConnectionClosed):
                    async with asyncio.timeout(FLUSH_TIMEOUT_S):  # not wait_for: it can
                        await asyncio.shield(self._closer)  # lose the handler's cancel

    def send_frame(self, frame: bytes) -> None:
        """The one door out: send a frame (it leaves with the others of this loop turn, in
        order); skipped once the connection is closing, as websockets.broadcast does."""
        if self.closing or not wsio.frame_binary(self.ws, frame):
            return
        self.sent_bytes += len(frame)
        if not self.queued:
            self.queued = True
            self.app.outbox.add(self.flush)

    def flush(self) -> None:
        """Hand the frames framed since the last flush to the transport, in one write."""
        self.queued = False
        if wsio.flush(self.ws) > self.out_limit:
            self.close(CLOSE_TOO_SLOW, "too slow: too much unread output")

    def send(self, message: p.ServerMessage) -> None:
        self.send_frame(self.proto.send(message))

    def send_trusted(self, cls: type[p.Message], **fields: Any) -> None:
        """Send a reply the server vouches for, framed from its fields (``move_ack``)."""
        self.send_frame(self.proto.send_trusted(cls, **fields))

    def send_prepared(self, prepared: p.Prepared, request_id: int, **values: Any) -> None:
        """Send a reply packed once for many requests (the lobby's first page, a game's
        state), with this request's id."""
        self.send_frame(self.proto.send_prepared(prepared, request_id, **values))

    def close(self, code: int, reason: str) -> None:
        """Close after the frames already sent (their bytes are ahead in the transport)."""
        if self.closing:
            return
        self.closing = True
        if log.isEnabledFor(logging.INFO):
            log.info("closing connection", extra={"peer": self.peer, "code": code,
                                                  "why": reason})
        self._closer = self.app.tasks.spawn(self.ws.close(code, reason), name="tessera-close")

    def close_at_once(self, code: int, reason: str) -> None:
        """Close for a missed deadline: the close frame, then the TCP connection ended
        without waiting for the peer's answer (``wsio.close_at_once``)."""
        if self.closing:
            return
        self.closing = True
        if log.isEnabledFor(logging.INFO):  # a wave of them is closed by the deadlines
            log.info("closing connection", extra={"peer": self.peer, "code": code,
                                                  "why": reason})
        wsio.close_at_once(self.ws, code, reason)

    # -- reading on past a slow request ---------------------------------------------------------
    def read_on(self) -> None:
        """The request in progress is slow: read on meanwhile (Handling calls this)."""
        if self._reader is None and len(self._held or ()) < MAX_HELD and not self.closing:
            self._reader = asyncio.get_running_loop().create_task(self._read_on())

    async def _read_on(self) -> None:
        """Answer each ``ping`` read at once; keep the other frames for their turn (up to
        ``MAX_HELD``, then read no more)."""
        held = self._held = deque() if self._held is None else self._held
        with contextlib.suppress(ConnectionClosed):
            while not self._stop_reading and len(held) < MAX_HELD:
                self._reading = True
                try:
                    frame = await self.ws.recv()
                finally:
                    self._reading = False
                if self.closing:
                    continue
                if isinstance(frame, str) or p.peek_type(frame) != "ping":
                    held.append(frame)
                else:
                    await self.handle(frame)

    async def _stop_reading_on(self) -> None:
        """The slow request is answered: stop reading on (a ping being answered is answered
        first; recv() gives up no frame when cancelled)."""
        reader, self._reader = self._reader, None
        assert reader is not None
        if not reader.done():
            if self._reading:
                reader.cancel()
            else:
                self._stop_reading = True
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        self._stop_reading = False

    # -- deadlines ------------------------------------------------------------------------------
    def _hello_deadline(self) -> None:
        """No ``hello`` by the hello deadline: closed; else the authentication deadline runs
        (from when the connection opened)."""
        settings = self.app.settings
        if self.proto.phase is p.Phase.CONNECTED:
            self.close_at_once(p.CLOSE_TOO_SLOW_TO_START,
                               f"no hello within {settings.hello_timeout_s:g} s")
            return
        self.arm_auth_deadline(max(0.0, settings.auth_timeout_s - settings.hello_timeout_s))

    def arm_auth_deadline(self, after: float | None = None) -> None:
        """Check in ``after`` seconds (default: the authentication deadline) that this
        connection has logged in, or watches a game or the lobby (spectators need no
        login); close it if not."""
        if self.closing:
            self._cancel_deadline()
            return
        wait = self.app.settings.auth_timeout_s if after is None else after
        self.app.deadlines.set(self, wait, self._auth_deadline)

    def _auth_deadline(self) -> None:
        if self.proto.phase is p.Phase.AUTHENTICATED:
            return  # a logout arms it again
        if self.rooms or self in self.app.members.subscribers:
            self.arm_auth_deadline()  # a spectator: looked at again later
            return
        self.close_at_once(p.CLOSE_TOO_SLOW_TO_START,
                           f"not logged in within {self.app.settings.auth_timeout_s:g} s")

    def _cancel_deadline(self) -> None:
        self.app.deadlines.cancel(self)

    # -- dispatch -------------------------------------------------------------------------------
    async def handle(self, frame: str | bytes) -> None:
        # Every frame spends a token but a free one (declining a challenge you were sent);
        # a refusal waits for the decode so that it can carry the request's id: every
        # request gets exactly one reply.
        if isinstance(frame, str):
            await self.spend()
            self.reply_error(p.BadRequest("text frames are not accepted; send binary msgpack"))
            return
        try:
            request = self.proto.receive(frame)
        except p.ProtocolError as exc:
            await self.spend()
            self.bad_frames += 1
            self.reply_error(exc)
            if exc.close_code is not None and self.proto.phase is p.Phase.CONNECTED:
                # a bad or unsupported hello: the error, the close frame, the end (no
                # waiting for the peer's close, as for a missed deadline)
                self.close_at_once(exc.close_code, close_reason(exc.message))
            elif exc.close_code is not None:
                self.close(exc.close_code, close_reason(exc.message))
            elif self.bad_frames > MAX_BAD_FRAMES:
                self.close(p.CLOSE_POLICY_VIOLATION, "too many bad frames")
            return
        wait = 0.0 if await self.is_free(request) else await self.spend(request)
        if wait:
            self.reply_error(p.ProtocolError(
                "too many requests; slow down", code=p.ErrorCode.RATE_LIMITED,
                retry_after_ms=int(wait * 1000) + 1), request.id)
            # Read nothing more from this connection until its budget has a token again:
            # what it sends meanwhile waits in websockets' queue and then the socket (TCP
            # pushes back), so a flood costs the server one refusal per wait, not one per
            # frame (issue 16: 6,000 refusals a second took the loop from everyone else).
            await self.pause(wait)
            return
        self.bad_frames = 0
        before = self.sent_bytes
        try:
            await self._answer(request)
        finally:
            self.charge(self.sent_bytes - before)
        if not self._greeted and self.proto.phase is not p.Phase.CONNECTED:
            # pinged once it said hello: a wave of connections that never do costs no
            # ping task each (they are closed by the hello deadline, before a first ping)
            self._greeted = True
            settings = self.app.settings
            wsio.keep_alive(self.ws, settings.ping_interval, settings.ping_timeout)

    async def _answer(self, request: p.ClientMessage) -> None:
        """Run the request's handler and send its reply, or the error it ended in."""
        try:
            reply = await self._dispatch(request)
        except p.ProtocolError as exc:
            self.reply_error(exc, request.id)
            if exc.close_code is not None:
                self.close(exc.close_code, close_reason(exc.message))
            elif exc.code == p.ErrorCode.RATE_LIMITED and exc.retry_after_ms:
                # refused by a limit of the address or the password queue: the same pause,
                # with nothing read meanwhile (a slow login may have made it read on)
                if self._reader is not None and self._reader is not asyncio.current_task():
                    await self._stop_reading_on()
                await self.pause(exc.retry_after_ms / 1000)
            return
        except WriteFailed as exc:  # known and common under load: one line, no traceback
            log.warning("request failed: %s", exc, extra={"peer": self.peer,
                                                         "request": type(request).__name__})
            self.reply_error(p.ProtocolError("the server failed to handle this request",
                                             code=p.ErrorCode.INTERNAL_ERROR), request.id)
            return
        except Exception:
            log.exception("request failed", extra={"peer": self.peer,
                                                   "request": type(request).__name__})
            self.reply_error(p.ProtocolError("the server failed to handle this request",
                                             code=p.ErrorCode.INTERNAL_ERROR), request.id)
            return
        if reply is not None:
            self.send(reply)

    async def _dispatch(self, request: p.ClientMessage) -> p.ServerMessage | None:
        """Run the request's handler; one in progress on a slow path is watched
        (:class:`~server.wsio.Handling`), unless this is a ping read on past another."""
        if self._reader is not None:
            return await self.app.handlers[type(request)](self, request)
        handling = self.app.handling.now
        self.requests += 1
        number = handling[self] = self.requests
        try:
            return await self.app.handlers[type(request)](self, request)
        finally:
            if handling.get(self) == number:
                del handling[self]

    async def pause(self, wait_s: float) -> None:
        """Read nothing from this connection for ``wait_s`` (at most ``MAX_RATE_PAUSE_S``),
        or until it is gone: a flooder that hangs up after its refusal must not leave its
        session, connection and buffers held for the rest of the pause (a guest flood from
        one address kept some 500 closed connections so, 8 MiB of heap)."""
        await wsio.until_lost(self.ws, min(wait_s, MAX_RATE_PAUSE_S))

    async def spend(self, request: p.ClientMessage | None = None) -> float:
        """Take a request's token from the connection's budget and the account's (over
        every node of a cluster), and for a request that lists, check that neither the
        connection's egress budget nor its address's is spent: 0.0, or the seconds to
        wait when one is."""
        wait = self.bucket.take()
        if not wait and request is not None and type(request).LISTS:
            wait = self.egress_wait()
        if not wait and self.user is not None:
            wait = await self.app.account_requests.take(self.user.id)
        return wait

    def egress_wait(self) -> float:
        """Seconds until this connection and its address may be sent more (0.0: now)."""
        wait = self.egress.wait()
        by_address = self.app.address_egress
        if by_address is not None:
            wait = max(wait, by_address.wait(self.address))
        return wait

    def charge(self, sent: int) -> None:
        """A request is handled and made the server send ``sent`` bytes here: one token
        more per ``token_bytes``, and the bytes to the egress budgets."""
        extra = sent // self.app.settings.token_bytes
        if extra:
            self.bucket.charge(extra)
        self.egress.charge(sent)
        if self.app.address_egress is not None:
            self.app.address_egress.charge(self.address, sent)

    async def is_free(self, request: p.ClientMessage) -> bool:
        """Declining a challenge you were sent costs nothing: how many come is up to the
        challengers (whose budgets they spend), so a flood of them must not take the
        target's budget for its moves. A decline of anything else is charged."""
        return isinstance(request, p.DeclineChallenge) and await self.app.lobby.is_pending_for(
            request.challenge_id, self.member)

    def reply_error(self, exc: p.ProtocolError, request_id: int | None = None) -> None:
        self.app.metrics.errors.labels(code=str(exc.code)).inc()
        self.send(exc.to_reply(request_id))

    # -- the connection's user and games ----------------------------------------------------
    def login(self, user: User, token: str, ratings: list[PoolRating] | None = None) -> None:
        """This connection is now logged in as ``user`` (with ``token``; ``ratings``:
        theirs as stored now)."""
        self.user, self.token, self.token_digest = user, token, token_digest(token)
        self.member = self.app.members.join(user.id, user.name, user.kind, self, ratings)

    def me(self) -> Member:
        """The logged-in member (handlers of authenticated requests only)."""
        assert self.member is not None
        return self.member

    def uid(self) -> int:
        assert self.user is not None
        return self.user.id

    def check_can_watch(self, room: Watched) -> None:
        """``conflict`` if attaching to ``room`` as a spectator would make this connection
        watch more than ``max_watched_per_connection`` games (its own games do not count)."""
        if room.game_id in self.rooms or self._seat_in(room) is not None:
            return
        cap = self.app.settings.max_watched_per_connection
        watched = sum(self._seat_in(r) is None for r in self.rooms.values())
        if watched >= cap:
            raise p.ProtocolError(f"you watch {cap} games already, the most allowed: "
                                  "unwatch one first", code=p.ErrorCode.CONFLICT,
                                  game_id=room.game_id)

    def _seat_in(self, room: Watched) -> int | None:
        return room.seat_of(self.user.id) if self.user else None

    async def joined_game(self, room: GameRoom) -> None:
        """Called when a game starts with this session's user in it."""
        seat = room.seat_of(self.uid())
        assert seat is not None
        self.rooms[room.game_id] = room
        await room.player_connected(seat, self)

    async def attach(self, room: GameRoom, *, tell_self: bool = True) -> None:
        """Receive a room's events from now on: as its player, or as a spectator."""
        self.rooms[room.game_id] = room
        seat = room.seat_of(self.user.id) if self.user else None
        if seat is None:
            room.subscribe(self)
        else:
            await room.player_connected(seat, self, tell_self=tell_self)

    async def detach(self) -> None:
        """Leave the lobby and every room (on logout or disconnect)."""
        rooms = list(self.rooms.values())
        user = self.user
        self.rooms.clear()
        self.app.members.subscribers.discard(self)
        if self.member is not None:
            member, self.member = self.member, None
            if self.app.members.leave(member, self):
                try:
                    await self.app.lobby.left(member)
                except Exception as exc:  # Redis away: the node's presence goes with it
                    log.warning("leaving the lobby: %s", exc)
        for room in rooms:
            seat = room.seat_of(user.id) if user else None
            if seat is not None:
                await room.player_disconnected(seat, self)
            else:
                room.unsubscribe(self)


class Forwarded:
    """A request another process forwarded here, as its handler sees a connection: the
    user it came from, and the frames its handler sends (taken back to that process, which
    gives them to its client). It runs through the same handler table as a connection's
    own requests (``Placement.forward``)."""

    def __init__(self, app: Host, user: Caller) -> None:
        self.app = app
        self.user: Caller | None = user
        self.member = None
        self.peer = "forwarded"
        self.rooms: dict[str, Watched] = {}
        self.frames: list[bytes] = []

    def uid(self) -> int:
        assert self.user is not None
        return self.user.id

    def send(self, message: p.ServerMessage) -> None:
        self.frames.append(p.encode(message))

    def send_trusted(self, cls: type[p.Message], **fields: Any) -> None:
        self.frames.append(p.encode_trusted(cls, **fields))

    def send_frame(self, frame: bytes) -> None:
        self.frames.append(frame)

    async def run(self, message: p.ClientMessage) -> list[bytes]:
        """Handle ``message``: the frames its handler sent (a refusal raises)."""
        reply = await self.app.handlers[type(message)](self, message)
        if reply is not None:
            self.send(reply)
        return self.frames
