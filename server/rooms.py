"""Game rooms: one live game each, authoritative over its moves, clocks and watchers.

A move takes one path (STYLE.md, "the shape of the system")::

    check seat, ply and turn -> engine.play -> commit (group commit) -> ack -> broadcast

Nothing is applied to the room, acknowledged or broadcast before the commit returns, so an
acknowledged move is always stored. Each room serialises its actions with one lock; the
broadcast frame is encoded once and queued to every watcher.

Game lifecycle (the only transitions)::

    playing --move that ends the game / resign / timeout / claim_win--> over
    playing --abort (before both players have moved)--------------------> aborted

A game in progress is ``waiting`` on the wire until both players have made their first
move (``CLOCK_STARTS_AT_PLY``): until then no clock runs and either player may abort.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

import engine
from protocol import (
    ChatMessage,
    ErrorCode,
    GameOver,
    GameStarted,
    Moved,
    OpponentBack,
    OpponentLeft,
    PlayedMove,
    ProtocolError,
    Result,
    Snapshot,
    TimeControl,
    User,
    encode,
    encode_trusted,
)
from protocol import Move as MoveRequest

from .clock import GameClock
from .storage import ChatSent, GameFinished, MovePlayed, SeqAdvanced, StorageError

if TYPE_CHECKING:
    from .metrics import Metrics
    from .storage import CommitQueue

log = logging.getLogger(__name__)

PLAYING, OVER, ABORTED = "playing", "over", "aborted"
FINISHED = {OVER: "over", ABORTED: "over"}  # wire status of a finished game
CLOCK_STARTS_AT_PLY = 2  # before this ply the game is waiting: no clock runs, abort allowed


def wire_status(status: str, ply: int) -> str:
    """The status clients see: ``waiting``, ``playing`` or ``over``."""
    if status != PLAYING:
        return "over"
    return "waiting" if ply < CLOCK_STARTS_AT_PLY else "playing"


def now_ms() -> int:
    """Wall-clock milliseconds: clocks, stored times and restarts all use this one clock."""
    return time.time_ns() // 1_000_000


def ms_to_datetime(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


class Listener(Protocol):
    """A connection that receives a room's events (a player's session or a spectator's)."""

    def send_frame(self, frame: bytes) -> None: ...


@dataclass(frozen=True, slots=True)
class Seat:
    user_id: int
    name: str
    kind: str

    def wire(self) -> User:
        return User(name=self.name, kind=self.kind)  # type: ignore[arg-type]


def refuse(code: str, message: str, game_id: str | None = None) -> ProtocolError:
    return ProtocolError(message, code=code, game_id=game_id)


class GameRoom:
    """One game in progress (or just finished) and everyone watching it."""

    def __init__(
        self,
        *,
        game_id: str,
        state: engine.State,
        control: TimeControl,
        seats: tuple[Seat, Seat],
        played: list[PlayedMove],
        seq: int,
        clock: GameClock,
        created_ms: int,
        writer: CommitQueue,
        metrics: Metrics,
        grace_ms: int,
        event_log_limit: int,
        on_finished: Callable[[GameRoom], None],
    ) -> None:
        self.game_id = game_id
        self.state = state
        self.prev_state: engine.State | None = None
        self.control = control
        self.seats = seats
        self.played = played
        self.seq = seq
        self.clock = clock
        self.created_ms = created_ms
        self.status = PLAYING
        self.result: Result | None = None
        self.lock = asyncio.Lock()
        self.listeners: set[Listener] = set()
        self.present: list[set[Listener]] = [set(), set()]
        self.absent_since: list[int | None] = [None, None]
        # (seq, frame) of the events since the room was loaded, for resume
        self.events: deque[tuple[int, bytes]] = deque(maxlen=event_log_limit)
        self.first_logged_seq = seq + 1
        self.move_seqs: dict[int, int] = {}
        self._writer = writer
        self._metrics = metrics
        self._grace_ms = grace_ms
        self._on_finished = on_finished
        self._timer: asyncio.TimerHandle | None = None
        self._timer_flag = 0  # the time (ms) the timer was set for
        self.loaded_ms = now_ms()  # nobody is attached to a restored game before this

    # -- views ------------------------------------------------------------------------------
    @property
    def key(self) -> str:
        return self.state.game.key

    def seat_of(self, user_id: int) -> int | None:
        for i, seat in enumerate(self.seats):
            if seat.user_id == user_id:
                return i
        return None

    def snapshot(self, now: int | None = None) -> Snapshot:
        now = now_ms() if now is None else now
        running = self.status == PLAYING
        clocks = self.clock.snapshot(now, self.state.to_move) if running else list(
            self.clock.remaining)
        return Snapshot(
            game_id=self.game_id,
            game=self.key,
            options=dict(self.state.options),
            clock=self.control,
            players=(self.seats[0].wire(), self.seats[1].wire()),
            status=wire_status(self.status, self.state.ply),  # type: ignore[arg-type]
            moves=tuple(self.played),
            clocks_ms=None if clocks[0] is None or clocks[1] is None
            else (max(0, clocks[0]), max(0, clocks[1])),
            to_move=self.state.to_move,  # type: ignore[arg-type]
            ply=self.state.ply,
            result=self.result,
            seq=self.seq,
        )

    def events_since(self, since_seq: int) -> list[bytes] | None:
        """Frames of the events after ``since_seq``, or None if they are not all kept (or
        ``since_seq`` is ahead of the game)."""
        if since_seq > self.seq:
            return None
        if since_seq == self.seq:
            return []
        if since_seq + 1 < self.first_logged_seq or (
            self.events and self.events[0][0] > since_seq + 1
        ):
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
            if self.status == PLAYING:
                await self._presence(OpponentBack(game_id=self.game_id, seq=self.seq + 1,
                                                  player=seat))  # type: ignore[arg-type]
        self.subscribe(listener)

    async def player_disconnected(self, seat: int, listener: Listener) -> None:
        """A player's connection closed; if it was their last, everyone hears they left."""
        self.unsubscribe(listener)
        self.present[seat].discard(listener)
        async with self.lock:
            if self.present[seat] or self.status != PLAYING or (
                    self.absent_since[seat] is not None):
                return
            self.absent_since[seat] = now_ms()
            await self._presence(OpponentLeft(game_id=self.game_id, seq=self.seq + 1,
                                              player=seat,  # type: ignore[arg-type]
                                              claim_after_ms=self._grace_ms))

    async def _presence(self, event: OpponentLeft | OpponentBack) -> None:
        """Store the event's seq, then tell everyone (the caller holds the lock).

        A presence event has no row of its own, but its number is stored like any other
        event's, so that no seq is sent twice, even after a crash. If the number cannot be
        stored, the event is not sent (the absence itself still counts for ``claim_win``).
        """
        try:
            await self._writer.submit(SeqAdvanced(self.game_id, event.seq))
        except StorageError as exc:
            log.warning("presence event not sent: its seq could not be stored: %s", exc,
                        extra={"game_id": self.game_id})
            return
        self.seq = event.seq
        self._broadcast(event)

    def _broadcast(self, event: GameStarted | Moved | GameOver | ChatMessage | OpponentLeft
                   | OpponentBack) -> None:
        self._broadcast_frame(encode(event))

    def _broadcast_frame(self, frame: bytes) -> None:
        self.events.append((self.seq, frame))
        for listener in list(self.listeners):
            listener.send_frame(frame)

    def announce_start(self) -> None:
        """Broadcast ``game_started`` (seq 1) and start the clock of the first player."""
        self.first_logged_seq = self.seq
        self._broadcast(GameStarted(game_id=self.game_id, seq=self.seq,
                                    snapshot=self.snapshot()))
        self.start_clock(now_ms())

    def start_clock(self, now: int) -> None:
        """Start the turn of the player to move (its clock runs once the game is playing)."""
        self.clock.start_turn(now, running=self.state.ply >= CLOCK_STARTS_AT_PLY)
        self._arm_timer()

    # -- actions ----------------------------------------------------------------------------
    def _check_playing(self) -> None:
        if self.status != PLAYING:
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
            self._check_playing()
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
        trial = GameClock(self.control, list(self.clock.remaining))
        trial.start_turn(self.clock.turn_started, running=self.clock.running)  # type: ignore
        used, after = trial.finish_turn(seat, now)
        trial.start_turn(now, running=new_state.ply >= CLOCK_STARTS_AT_PLY)
        move_text = new_state.last_move or ""
        seq = self.seq + 1
        item = MovePlayed(self.game_id, self.state.ply, seq, move_text, seat, used, after,
                          ms_to_datetime(now))
        if new_state.is_over:
            winner = new_state.winner
            finish = GameFinished(self.game_id, winner, "normal", seq + 1, ms_to_datetime(now),
                                  "over")
            await asyncio.gather(self._writer.submit(item), self._writer.submit(finish))
        else:
            await self._writer.submit(item)
        # Stored: now it happened.
        self.prev_state = self.state
        self.state = new_state
        self.clock = trial
        self.seq = seq
        self.move_seqs[item.ply] = seq
        # The server's own values, checked where they were made (engine, clock): the played
        # move is built, and `moved` framed, without the schema's checks.
        self.played.append(PlayedMove.trusted(ply=item.ply, move=move_text, by=seat,
                                              ms_used=used, clock_ms=after))
        clocks = self.clock.snapshot(now, new_state.to_move)
        self._broadcast_frame(encode_trusted(
            Moved, game_id=self.game_id, seq=seq, ply=item.ply, move=move_text,
            by=seat, ms_used=used,
            clocks_ms=None if clocks[0] is None or clocks[1] is None
            else (max(0, clocks[0]), max(0, clocks[1])),
        ))
        if new_state.is_over:
            self._ended(new_state.winner, "normal", OVER, seq + 1)
        else:
            self._arm_timer()
        return seq

    async def resign(self, user_id: int) -> None:
        async with self.lock:
            seat = self._seat(user_id)
            self._check_playing()
            await self._finish(1 - seat, "resign")

    async def abort(self, user_id: int) -> None:
        async with self.lock:
            self._seat(user_id)
            self._check_playing()
            if self.state.ply >= CLOCK_STARTS_AT_PLY:
                raise refuse(ErrorCode.CONFLICT,
                             "a game can be aborted only before both players have moved",
                             self.game_id)
            await self._finish(None, "abort", ABORTED)

    async def claim_win(self, user_id: int) -> None:
        async with self.lock:
            seat = self._seat(user_id)
            self._check_playing()
            since = self.absent_since[1 - seat]
            if since is None and not self.present[1 - seat]:
                since = self.loaded_ms  # restored, and the opponent has not come back
            if since is None:
                raise refuse(ErrorCode.CONFLICT, "your opponent is connected", self.game_id)
            wait = since + self._grace_ms - now_ms()
            if wait > 0:
                exc = refuse(ErrorCode.CONFLICT,
                             f"your opponent may still come back: claim in {wait} ms",
                             self.game_id)
                exc.retry_after_ms = wait
                raise exc
            await self._finish(seat, "abandon")

    async def chat(self, user: Seat, text: str) -> None:
        async with self.lock:
            self._seat(user.user_id)
            seq = self.seq + 1
            await self._writer.submit(ChatSent(self.game_id, seq, user.user_id, text,
                                               ms_to_datetime(now_ms())))
            self.seq = seq
            self._broadcast(ChatMessage(game_id=self.game_id, seq=seq, from_=user.name,
                                        text=text))

    # -- the end ----------------------------------------------------------------------------
    async def _finish(self, winner: int | None, reason: str, status: str = OVER) -> None:
        """Store and announce the end of the game (caller holds the lock)."""
        now = now_ms()
        if self.clock.turn_started is not None and self.status == PLAYING:
            mover = self.state.to_move
            left = self.clock.left(mover, now, mover)
            if left is not None and self.control.CARRIES_OVER:
                self.clock.remaining[mover] = max(0, left)
        seq = self.seq + 1
        await self._writer.submit(GameFinished(self.game_id, winner, reason, seq,
                                               ms_to_datetime(now), status))  # type: ignore
        self._ended(winner, reason, status, seq)

    def _ended(self, winner: int | None, reason: str, status: str, seq: int) -> None:
        """The end is stored as event ``seq``: update the room and tell everyone."""
        self.seq = seq
        self.status = status
        self.result = Result(winner=winner, reason=reason)  # type: ignore[arg-type]
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._broadcast(GameOver(game_id=self.game_id, seq=self.seq,
                                 winner=winner, reason=reason))  # type: ignore[arg-type]
        self._metrics.games_finished.labels(reason=reason).inc()
        log.info("game over", extra={"game_id": self.game_id, "winner": winner,
                                     "reason": reason, "plies": self.state.ply})
        self._on_finished(self)

    # -- clocks ---------------------------------------------------------------------------------
    def _arm_timer(self) -> None:
        """Have ``_timeout`` run when the player to move runs out of time.

        A timer already set to fire no later is kept (it usually is: a Fischer player's
        flag only moves away): when it fires early, ``_timeout`` finds the flag not down yet
        and sets a new one. So a move does not cost a timer of its own.
        """
        flag = self.clock.flag_at(self.state.to_move)
        if flag is None or self.status != PLAYING:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            return
        if self._timer is not None:
            if self._timer_flag <= flag:
                return
            self._timer.cancel()
        self._timer_flag = flag
        self._timer = asyncio.get_running_loop().call_later(
            max(0.0, (flag - now_ms()) / 1000), self._flag_fell)

    def _flag_fell(self) -> None:
        self._timer = None
        task = asyncio.get_running_loop().create_task(self._timeout())
        _background.add(task)
        task.add_done_callback(_background.discard)

    async def _timeout(self) -> None:
        async with self.lock:
            if self.status != PLAYING:
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
            except Exception:
                log.exception("could not store a timeout", extra={"game_id": self.game_id})

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


_background: set[asyncio.Task[None]] = set()


def played_moves(rows: Iterable[tuple[int, str, int, int, int | None]]) -> list[PlayedMove]:
    """PlayedMove values from (ply, move, player, ms_used, clock_ms) rows."""
    return [PlayedMove(ply=p, move=m, by=b, ms_used=u, clock_ms=c)  # type: ignore[arg-type]
            for p, m, b, u, c in rows]
