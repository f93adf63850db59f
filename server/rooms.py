"""Game rooms: one live game each, authoritative over its moves, clocks and watchers.

A move takes one path (STYLE.md, "the shape of the system")::

    check seat, ply and turn -> engine.play -> commit (group commit) -> ack -> broadcast

Nothing is applied to the room, acknowledged or broadcast before the commit returns, so an
acknowledged move is always stored. Each room serialises its actions with one lock; the
broadcast frame is made once (``protocol.event_frame``) and queued to every watcher. The
room's status follows the lifecycle table of :mod:`server.lifecycle`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import engine
from protocol import (
    ChatMessage,
    Ending,
    ErrorCode,
    GameOver,
    GameStarted,
    GameState,
    Moved,
    OpponentBack,
    OpponentLeft,
    PlayedMove,
    PoolRating,
    Prepared,
    ProtocolError,
    Result,
    Snapshot,
    TimeControl,
    User,
    event_frame,
    prepare,
    trusted_event_frame,
)
from protocol import Move as MoveRequest

from .clock import GameClock
from .lifecycle import CLOCK_STARTS_AT_PLY, LIVE, Change, GameStatus, after, allows
from .storage import (
    ChatSent,
    GameFinished,
    GameRatings,
    MovePlayed,
    RatedPlayers,
    SeqAdvanced,
    StorageError,
    WriteFailed,
)
from .wire import rating_updates

if TYPE_CHECKING:
    from .metrics import Metrics
    from .storage import Item

log = logging.getLogger(__name__)

TIMEOUT_RETRY_S = 1.0  # a timeout that could not be stored is tried again this soon
NOT_STORED_RETRY_MS = 1000  # a player's action the database did not store: send it again

T = TypeVar("T")


def now_ms() -> int:
    """Wall-clock milliseconds: clocks, stored times and restarts all use this one clock."""
    return time.time_ns() // 1_000_000


def ms_to_datetime(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


class Listener(Protocol):
    """A connection that receives a room's events (a player's session or a spectator's)."""

    def send_frame(self, frame: bytes) -> None: ...


class Watched(Protocol):
    """What a connection follows a game through: the game's room on the node that owns it,
    or, on a cluster node that does not, its relay (``server.cluster.remote.RemoteGame``)."""

    game_id: str

    def seat_of(self, user_id: int) -> int | None: ...

    def subscribe(self, listener: Listener) -> None: ...

    def unsubscribe(self, listener: Listener) -> None: ...

    async def player_connected(self, seat: int, listener: Listener, *,
                               tell_self: bool = True) -> None: ...

    async def player_disconnected(self, seat: int, listener: Listener) -> None: ...


class Writer(Protocol):
    """Where a room stores what happens (the commit queue, or a node's fenced view of it)."""

    def submit(self, item: Item) -> Awaitable[GameRatings | None]:
        """Store ``item``; for a rated game's end, both rating changes made with it."""


@dataclass(frozen=True, slots=True)
class Player:
    """Who sits in a seat of a game: an account, with the name and kind others see."""

    user_id: int
    name: str
    kind: str
    rating: PoolRating | None = None  # in the game's pool, as the game started

    def wire(self) -> User:
        return User(name=self.name, kind=self.kind,  # type: ignore[arg-type]
                    rating=self.rating)


@dataclass(frozen=True, slots=True)
class RoomContext:
    """What every room of one server shares: where it stores, counts and runs things."""

    writer: Writer
    metrics: Metrics
    grace_ms: int
    event_log_limit: int
    on_finished: Callable[[GameRoom], None]
    spawn: Callable[[Coroutine[Any, Any, Any]], object]
    rating_period_s: float = 86_400.0
    on_rated: Callable[[GameRoom, GameRatings], None] | None = None


def refuse(code: str, message: str, game_id: str | None = None) -> ProtocolError:
    return ProtocolError(message, code=code, game_id=game_id)


def not_stored(what: str, game_id: str, exc: WriteFailed) -> ProtocolError:
    """The refusal of a player's action that the database did not store (``not_stored``:
    nothing of it happened; send it again), logged in one line."""
    log.warning("%s: %s", what, exc, extra={"game_id": game_id})
    return ProtocolError(f"the {what} was not stored (the database is busy); send it again",
                         code=ErrorCode.NOT_STORED, retry_after_ms=NOT_STORED_RETRY_MS,
                         game_id=game_id)


class GameRoom:
    """One game in progress (or just finished) and everyone watching it."""

    def __init__(
        self,
        context: RoomContext,
        *,
        game_id: str,
        state: engine.State,
        control: TimeControl,
        players: tuple[Player, Player],
        played: list[PlayedMove],
        seq: int,
        clock: GameClock,
        created_ms: int,
        status: GameStatus | None = None,
        result: Result | None = None,
        rated: bool = False,
        rating_changes: GameRatings | None = None,
    ) -> None:
        self.game_id = game_id
        self.state = state
        self.prev_state: engine.State | None = None
        self.control = control
        self.players = players
        self.played = played
        self.seq = seq
        self.clock = clock
        self.created_ms = created_ms
        self.status = status if status is not None else GameStatus.of("playing", state.ply)
        self.result = result
        self.rated = rated
        self.rating_changes = rating_changes  # once a rated game is over
        self.lock = asyncio.Lock()
        self.listeners: set[Listener] = set()
        self.present: list[set[Listener]] = [set(), set()]
        self.absent_since: list[int | None] = [None, None]
        # (seq, frame) of the events since the room was loaded, for resume
        self.events: deque[tuple[int, bytes]] = deque(maxlen=context.event_log_limit)
        self.first_logged_seq = seq + 1
        self.move_seqs: dict[int, int] = {}
        self._context = context
        self._writer: Writer = context.writer
        self._metrics = context.metrics
        self._timer: asyncio.TimerHandle | None = None
        self._timer_flag = 0  # the time (ms) the timer was set for
        self.loaded_ms = now_ms()  # nobody is attached to a restored game before this
        self.epoch: int | None = None  # a cluster node's hold on the game (fencing); None alone
        self._packed: tuple[tuple[int, GameStatus, int], Prepared] | None = None

    # -- views ------------------------------------------------------------------------------
    @property
    def key(self) -> str:
        return self.state.game.key

    def seat_of(self, user_id: int) -> int | None:
        for i, player in enumerate(self.players):
            if player.user_id == user_id:
                return i
        return None

    def clocks_now(self, now: int) -> tuple[int, int] | None:
        """Both players' time left at ``now`` (None: the game has no clock)."""
        clocks = (self.clock.snapshot(now, self.state.to_move) if self.status.live
                  else list(self.clock.remaining))
        if clocks[0] is None or clocks[1] is None:
            return None
        return (max(0, clocks[0]), max(0, clocks[1]))

    def packed_state(self, now: int | None = None) -> tuple[Prepared, dict[str, Any]]:
        """The ``game_state`` reply of this game, packed once per event and shared by every
        spectator who asks until the next (``protocol.prepare``), and the values to fill
        in beside the request's id: the clocks at ``now``."""
        now = now_ms() if now is None else now
        key = (self.seq, self.status, len(self.played))
        if self._packed is None or self._packed[0] != key:
            snapshot = self.snapshot(now)
            holes = ("id",) if snapshot.clocks_ms is None else ("id", "game.clocks_ms")
            self._packed = (key, prepare(GameState(id=0, game=snapshot), holes))
            self._metrics.snapshots_packed.labels(what="game").inc()
        clocks = self.clocks_now(now)
        return self._packed[1], {} if clocks is None else {"game__clocks_ms": list(clocks)}

    def snapshot(self, now: int | None = None) -> Snapshot:
        now = now_ms() if now is None else now
        clocks = self.clocks_now(now)
        return Snapshot(
            game_id=self.game_id,
            game=self.key,
            options=dict(self.state.options),
            clock=self.control,
            players=(self.players[0].wire(), self.players[1].wire()),
            status=cast(Any, self.status.wire),
            moves=tuple(self.played),
            clocks_ms=clocks,
            to_move=cast(Any, self.state.to_move),
            ply=self.state.ply,
            result=self.result,
            seq=self.seq,
            rated=self.rated or None,
            rating_changes=rating_updates(self.rating_changes),
        )

    def events_since(self, since_seq: int) -> list[bytes] | None:
        """Frames of the events after ``since_seq``; None when a snapshot must be sent
        instead: ``since_seq`` is ahead of the game, some of the events are not kept, or
        it is from before this room was loaded (a restart restarted the clocks, so even a
        client that missed no event needs the server's figures)."""
        if since_seq > self.seq or since_seq < self.first_logged_seq:
            return None
        if since_seq == self.seq:
            return []
        if self.events and self.events[0][0] > since_seq + 1:
            return None
        return [frame for seq, frame in self.events if seq > since_seq]

    # -- watchers and presence ----------------------------------------------------------------
    def subscribe(self, listener: Listener) -> None:
        self.listeners.add(listener)

    def unsubscribe(self, listener: Listener) -> None:
        self.listeners.discard(listener)

    async def player_connected(self, seat: int, listener: Listener, *,
                               tell_self: bool = True) -> None:
        """Attach a player's connection; if they had left, everyone hears they are back
        (``tell_self=False``: everyone but this connection, which gets a snapshot).

        Call it with the lock held if the player may have left, so that the event's seq
        cannot collide with an action in flight.
        """
        if tell_self:
            self.subscribe(listener)
        was_absent = not self.present[seat]
        self.present[seat].add(listener)
        if was_absent and self.absent_since[seat] is not None:
            self.absent_since[seat] = None
            if self.status.live:
                await self._presence(OpponentBack(game_id=self.game_id, seq=self.seq + 1,
                                                  player=cast(Any, seat)))
        self.subscribe(listener)

    async def player_disconnected(self, seat: int, listener: Listener) -> None:
        """A player's connection closed; if it was their last, everyone hears they left."""
        self.unsubscribe(listener)
        self.present[seat].discard(listener)
        async with self.lock:
            if self.present[seat] or not self.status.live or (
                    self.absent_since[seat] is not None):
                return
            self.absent_since[seat] = now_ms()
            await self._presence(OpponentLeft(game_id=self.game_id, seq=self.seq + 1,
                                              player=cast(Any, seat),
                                              claim_after_ms=self._context.grace_ms))

    async def _presence(self, event: OpponentLeft | OpponentBack) -> None:
        """Store the event's seq, then tell everyone (the caller holds the lock).

        A presence event has no row of its own, but its number is stored like any other
        event's, so that no seq is sent twice, even after a crash. If the number cannot be
        stored, the event is not sent (the absence itself still counts for ``claim_win``).
        """
        try:
            await self._writer.submit(SeqAdvanced(self.game_id, event.seq, self.epoch))
        except StorageError as exc:
            log.warning("presence event not sent: its seq could not be stored: %s", exc,
                        extra={"game_id": self.game_id})
            return
        self.seq = event.seq
        self.broadcast(event)

    def broadcast(self, event: GameStarted | GameOver | ChatMessage | OpponentLeft
                  | OpponentBack) -> None:
        """Frame an event once, keep it for resume (its seq is ``self.seq``) and send it
        to every watcher."""
        self._send_all(event_frame(event))

    def broadcast_moved(self, **fields: Any) -> None:
        """``broadcast`` for ``moved``, framed straight from the room's own values."""
        self._send_all(trusted_event_frame(Moved, **fields))

    def _send_all(self, frame: bytes) -> None:
        self.events.append((self.seq, frame))
        for listener in list(self.listeners):
            listener.send_frame(frame)

    def announce_start(self) -> None:
        """Broadcast ``game_started`` (seq 1) and start the clock of the first player."""
        self.first_logged_seq = self.seq
        self.broadcast(GameStarted(game_id=self.game_id, seq=self.seq,
                                   snapshot=self.snapshot()))
        self.start_clock(now_ms())

    def start_clock(self, now: int) -> None:
        """Start the turn of the player to move (its clock runs once the game is playing)."""
        self.clock.start_turn(now, running=self.status is GameStatus.PLAYING)
        self._arm_timer()

    async def resume_after_restart(self, now: int) -> None:
        """Carry on a game loaded from storage: start its clock, or, if its final move was
        stored but not its end (a crash between the two), store and announce the end."""
        if not self.state.is_over:
            self.start_clock(now)
            return
        async with self.lock:
            await self._finish(self.state.winner, "normal")

    # -- actions ----------------------------------------------------------------------------
    def _check_live(self) -> None:
        if self.status not in LIVE:
            raise refuse(ErrorCode.GAME_OVER, "the game is over", self.game_id)

    def _seat(self, user_id: int) -> int:
        seat = self.seat_of(user_id)
        if seat is None:
            raise refuse(ErrorCode.FORBIDDEN, "you are not playing in this game", self.game_id)
        return seat

    async def play(self, user_id: int, request: MoveRequest) -> int:
        """Apply a move sent by ``user_id``; return the seq of the stored move."""
        started = time.perf_counter()
        async with self.lock:
            seat = self._seat(user_id)
            resent = self._resent_seq(seat, request)
            if resent is not None:
                return resent
            self._check_live()
            if request.ply != self.state.ply:
                raise refuse(ErrorCode.STALE_PLY,
                             f"the game is at ply {self.state.ply}, not {request.ply}",
                             self.game_id)
            if self.state.to_move != seat:
                raise refuse(ErrorCode.NOT_YOUR_TURN, "it is your opponent's turn", self.game_id)
            now = now_ms()
            flag = self.clock.flag_at(seat)
            if flag is not None and now >= flag:
                await self._finish(1 - seat, "timeout")
                raise refuse(ErrorCode.GAME_OVER, "your time ran out", self.game_id)
            try:
                new_state = self.state.play(request.move)
            except engine.IllegalMove as exc:
                raise refuse(ErrorCode.ILLEGAL_MOVE, str(exc), self.game_id) from None
            seq = await self._commit_move(seat, new_state, now)
        self._metrics.moves.observe(time.perf_counter() - started)
        return seq

    def _resent_seq(self, seat: int, request: MoveRequest) -> int | None:
        """The seq of this very move if it was already applied (a resend), else None."""
        ply = request.ply
        if ply >= len(self.played):
            return None
        done = self.played[ply]
        if done.by != seat:
            return None
        text = request.move
        if ply == len(self.played) - 1 and self.prev_state is not None:
            try:
                text = self.prev_state.parse_move(text).text
            except engine.IllegalMove:
                return None
        if text.strip().lower() != done.move.lower():
            raise refuse(ErrorCode.STALE_PLY,
                         f"ply {ply} was already played as {done.move}", self.game_id)
        return self.move_seqs.get(ply, self.seq)

    async def _commit_move(self, seat: int, new_state: engine.State, now: int) -> int:
        status = self.status
        if new_state.ply == CLOCK_STARTS_AT_PLY and allows(status, Change.BOTH_MOVED):
            status = after(status, Change.BOTH_MOVED)
        trial = GameClock(self.control, list(self.clock.remaining))
        trial.start_turn(self.clock.turn_started, running=self.clock.running)  # type: ignore
        used, after_move = trial.finish_turn(seat, now)
        trial.start_turn(now, running=status is GameStatus.PLAYING)
        move_text = new_state.last_move or ""
        seq = self.seq + 1
        item = MovePlayed(self.game_id, self.state.ply, seq, move_text, seat, used, after_move,
                          ms_to_datetime(now), self.epoch)
        changes: GameRatings | None = None
        if new_state.is_over:
            finish = GameFinished(self.game_id, new_state.winner, "normal", seq + 1,
                                  ms_to_datetime(now), "over", self.epoch,
                                  rated=self._rated_players())
            stored = await asyncio.gather(self._writer.submit(item),
                                          self._writer.submit(finish), return_exceptions=True)
            if isinstance(stored[0], WriteFailed) and isinstance(stored[1], WriteFailed):
                raise not_stored("move", self.game_id, stored[0]) from None
            for outcome in stored:  # one stored and not the other: not known to be nothing
                if isinstance(outcome, BaseException):
                    raise outcome
            changes = cast("GameRatings | None", stored[1])
        else:
            await self._stored(self._writer.submit(item), "move")
        # Stored: now it happened.
        self.prev_state = self.state
        self.state = new_state
        self.status = status
        self.clock = trial
        self.seq = seq
        self.move_seqs[item.ply] = seq
        # The server's own values, checked where they were made (engine, clock): the played
        # move is built, and `moved` framed, without the schema's checks.
        self.played.append(PlayedMove.trusted(ply=item.ply, move=move_text, by=seat,
                                              ms_used=used, clock_ms=after_move))
        clocks = self.clock.snapshot(now, new_state.to_move)
        self.broadcast_moved(
            game_id=self.game_id, seq=seq, ply=item.ply, move=move_text, by=seat, ms_used=used,
            clocks_ms=None if clocks[0] is None or clocks[1] is None
            else (max(0, clocks[0]), max(0, clocks[1])))
        if new_state.is_over:
            self._ended(new_state.winner, "normal", after(status, Change.END), seq + 1,
                        changes)
        else:
            self._arm_timer()
        return seq

    async def resign(self, user_id: int) -> None:
        async with self.lock:
            seat = self._seat(user_id)
            self._check_live()
            await self._finish(1 - seat, "resign")

    async def abort(self, user_id: int) -> None:
        async with self.lock:
            self._seat(user_id)
            self._check_live()
            if not allows(self.status, Change.ABORT):
                raise refuse(ErrorCode.CONFLICT,
                             "a game can be aborted only before both players have moved",
                             self.game_id)
            await self._finish(None, "abort", Change.ABORT)

    async def claim_win(self, user_id: int) -> None:
        async with self.lock:
            seat = self._seat(user_id)
            self._check_live()
            since = self.absent_since[1 - seat]
            if since is None and not self.present[1 - seat]:
                since = self.loaded_ms  # restored, and the opponent has not come back
            if since is None:
                raise refuse(ErrorCode.CONFLICT, "your opponent is connected", self.game_id)
            wait = since + self._context.grace_ms - now_ms()
            if wait > 0:
                exc = refuse(ErrorCode.CONFLICT,
                             f"your opponent may still come back: claim in {wait} ms",
                             self.game_id)
                exc.retry_after_ms = wait
                raise exc
            await self._finish(seat, "abandon")

    async def chat(self, player: Player, text: str) -> None:
        async with self.lock:
            self._seat(player.user_id)
            seq = self.seq + 1
            await self._stored(self._writer.submit(ChatSent(
                self.game_id, seq, player.user_id, text, ms_to_datetime(now_ms()), self.epoch)),
                "chat line")
            self.seq = seq
            self.broadcast(ChatMessage(game_id=self.game_id, seq=seq, from_=player.name,
                                       text=text))

    # -- the end ----------------------------------------------------------------------------
    async def _finish(self, winner: int | None, reason: str, change: Change = Change.END
                      ) -> None:
        """Store and announce the end of the game (caller holds the lock)."""
        status = after(self.status, change)
        now = now_ms()
        spent: tuple[int, int] | None = None  # the mover's clock at the end, once stored
        if self.clock.turn_started is not None and self.control.CARRIES_OVER:
            mover = self.state.to_move
            left = self.clock.left(mover, now, mover)
            if left is not None:
                spent = (mover, max(0, left))
        seq = self.seq + 1
        changes = await self._stored(self._writer.submit(GameFinished(
            self.game_id, winner, reason, seq, ms_to_datetime(now), cast(Any, status.stored),
            self.epoch, rated=self._rated_players())), f"end of the game ({reason})")
        if spent is not None:
            self.clock.remaining[spent[0]] = spent[1]
        self._ended(winner, reason, status, seq, changes)

    async def _stored(self, write: Awaitable[T], what: str) -> T:
        """Await a write of this room; ``not_stored`` if the database failed it."""
        try:
            return await write
        except WriteFailed as exc:
            raise not_stored(what, self.game_id, exc) from None

    def _rated_players(self) -> RatedPlayers | None:
        """Who the end of this game rates (None for a casual game)."""
        if not self.rated:
            return None
        return RatedPlayers(self.key, (self.players[0].user_id, self.players[1].user_id),
                            self._context.rating_period_s)

    def _ended(self, winner: int | None, reason: str, status: GameStatus, seq: int,
               changes: GameRatings | None = None) -> None:
        """The end is stored as event ``seq`` (with both rating changes, for a rated game
        that is over): update the room and tell everyone."""
        self.seq = seq
        self.status = status
        ending = Ending.of(self.state.ending) if reason == "normal" else None
        self.result = Result(winner=cast(Any, winner), reason=cast(Any, reason), ending=ending)
        self.rating_changes = changes
        self.close()
        self.broadcast(GameOver(game_id=self.game_id, seq=self.seq, winner=cast(Any, winner),
                                reason=cast(Any, reason),
                                rating_changes=rating_updates(changes), ending=ending))
        if changes is not None and self._context.on_rated is not None:
            self._context.on_rated(self, changes)
        self._metrics.games_finished.labels(reason=reason).inc()
        log.info("game over", extra={"game_id": self.game_id, "winner": winner,
                                     "reason": reason, "plies": self.state.ply})
        self._context.on_finished(self)

    # -- clocks ---------------------------------------------------------------------------------
    def _arm_timer(self) -> None:
        """Have ``_timeout`` run when the player to move runs out of time.

        A timer already set to fire no later is kept (it usually is: a Fischer player's
        flag only moves away): when it fires early, ``_timeout`` finds the flag not down yet
        and sets a new one. So a move does not cost a timer of its own.
        """
        flag = self.clock.flag_at(self.state.to_move)
        if flag is None or self.status not in LIVE:
            self.close()
            return
        if self._timer is not None:
            if self._timer_flag <= flag:
                return
            self._timer.cancel()
        self._set_timer(flag, (flag - now_ms()) / 1000)

    def _set_timer(self, flag: int, delay_s: float) -> None:
        self._timer_flag = flag
        self._timer = asyncio.get_running_loop().call_later(max(0.0, delay_s), self._flag_fell)

    def _flag_fell(self) -> None:
        self._timer = None
        self._context.spawn(self._timeout())

    async def _timeout(self) -> None:
        async with self.lock:
            if not self.status.live:
                return
            mover = self.state.to_move
            flag = self.clock.flag_at(mover)
            if flag is None:
                return
            if now_ms() < flag:
                self._arm_timer()
                return
            try:
                await self._finish(1 - mover, "timeout")
            except Exception as exc:
                # Still playing, and its flag is down: try again, so it never stays
                # "playing" with no timer (a move meanwhile also finds the flag down).
                if not isinstance(exc, ProtocolError):  # not_stored is logged already
                    log.exception("could not store a timeout; trying again in %.0f s",
                                  TIMEOUT_RETRY_S, extra={"game_id": self.game_id})
                self._set_timer(flag, TIMEOUT_RETRY_S)

    def close(self) -> None:
        """Stop the room's timer (the game ended, or the server is stopping)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
