"""One websocket connection: frames in, requests dispatched, replies and events out.

The protocol's :class:`~protocol.ServerSession` keeps the connection's phase (connected ->
greeted -> authenticated); this adapter adds I/O and rate limits.

Frames go out without a task: ``send_frame`` frames the message at once (websockets'
sans-I/O protocol) and the connection joins the :class:`Outbox`, which at the end of the
event loop's turn hands each connection's frames of that turn to its transport in one
write. A move's ``moved`` and ``move_ack`` thus reach the mover in one system call, a reply
or an event costs no task switch, and an idle connection owns no writer task and no queue.
What the peer has not read yet waits in the transport's buffer; a client that stops reading
and lets more than ``out_buffer_bytes`` pile up there is disconnected, so a slow reader
cannot make the server's memory grow.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State as WsState

import protocol as p

from . import positions
from .lobby import Member, Offer
from .ratelimit import TokenBucket
from .rooms import GameRoom, Seat, refuse
from .storage import token_digest

if TYPE_CHECKING:
    from .app import GameServer
    from .storage import User

log = logging.getLogger(__name__)

CLOSE_TOO_SLOW = 1008
MAX_BAD_FRAMES = 50  # protocol errors in a row before the connection is closed
FLUSH_TIMEOUT_S = 5.0  # how long a closing connection may take to send what is queued

Handler = Callable[["Session", Any], Awaitable[p.ServerMessage | None]]


class Outbox:
    """Connections with frames waiting, written once per event-loop turn.

    Every frame sent during a turn of the loop is framed at once, in order, into its
    connection's websockets protocol; one callback at the end of the turn gives each
    connection's bytes to its transport in a single write. Anything websockets itself sends
    meanwhile (a pong, a close frame) flushes the frames ahead of it, so order is kept.
    """

    __slots__ = ("_loop", "_waiting")

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: list[Session] = []

    def add(self, session: Session) -> None:
        if not self._waiting:
            if self._loop is None:
                self._loop = asyncio.get_running_loop()
            self._loop.call_soon(self.flush)
        self._waiting.append(session)

    def flush(self) -> None:
        waiting, self._waiting = self._waiting, []
        for session in waiting:
            session.flush()


class Session:
    """The server side of one connection."""

    def __init__(self, ws: ServerConnection, server: GameServer) -> None:
        self.ws = ws
        self.server = server
        settings = server.settings
        self.proto = p.ServerSession(max_frame_bytes=settings.max_frame_bytes)
        self.user: User | None = None
        self.member: Member | None = None
        self.token: str | None = None
        self.token_digest: str | None = None  # of the token it logged in with (revocation)
        self.rooms: dict[str, GameRoom] = {}
        self.bucket = TokenBucket(settings.conn_rate, settings.conn_burst)
        self.out_limit = settings.out_buffer_bytes
        self.closing = False
        self.queued = False  # frames wait in the Outbox
        self._closer: asyncio.Task[None] | None = None
        self.bad_frames = 0
        self.peer = str(ws.remote_address[0]) if ws.remote_address else "?"

    # -- I/O ------------------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            recv = self.ws.recv  # not ``async for``: its generator is one more frame a message
            while True:
                frame = await recv()
                if self.closing:  # read on, unheeded, so the close handshake completes
                    continue
                await self.handle(frame)
        except ConnectionClosed:
            pass
        finally:
            await self.detach()
            # Our close frame (with its code) goes before websockets closes with 1000 when
            # this handler returns; what was sent before it is already in the transport.
            if self._closer is not None:
                with contextlib.suppress(TimeoutError, ConnectionClosed):
                    await asyncio.wait_for(asyncio.shield(self._closer), FLUSH_TIMEOUT_S)

    def send_frame(self, frame: bytes) -> None:
        """Send a frame (it leaves with the others of this loop turn, in order); a client
        that lets too much pile up unread is disconnected."""
        if self.closing or self.ws.protocol.state is not WsState.OPEN:
            return  # not open any more: skipped, as websockets.broadcast does
        self.ws.protocol.send_binary(frame)
        if not self.queued:
            self.queued = True
            self.server.outbox.add(self)

    def flush(self) -> None:
        """Hand the frames framed since the last flush to the transport, in one write."""
        self.queued = False
        ws = self.ws
        writes = ws.protocol.data_to_send()
        if not writes:
            return  # websockets sent them already, ahead of a frame of its own
        transport = ws.transport
        if transport.is_closing():
            return
        if not all(writes):  # an end of stream follows: written as websockets does
            for data in writes:
                if data:
                    transport.write(data)
                elif transport.can_write_eof():
                    transport.write_eof()
                else:
                    transport.close()
            return
        transport.write(writes[0] if len(writes) == 1 else b"".join(writes))
        if transport.get_write_buffer_size() > self.out_limit:
            self.close(CLOSE_TOO_SLOW, "too slow: too much unread output")

    def send(self, message: p.ServerMessage) -> None:
        self.send_frame(self.proto.send(message))

    def close(self, code: int, reason: str) -> None:
        """Close after the frames already sent (their bytes are ahead in the transport)."""
        if self.closing:
            return
        self.closing = True
        log.info("closing connection", extra={"peer": self.peer, "code": code, "why": reason})
        self._closer = asyncio.get_running_loop().create_task(self.ws.close(code, reason))
        self.server.background(self._closer)

    # -- dispatch -------------------------------------------------------------------------------
    async def handle(self, frame: str | bytes) -> None:
        # Every frame spends a token, but the refusal waits for the decode so that it can
        # carry the request's id: every request gets exactly one reply.
        wait = self.bucket.take()
        account = self.server.account_bucket(self.user.id) if self.user else None
        if not wait and account is not None:
            wait = account.take()
        if isinstance(frame, str):
            self.reply_error(p.BadRequest("text frames are not accepted; send binary msgpack"))
            return
        try:
            request = self.proto.receive(frame)
        except p.ProtocolError as exc:
            self.bad_frames += 1
            self.reply_error(exc)
            if exc.close_code is not None:
                self.close(exc.close_code, exc.message[:100])
            elif self.bad_frames > MAX_BAD_FRAMES:
                self.close(p.CLOSE_POLICY_VIOLATION, "too many bad frames")
            return
        if wait:
            self.reply_error(p.ProtocolError(
                "too many requests; slow down", code=p.ErrorCode.RATE_LIMITED,
                retry_after_ms=int(wait * 1000) + 1), request.id)
            return
        self.bad_frames = 0
        try:
            reply = await HANDLERS[type(request)](self, request)
        except p.ProtocolError as exc:
            self.reply_error(exc, request.id)
            if exc.close_code is not None:
                self.close(exc.close_code, exc.message[:100])
            return
        except Exception:
            log.exception("request failed", extra={"peer": self.peer,
                                                   "request": type(request).__name__})
            self.reply_error(p.ProtocolError("the server failed to handle this request",
                                             code=p.ErrorCode.INTERNAL_ERROR), request.id)
            return
        if reply is not None:
            self.send(reply)

    def reply_error(self, exc: p.ProtocolError, request_id: int | None = None) -> None:
        self.server.metrics.errors.labels(code=str(exc.code)).inc()
        self.send(exc.to_reply(request_id))

    # -- handshake and accounts ----------------------------------------------------------------
    async def on_hello(self, m: p.Hello) -> p.ServerMessage:
        if m.version not in p.SUPPORTED_VERSIONS:
            exc = p.UnsupportedVersion(
                f"protocol version {m.version} is not supported; this server speaks "
                f"{', '.join(map(str, p.SUPPORTED_VERSIONS))}", request_id=m.id)
            raise exc
        s = self.server.settings
        return p.Welcome(id=m.id, version=p.PROTOCOL_VERSION, server=s.server_name,
                         limits=p.Limits(max_frame_bytes=s.max_frame_bytes,
                                         rate_per_s=int(s.conn_rate),
                                         burst=int(s.conn_burst),
                                         max_open_seeks=self.server.lobby.max_open_seeks),
                         games=tuple(p.describe_games()))

    async def on_register(self, m: p.Register) -> p.ServerMessage:
        user, token = await self.server.accounts.register(m.username, m.password)
        return self._authed(m.id, user, token)

    async def on_login(self, m: p.Login) -> p.ServerMessage:
        user, token = await self.server.accounts.login(m.username, m.password)
        return self._authed(m.id, user, token)

    async def on_guest(self, m: p.Guest) -> p.ServerMessage:
        user, token = await self.server.accounts.guest()
        return self._authed(m.id, user, token)

    async def on_auth_token(self, m: p.AuthToken) -> p.ServerMessage:
        user = await self.server.accounts.by_token(m.token)
        return self._authed(m.id, user, m.token)

    def _authed(self, request_id: int, user: User, token: str) -> p.ServerMessage:
        self.user, self.token, self.token_digest = user, token, token_digest(token)
        self.member = self.server.lobby.join(user.id, user.name, user.kind, self)
        active = self.server.active_games_of(user.id)  # attached by resume, not here
        log.info("authenticated", extra={"peer": self.peer, "user": user.name,
                                         "kind": user.kind})
        return p.Authed(id=request_id, user=p.User(name=user.name, kind=user.kind),
                        session_token=token,
                        active_games=tuple(r.game_id for r in active))

    async def on_logout(self, m: p.Logout) -> p.ServerMessage:
        self.token_digest = None  # first: the revocation must not close this connection
        if self.token is not None:
            await self.server.accounts.end_session(self.token)
        await self.detach()
        self.user = self.member = self.token = None
        return p.Ok(id=m.id)

    async def detach(self) -> None:
        """Leave the lobby and every room (on logout or disconnect)."""
        rooms = list(self.rooms.values())
        user = self.user
        self.rooms.clear()
        self.server.lobby.subscribers.discard(self)
        if self.member is not None:
            self.server.lobby.leave(self.member, self)
            self.member = None
        for room in rooms:
            seat = room.seat_of(user.id) if user else None
            if seat is not None:
                await room.player_disconnected(seat, self)
            else:
                room.unsubscribe(self)

    async def on_ping(self, m: p.Ping) -> p.ServerMessage:
        return p.Pong(id=m.id)

    # -- lobby ----------------------------------------------------------------------------------
    async def on_lobby_subscribe(self, m: p.LobbySubscribe) -> p.ServerMessage:
        lobby = self.server.lobby
        lobby.subscribers.add(self)
        return p.Lobby(id=m.id, seeks=lobby.open_seeks(),
                       players=tuple(mem.wire() for mem in lobby.members.values()))

    async def on_lobby_unsubscribe(self, m: p.LobbyUnsubscribe) -> p.ServerMessage:
        self.server.lobby.subscribers.discard(self)
        return p.Ok(id=m.id)

    def _me(self) -> Member:
        assert self.member is not None
        return self.member

    async def on_seek(self, m: p.Seek) -> p.ServerMessage | None:
        offer = Offer(m.game, dict(m.options), m.clock)
        seek_id, partner = self.server.lobby.add_seek(self._me(), offer)
        if partner is not None:  # events before replies: game_started, then seek_created
            seats = [partner.owner, self._me()]
            secrets.SystemRandom().shuffle(seats)
            await self.server.start_game(offer, (seats[0], seats[1]))
        return p.SeekCreated(id=m.id, seek_id=seek_id)

    async def on_cancel_seek(self, m: p.CancelSeek) -> p.ServerMessage:
        self.server.lobby.cancel_seek(m.seek_id, self._me())
        return p.Ok(id=m.id)

    async def on_accept_seek(self, m: p.AcceptSeek) -> p.ServerMessage | None:
        lobby = self.server.lobby
        entry = lobby.take_seek(m.seek_id, self._me())
        seats = [entry.owner, self._me()]
        secrets.SystemRandom().shuffle(seats)
        try:  # events before replies: game_started, seek_removed, then ok
            await self.server.start_game(entry.offer, (seats[0], seats[1]))
        finally:
            lobby.seek_taken(entry.seek_id)
        return p.Ok(id=m.id)

    async def on_challenge(self, m: p.Challenge) -> p.ServerMessage:
        lobby = self.server.lobby
        target = lobby.by_name(m.to)
        if target is None:
            raise p.ProtocolError(f"{m.to} is not online", code=p.ErrorCode.NOT_FOUND)
        entry = lobby.add_challenge(self._me(), target, Offer(m.game, dict(m.options), m.clock),
                                    m.color)
        target.send(p.encode(p.ChallengeReceived(
            challenge_id=entry.challenge_id, from_=self._me().wire(), game=m.game,
            options=dict(m.options), clock=m.clock, color=m.color)))
        return p.ChallengeCreated(id=m.id, challenge_id=entry.challenge_id)

    async def on_accept_challenge(self, m: p.AcceptChallenge) -> p.ServerMessage | None:
        lobby = self.server.lobby
        entry = lobby.pending(m.challenge_id, self._me(), as_target=True)
        lobby.take_challenge(entry)
        seats = [entry.challenger, entry.target]
        if entry.color == "random":
            secrets.SystemRandom().shuffle(seats)
        elif entry.color == 1:
            seats.reverse()
        try:  # events before replies: game_started, challenge_ended, then ok
            await self.server.start_game(entry.offer, (seats[0], seats[1]))
        except BaseException:
            lobby.tell_challenge_ended(entry, "cancelled")
            raise
        lobby.tell_challenge_ended(entry, "accepted")
        return p.Ok(id=m.id)

    async def on_decline_challenge(self, m: p.DeclineChallenge) -> p.ServerMessage:
        lobby = self.server.lobby
        lobby.end_challenge(lobby.pending(m.challenge_id, self._me(), as_target=True),
                            "declined")
        return p.Ok(id=m.id)

    async def on_cancel_challenge(self, m: p.CancelChallenge) -> p.ServerMessage:
        lobby = self.server.lobby
        lobby.end_challenge(lobby.pending(m.challenge_id, self._me(), as_target=False),
                            "cancelled")
        return p.Ok(id=m.id)

    async def joined_game(self, room: GameRoom) -> None:
        """Called by the server when a game starts with this session's user in it."""
        assert self.user is not None
        seat = room.seat_of(self.user.id)
        assert seat is not None
        self.rooms[room.game_id] = room
        await room.player_connected(seat, self)

    # -- play -----------------------------------------------------------------------------------
    def _room(self, game_id: str) -> GameRoom:
        room = self.server.rooms.get(game_id)
        if room is None:
            raise refuse(p.ErrorCode.NOT_FOUND, f"no game {game_id} in progress", game_id)
        return room

    def _uid(self) -> int:
        assert self.user is not None
        return self.user.id

    async def on_move(self, m: p.Move) -> None:
        seq = await (await self._finished_or_live(m.game_id)).play(self._uid(), m)
        # move_ack moves no session phase: framed at once, without the message object
        self.send_frame(p.encode_trusted(p.MoveAck, id=m.id, game_id=m.game_id, ply=m.ply,
                                         seq=seq))

    async def on_resign(self, m: p.Resign) -> p.ServerMessage:
        await (await self._finished_or_live(m.game_id)).resign(self._uid())
        return p.Ok(id=m.id)

    async def on_abort(self, m: p.Abort) -> p.ServerMessage:
        await (await self._finished_or_live(m.game_id)).abort(self._uid())
        return p.Ok(id=m.id)

    async def on_claim_win(self, m: p.ClaimWin) -> p.ServerMessage:
        await (await self._finished_or_live(m.game_id)).claim_win(self._uid())
        return p.Ok(id=m.id)

    async def _finished_or_live(self, game_id: str) -> GameRoom:
        room = self.server.rooms.get(game_id) or await self.server.finished_room(game_id)
        if room is None:
            raise refuse(p.ErrorCode.NOT_FOUND, f"no game {game_id}", game_id)
        return room

    async def on_chat(self, m: p.Chat) -> p.ServerMessage:
        assert self.user is not None
        wait = self.server.account_bucket(self.user.id, "chat").take()
        if wait:
            raise p.ProtocolError("chat: slow down", code=p.ErrorCode.RATE_LIMITED,
                                  retry_after_ms=int(wait * 1000) + 1, game_id=m.game_id)
        assert self.user is not None
        await self._room(m.game_id).chat(Seat(self.user.id, self.user.name, self.user.kind),
                                          m.text)
        return p.Ok(id=m.id)

    # -- watching, resuming, history ------------------------------------------------------------
    async def on_watch(self, m: p.Watch) -> p.ServerMessage:
        room = self.server.rooms.get(m.game_id)
        if room is not None:
            async with room.lock:
                room.subscribe(self)
                self.rooms[room.game_id] = room
                return p.GameState(id=m.id, game=room.snapshot())
        return p.GameState(id=m.id, game=await self.server.stored_snapshot(m.game_id))

    async def on_unwatch(self, m: p.Unwatch) -> p.ServerMessage:
        room = self.rooms.get(m.game_id)
        if room is not None and (self.user is None or room.seat_of(self.user.id) is None):
            room.unsubscribe(self)
            del self.rooms[m.game_id]
        return p.Ok(id=m.id)

    async def on_resume(self, m: p.Resume) -> p.ServerMessage:
        room = self.server.rooms.get(m.game_id)
        if room is None:
            # finished (or unknown): the stored record is the whole truth
            return p.GameState(id=m.id, game=await self.server.stored_snapshot(m.game_id))
        async with room.lock:
            seat = room.seat_of(self.user.id) if self.user else None
            attach = m.game_id not in self.rooms
            self.rooms[m.game_id] = room
            frames = room.events_since(m.since_seq) if m.since_seq else None
            if frames is None:  # the whole game, opponent_back included
                if attach:
                    await self._attach(room, seat, tell_self=False)
                return p.GameState(id=m.id, game=room.snapshot())
            for frame in frames:  # the missed events, then opponent_back, then ok
                self.send_frame(frame)
            if attach:
                await self._attach(room, seat)
            return p.Ok(id=m.id)

    async def _attach(self, room: GameRoom, seat: int | None, *, tell_self: bool = True
                      ) -> None:
        if seat is None:
            room.subscribe(self)
        else:
            await room.player_connected(seat, self, tell_self=tell_self)

    async def on_list_games(self, m: p.ListGames) -> p.ServerMessage:
        return await self.server.list_games(m)

    async def on_get_game(self, m: p.GetGame) -> p.ServerMessage:
        return p.GameRecord(id=m.id, record=await self.server.record(m.game_id))


HANDLERS: dict[type, Handler] = {
    p.Hello: Session.on_hello, p.Register: Session.on_register, p.Login: Session.on_login,
    p.Guest: Session.on_guest, p.AuthToken: Session.on_auth_token,
    p.Logout: Session.on_logout, p.Ping: Session.on_ping,
    p.LobbySubscribe: Session.on_lobby_subscribe,
    p.LobbyUnsubscribe: Session.on_lobby_unsubscribe, p.Seek: Session.on_seek,
    p.CancelSeek: Session.on_cancel_seek, p.AcceptSeek: Session.on_accept_seek,
    p.Challenge: Session.on_challenge, p.AcceptChallenge: Session.on_accept_challenge,
    p.DeclineChallenge: Session.on_decline_challenge,
    p.CancelChallenge: Session.on_cancel_challenge, p.Move: Session.on_move,
    p.Resign: Session.on_resign, p.Abort: Session.on_abort, p.ClaimWin: Session.on_claim_win,
    p.Chat: Session.on_chat, p.Watch: Session.on_watch, p.Unwatch: Session.on_unwatch,
    p.Resume: Session.on_resume, p.ListGames: Session.on_list_games,
    p.GetGame: Session.on_get_game,
    p.GetBoard: positions.on_get_board,
    p.GetPosition: positions.on_get_position,
    p.CheckMove: positions.on_check_move,
}
"""The handler of each request type (one table for every connection)."""
