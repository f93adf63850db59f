"""The server: storage, lobby, game rooms and the websocket listener wired together.

:func:`run_server` is what ``tessera serve`` runs; :func:`running_server` is the same
server as an async context manager for tests and tools. Plain HTTP on the same port serves
``/healthz``, ``/metrics`` and the browser page (:mod:`server.web`); websocket clients
connect to ``/ws`` (or ``/``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import Any

import websockets
from websockets.asyncio.server import Server, ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

import engine
import protocol as p

from . import web
from .accounts import Accounts
from .clock import Clock, TimeControl, clock_from_wire
from .config import Settings
from .housebots import HouseBots, start_house_bots
from .lobby import Lobby, Member, Offer
from .metrics import Metrics
from .ratelimit import TokenBucket
from .rooms import (
    GameRoom,
    Seat,
    ms_to_datetime,
    now_ms,
    played_moves,
    refuse,
    wire_status,
)
from .session import Outbox, Session
from .storage import (
    Conflict,
    GameCreated,
    GameNotPlaying,
    GamePage,
    GameRecord,
    Storage,
    new_game_id,
    open_storage,
    redact_url,
)

log = logging.getLogger(__name__)

FINISHED_KEPT = 2000  # finished rooms kept in memory to answer resends and late requests
# Each poll for revoked tokens looks this far back before the previous one, so that a
# revocation committed late (or stamped by a clock a little behind) is not missed.
REVOCATION_OVERLAP = timedelta(seconds=10)
CLOSE_REVOKED = (p.CLOSE_POLICY_VIOLATION, "token revoked")
WS_PATHS = ("/", "/ws")


class GameServer:
    """Everything a connection handler needs: settings, storage, lobby and live games."""

    def __init__(self, settings: Settings, storage: Storage, metrics: Metrics) -> None:
        self.settings = settings
        self.store = storage.store
        self.writer = storage.writer
        self.metrics = metrics
        self.accounts = Accounts(self.store, lockout_after=settings.login_lockout_after,
                                 lockout_base_s=settings.login_lockout_base_s)
        self.lobby = Lobby()
        self.rooms: dict[str, GameRoom] = {}
        self.finished: OrderedDict[str, GameRoom] = OrderedDict()
        self.by_user: dict[int, set[GameRoom]] = {}
        self.sessions: set[Session] = set()
        self.outbox = Outbox()
        self._account_buckets: dict[tuple[str, int], TokenBucket] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    def background(self, task: asyncio.Task[Any]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def account_bucket(self, user_id: int, kind: str = "requests") -> TokenBucket:
        """An account's budget over all its connections: ``requests`` or ``chat``."""
        bucket = self._account_buckets.get((kind, user_id))
        if bucket is None:
            s = self.settings
            rate, burst = ((s.chat_rate, s.chat_burst) if kind == "chat"
                           else (s.account_rate, s.account_burst))
            bucket = self._account_buckets[kind, user_id] = TokenBucket(rate, burst)
        return bucket

    # -- revoked tokens -------------------------------------------------------------------------
    async def enforce_revocations(self, interval_s: float) -> None:
        """Close every connection logged in with a token revoked since the server started,
        within about ``interval_s``: by a logout on another connection, or by ``admin
        revoke-token`` in another process (hence a poll of the database, not a call)."""
        since = datetime.now(UTC) - REVOCATION_OVERLAP
        while True:
            await asyncio.sleep(interval_s)
            polled = datetime.now(UTC)
            try:
                revoked = set(await self.store.revoked_since(since))
            except Exception:
                log.exception("cannot read revoked tokens; trying again")
                continue
            since = polled - REVOCATION_OVERLAP
            self.close_revoked(revoked)

    def close_revoked(self, digests: set[str]) -> int:
        """Close the connections logged in with a token of these digests; how many."""
        closed = 0
        for session in list(self.sessions):
            if session.token_digest in digests and not session.closing:
                log.info("token revoked: closing", extra={"peer": session.peer})
                session.close(*CLOSE_REVOKED)
                closed += 1
        return closed

    # -- games ----------------------------------------------------------------------------------
    def active_games_of(self, user_id: int) -> list[GameRoom]:
        return sorted(self.by_user.get(user_id, ()), key=lambda r: r.created_ms)

    def _room(self, *, game_id: str, state: engine.State, control: TimeControl,
              seats: tuple[Seat, Seat], played: list[p.PlayedMove], seq: int, clock: Clock,
              created_ms: int, live: bool = True) -> GameRoom:
        room = GameRoom(game_id=game_id, state=state, control=control, seats=seats,
                        played=played, seq=seq, clock=clock, created_ms=created_ms,
                        writer=self.writer, metrics=self.metrics,
                        grace_ms=self.settings.grace_ms,
                        event_log_limit=self.settings.event_log_limit,
                        on_finished=self._room_finished)
        if not live:
            return room
        self.rooms[game_id] = room
        for seat in seats:
            self.by_user.setdefault(seat.user_id, set()).add(room)
        self.metrics.games.set(len(self.rooms))
        return room

    async def start_game(self, offer: Offer, members: tuple[Member, Member]) -> GameRoom:
        """Create, store and announce a game between two online members."""
        game = engine.get_game(offer.game)
        state = game.new(**offer.options)
        control = TimeControl.from_wire(offer.clock.to_wire())
        created = now_ms()
        when = ms_to_datetime(created)
        # through the commit queue: stored in the same transaction as other games' moves
        for attempt in range(3):
            created_item = GameCreated(
                new_game_id(), game.key, dict(state.options), control.to_wire(),
                game.rules_version, (members[0].user_id, members[1].user_id), 1, when, when)
            try:
                await self.writer.submit(created_item)
                break
            except Conflict:
                if attempt == 2:
                    raise  # not a taken random id, then
        game_id = created_item.game_id
        seats = (Seat(members[0].user_id, members[0].name, members[0].kind),
                 Seat(members[1].user_id, members[1].name, members[1].kind))
        room = self._room(game_id=game_id, state=state, control=control, seats=seats,
                          played=[], seq=1, clock=Clock(control), created_ms=created)
        for member in members:
            for session in list(member.sessions):
                await session.joined_game(room)
        room.announce_start()
        log.info("game started", extra={"game_id": game_id, "game": game.key,
                                        "players": [s.name for s in seats]})
        return room

    def _room_finished(self, room: GameRoom) -> None:
        self.rooms.pop(room.game_id, None)
        for seat in room.seats:
            games = self.by_user.get(seat.user_id)
            if games is not None:
                games.discard(room)
                if not games:
                    del self.by_user[seat.user_id]
        self._keep_finished(room)
        self.metrics.games.set(len(self.rooms))

    def _keep_finished(self, room: GameRoom) -> None:
        self.finished[room.game_id] = room
        while len(self.finished) > FINISHED_KEPT:
            self.finished.popitem(last=False)

    async def finished_room(self, game_id: str) -> GameRoom | None:
        """A finished game from memory, or else from storage (after a restart, or once
        forgotten), so that late requests get game_over and resent moves their ack."""
        room = self.finished.get(game_id)
        if room is not None:
            return room
        record = await self.store.get_game_record(game_id)
        if record is None or record.info.status == "playing":
            return None
        room = self.finished.get(game_id)  # loaded by another request meanwhile
        if room is None:
            room = self._restore_one(record, now_ms(), live=False)
            room.status = record.info.status
            room.result = p.Result(winner=record.info.winner,  # type: ignore[arg-type]
                                   reason=record.info.reason or "normal")  # type: ignore
            self._keep_finished(room)
        return room

    async def restore(self) -> int:
        """Load every game in progress from its stored moves (after a restart or crash)."""
        now = now_ms()
        count = 0
        for record in await self.store.load_active_games():
            try:
                room = self._restore_one(record, now)
            except Exception:
                log.exception("cannot restore game", extra={"game_id": record.info.id})
                continue
            count += 1
            if room.state.is_over:  # the final move was stored but not the end
                async with room.lock:
                    await room._finish(room.state.winner, "normal")
            else:
                room.start_clock(now)
        log.info("restored games in progress", extra={"games": count})
        return count

    def _restore_one(self, record: GameRecord, now: int, live: bool = True) -> GameRoom:
        info = record.info
        state = engine.replay(info.game_key, info.options, [m.move for m in record.moves])
        control = TimeControl.from_wire(info.clock)
        initial = control.initial_ms()
        remaining: list[int | None] = []
        for seat in (0, 1):
            left = record.remaining_ms(seat)
            remaining.append(left if left is not None else initial)
        seats = (Seat(info.player_ids[0], info.players[0], info.player_kinds[0]),
                 Seat(info.player_ids[1], info.players[1], info.player_kinds[1]))
        room = self._room(
            game_id=info.id, state=state, control=control, seats=seats,
            played=played_moves((m.ply, m.move, m.player, m.ms_used, m.clock_ms)
                                for m in record.moves),
            seq=record.last_seq, clock=Clock(control, remaining),
            created_ms=int(info.created_at.timestamp() * 1000), live=live)
        room.move_seqs.update((m.ply, m.seq) for m in record.moves)
        return room

    # -- history ----------------------------------------------------------------------------
    async def stored_snapshot(self, game_id: str) -> p.Snapshot:
        record = await self.store.get_game_record(game_id)
        if record is None:
            raise refuse(p.ErrorCode.NOT_FOUND, f"no game {game_id}", game_id)
        wire = record_to_wire(record)
        return p.Snapshot(
            game_id=wire.game_id, game=wire.game, options=wire.options, clock=wire.clock,
            players=wire.players, status=wire.status, moves=wire.moves,
            clocks_ms=None, to_move=len(wire.moves) % 2,  # type: ignore[arg-type]
            ply=len(wire.moves), result=wire.result, seq=max(1, record.last_seq))

    async def record(self, game_id: str) -> p.Record:
        record = await self.store.get_game_record(game_id)
        if record is None:
            raise refuse(p.ErrorCode.NOT_FOUND, f"no game {game_id}", game_id)
        return record_to_wire(record)

    async def list_games(self, m: p.ListGames) -> p.GameList:
        """Games in progress (from memory, newest first), then finished ones (from storage).

        A cursor says where the previous page stopped: ``L<created_ms>.<game_id>`` within
        the games in progress, ``F<storage cursor>`` within the finished ones.
        """
        if m.result is not None and m.player is None:
            raise p.BadRequest("list_games: result needs a player", request_id=m.id)
        want_live = m.status in (None, "playing") and m.result is None
        want_done = m.status in (None, "over")
        cursor = m.cursor
        games: list[p.Summary] = []
        if cursor is None or cursor.startswith("L"):
            after = _live_cursor(cursor, m.id) if cursor else None
            rooms = self._live_rooms(m.player, m.game, after) if want_live else []
            games = [_live_summary(room) for room in rooms[:m.limit]]
            if len(rooms) > m.limit:
                last = rooms[m.limit - 1]
                return p.GameList(id=m.id, games=tuple(games),
                                  next_cursor=f"L{last.created_ms}.{last.game_id}")
            done_cursor = None
        elif cursor.startswith("F") and want_done:
            done_cursor = cursor[1:] or None
        else:
            raise p.BadRequest("list_games: not a cursor of this listing", request_id=m.id)
        if not want_done:
            return p.GameList(id=m.id, games=tuple(games))
        room_left = m.limit - len(games)
        page = await self._finished_page(m, max(1, room_left), done_cursor)
        if room_left == 0:
            return p.GameList(id=m.id, games=tuple(games),
                              next_cursor="F" if page.games else None)
        for info in page.games:
            names = [p.User(name=name, kind=kind)
                     for name, kind in zip(info.players, info.player_kinds, strict=True)]
            games.append(p.Summary(
                game_id=info.id, game=info.game_key, options=info.options,
                clock=clock_from_wire(info.clock), players=(names[0], names[1]),
                status="over", ply=info.plies,
                result=p.Result(winner=info.winner, reason=info.reason or "normal"),  # type: ignore
                created_ms=int(info.created_at.timestamp() * 1000)))
        return p.GameList(id=m.id, games=tuple(games),
                          next_cursor=f"F{page.next_cursor}" if page.next_cursor else None)

    def _live_rooms(self, player: str | None, game: str | None,
                    after: tuple[int, str] | None) -> list[GameRoom]:
        """Games in progress matching the filters, newest first, after the cursor's game."""
        name = player.lower() if player is not None else None
        rooms = [room for room in self.rooms.values()
                 if (game is None or room.key == game)
                 and (name is None or any(s.name.lower() == name for s in room.seats))
                 and (after is None or (room.created_ms, room.game_id) < after)]
        rooms.sort(key=lambda room: (room.created_ms, room.game_id), reverse=True)
        return rooms

    async def _finished_page(self, m: p.ListGames, limit: int, cursor: str | None
                             ) -> GamePage:
        try:
            return await self.store.list_games(
                player=m.player, winner=m.player if m.result == "win" else None,
                loser=m.player if m.result == "loss" else None, game_key=m.game,
                status=None, limit=limit, cursor=cursor)
        except ValueError as exc:
            raise p.BadRequest(f"list_games: {exc}", request_id=m.id) from None


def _live_cursor(cursor: str, request_id: int) -> tuple[int, str]:
    created, _, game_id = cursor[1:].partition(".")
    if not created.isdigit() or not game_id:
        raise p.BadRequest("list_games: not a cursor of this listing", request_id=request_id)
    return int(created), game_id


def _live_summary(room: GameRoom) -> p.Summary:
    return p.Summary(
        game_id=room.game_id, game=room.key, options=dict(room.state.options),
        clock=clock_from_wire(room.control.to_wire()),
        players=(room.seats[0].wire(), room.seats[1].wire()),
        status=wire_status(room.status, room.state.ply),  # type: ignore[arg-type]
        ply=room.state.ply, created_ms=room.created_ms)


def record_to_wire(record: GameRecord) -> p.Record:
    """The protocol's form of a stored game (``get_game`` and ``tessera dump``)."""
    info = record.info
    kinds = info.player_kinds
    finished = info.status != "playing"
    return p.Record(
        game_id=info.id, game=info.game_key, options=info.options,
        clock=clock_from_wire(info.clock),
        players=(p.User(name=info.players[0], kind=kinds[0]),
                 p.User(name=info.players[1], kind=kinds[1])),
        status="over" if finished else "playing",
        moves=tuple(played_moves((m.ply, m.move, m.player, m.ms_used, m.clock_ms)
                                 for m in record.moves)),
        result=p.Result(winner=info.winner, reason=info.reason or "normal")  # type: ignore
        if finished else None,
        created_ms=int(info.created_at.timestamp() * 1000),
        ended_ms=int(info.ended_at.timestamp() * 1000) if info.ended_at else None)


# -- the listener ---------------------------------------------------------------------------------
def _http(server: GameServer, connection: ServerConnection, request: Request
          ) -> Response | None:
    path = request.path.split("?", 1)[0]
    if path == "/healthz":
        return connection.respond(HTTPStatus.OK, "ok\n")
    if path == "/metrics":
        body = server.metrics.render()
        headers = Headers([("Content-Type", "text/plain; version=0.0.4; charset=utf-8"),
                           ("Content-Length", str(len(body)))])
        return Response(200, "OK", headers, body)
    if (page := web.respond(request, server.settings)) is not None:
        return page
    if path not in WS_PATHS:
        return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
    return None


@dataclass
class Running:
    """A started server: its game server, the port it listens on, its house bots."""

    game_server: GameServer
    ws_server: Server
    port: int
    house: HouseBots


@asynccontextmanager
async def running_server(settings: Settings) -> AsyncIterator[Running]:
    """Open storage (migrating it), restore games, listen; on exit close with 1001."""
    metrics = Metrics()
    async with open_storage(settings.db_url,
                            sqlite_synchronous=settings.sqlite_synchronous,  # type: ignore
                            on_commit=metrics.commit_batch.observe) as storage:
        gs = GameServer(settings, storage, metrics)
        await gs.restore()

        async def handler(ws: ServerConnection) -> None:
            session = Session(ws, gs)
            gs.sessions.add(session)
            metrics.connections.inc()
            try:
                await session.run()
            finally:
                gs.sessions.discard(session)
                metrics.connections.dec()

        async with websockets.serve(
            handler, settings.host, settings.port,
            process_request=lambda c, r: _http(gs, c, r),
            max_size=settings.max_frame_bytes, compression=None,
            ping_interval=settings.ping_interval, ping_timeout=settings.ping_timeout,
            close_timeout=settings.close_timeout,
            max_queue=16, server_header=None,  # origins: checked by web.respond
        ) as ws_server:
            port = next(iter(ws_server.sockets)).getsockname()[1]
            house = await start_house_bots(gs.store, settings.house_bots, settings.host, port)
            log.info("listening", extra={"host": settings.host, "port": port,
                                         "db": redact_url(settings.db_url),
                                         "games_in_progress": len(gs.rooms)})
            revocations = asyncio.create_task(
                gs.enforce_revocations(settings.revocation_poll_s), name="tessera-revocations")
            try:
                yield Running(gs, ws_server, port, house)
            finally:
                revocations.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await revocations
                for room in gs.rooms.values():
                    room.close()
                ws_server.close()  # closes every connection with 1001 (going away)
                await ws_server.wait_closed()
                await house.stop()
    log.info("stopped: everything acknowledged is stored")


GC_YOUNG_THRESHOLD = 50_000  # CPython's default, 700, runs the collector ~100 times a second


def tune_gc() -> None:
    """Make the cyclic garbage collector cheaper for a long-running server.

    Nearly all of a move's garbage goes with its last reference, so the collector finds
    little; but at CPython's default it runs about a hundred times a second under load and
    its full collections scan every object of a thousand connections, for pauses of 100 ms
    and more. A higher threshold for the young generation makes it run far less often
    (50,000 rather than 10,000 halved the collector's time again: 0.34 to 0.42 s against
    0.81 to 0.93 s in a 20-second run at K = 500, where it finds about 3,000 objects to
    free in all), and freezing what exists once the server is up (modules, tables,
    restored games) keeps those objects out of every later collection.
    """
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


async def run_server(settings: Settings, ready_file: str | None = None) -> None:
    """Serve until SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with running_server(settings) as running:
        tune_gc()
        if ready_file:
            with open(ready_file, "w") as f:
                f.write(f"{running.port}\n")
        print(f"tessera: listening on ws://{settings.host}:{running.port}/ws", flush=True)
        await stop.wait()
        log.info("shutting down")


__all__ = ["GameNotPlaying", "GameServer", "Running", "run_server", "running_server"]
