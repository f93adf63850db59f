"""One game a bot plays: its position, its clock, its bot, and the task that plays it.

A :class:`GameSession` gets the game's events in its inbox (the runner routes them there by
``game_id``) and handles them by type (:mod:`clients.events`): it folds ``moved`` events
into an ``engine.State`` (``protocol.GameSeqs`` drops repeats and notices gaps, which it
repairs with ``resume``), computes the :class:`~clients.bots.base.TimeBudget` from the
clock, runs ``bot.choose_move`` in a worker thread so the connection stays responsive, and
sends the move with its ply. An illegal move or a bot that raises resigns the game (with
the reason in the log); ``stale_ply`` and the like resynchronise with ``resume``; an
opponent who leaves and stays away is claimed against once the server allows it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import engine
import protocol as p
from clients import events
from clients.bots.base import Bot, Resign, TimeBudget, margin_ms
from clients.bridge import EngineBot
from clients.connection import Disconnected, ServerError

from .specs import budget_for

if TYPE_CHECKING:
    from .runner import BotRunner

log = logging.getLogger("clients.sdk")

LATENCY_MS = 50  # kept back from every clock for the network and the runner (at most)
ENDED_KEPT = 1000  # ids of finished games remembered, to ignore their late events
CLAIM_MARGIN_S = 0.5  # claim an abandoned game this long after the server allows it


@dataclass(frozen=True, slots=True)
class GameResult:
    """A finished game as the runner saw it; ``winner`` is a seat, None if aborted."""

    game_id: str
    game: str
    options: dict[str, int | str]
    clock: p.TimeControl
    players: tuple[str, str]
    seat: int
    winner: int | None
    reason: str
    moves: tuple[str, ...]
    ending: str | None = None
    """How the rules decided it (reason ``normal``), in the engine's words."""

    @property
    def won(self) -> bool | None:
        """True if the bot won, False if it lost, None if the game was aborted."""
        return None if self.winner is None else self.winner == self.seat

    @property
    def opponent(self) -> str:
        return self.players[1 - self.seat]


class Results:
    """The games a runner finished: their results in order, who waits for one, and the ids
    of the last :data:`ENDED_KEPT` games ended (their late events are ignored)."""

    def __init__(self, on_game_over: Callable[[GameResult], None] | None = None) -> None:
        self.done: list[GameResult] = []
        self.on_game_over = on_game_over
        self._waiters: dict[str, list[asyncio.Future[GameResult]]] = {}
        self._ended: OrderedDict[str, GameResult | None] = OrderedDict()

    def ended(self, game_id: str) -> bool:
        return game_id in self._ended

    def result_of(self, game_id: str) -> GameResult | None:
        """The result of a game ended lately (None if unknown or not played)."""
        return self._ended.get(game_id)

    def add(self, game_id: str, result: GameResult | None) -> None:
        """Game ``game_id`` ended (``result`` None: it could not be played)."""
        self._ended[game_id] = result
        while len(self._ended) > ENDED_KEPT:
            self._ended.popitem(last=False)
        if result is None:
            return
        self.done.append(result)
        if self.on_game_over is not None:
            try:
                self.on_game_over(result)
            except Exception:
                log.exception("on_game_over failed")
        for future in self._waiters.pop(game_id, []):
            if not future.done():
                future.set_result(result)

    async def wait(self, game_id: str) -> GameResult:
        """The result of game ``game_id`` once it is over."""
        done = self._ended.get(game_id)
        if done is not None:
            return done
        future: asyncio.Future[GameResult] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(game_id, []).append(future)
        return await future


@dataclass(frozen=True, slots=True)
class Resync:
    """Inbox item: resume the game (after a reconnect, or when the session asks)."""

    since_zero: bool = False


@dataclass(frozen=True, slots=True)
class SendAgain:
    """Inbox item: send again the move the server did not store (``not_stored``)."""


Item = (p.GameStarted | p.Moved | p.GameOver | p.ChatMessage | p.OpponentLeft
        | p.OpponentBack | p.GameState | Resync | SendAgain)


class GameSession:
    """One game the bot plays: its state, its clock, its bot, and the task that plays it."""

    def __init__(self, runner: BotRunner, game_id: str) -> None:
        self.runner = runner
        self.game_id = game_id
        self.inbox: asyncio.Queue[Item] = asyncio.Queue()
        self.task: asyncio.Task[Any] | None = None
        self.snapshot: p.Snapshot | None = None
        self.state: engine.State | None = None
        self.seat = 0
        self.bot: Bot | None = None
        self.clocks_ms: tuple[int, int] | None = None
        self.clocks_at = 0.0
        self.over = False  # the task is done with the game (it read game_over, or gave up)
        self.ended = False  # the connection read the game's game_over (the task may not yet)
        self.result: p.Result | None = None
        self.unacked: tuple[int, str] | None = None  # a move sent but not seen played
        self.resend = False
        self.resigning: str | None = None
        self._claim: asyncio.TimerHandle | None = None

    # -- the game loop -------------------------------------------------------------------------
    async def run(self) -> None:
        result: GameResult | None = None
        try:
            await self._play()
            result = self._result()
        finally:
            if self._claim is not None:
                self._claim.cancel()
            if self.bot is not None:
                try:
                    winner = self.result.winner if self.result else None
                    if isinstance(self.bot, EngineBot):  # engines are told why, too
                        reason = self.result.reason if self.result else None
                        await asyncio.to_thread(self.bot.game_over, winner, reason)
                    else:
                        await asyncio.to_thread(self.bot.game_over, winner)
                except Exception:
                    log.exception("%s: the bot's game_over failed", self.game_id)
                self.runner.bots.give_back(self.bot)
                self.bot = None
            self.over = True
            self.runner.game_ended(self, result)

    async def _play(self) -> None:
        getter: asyncio.Task[Item] | None = None
        think: asyncio.Task[str] | None = None
        think_ply = -1
        try:
            while not self.over:
                if think is None and self._may_think():
                    assert self.state is not None
                    think_ply = self.state.ply
                    think = asyncio.create_task(self._think(self.state))
                if getter is None:
                    getter = asyncio.create_task(self.inbox.get())
                waiting = {t for t in (getter, think) if t is not None}
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    item = getter.result()
                    getter = None
                    await self._handle(item)
                if think is not None and think.done():
                    finished, think = think, None
                    await self._thought(finished, think_ply)
                if self.resend and self._my_turn() and self.unacked is not None:
                    await self._send_move(*self.unacked)
        finally:
            if getter is not None:
                getter.cancel()
            if think is not None:  # the bot must be idle before it hears the game is over
                with contextlib.suppress(BaseException):
                    await think

    def _my_turn(self) -> bool:
        return (self.state is not None and not self.over and not self.state.is_over
                and self.state.to_move == self.seat and self.resigning is None)

    def _may_think(self) -> bool:
        if not self._my_turn():
            return False
        assert self.state is not None
        return self.unacked is None or self.unacked[0] < self.state.ply

    async def _think(self, state: engine.State) -> str:
        assert self.bot is not None and self.snapshot is not None
        left: int | None = None
        if self.clocks_ms is not None:
            waited = (time.monotonic() - self.clocks_at) * 1000
            reading = self.clocks_ms[self.seat] - waited
            left = int(reading - margin_ms(reading, LATENCY_MS))
        budget = budget_for(self.snapshot.clock, left, self.runner.move_time_ms)
        return await asyncio.to_thread(self._choose, self.bot, state, budget)

    @staticmethod
    def _choose(bot: Bot, state: engine.State, budget: TimeBudget) -> str:
        return bot.choose_move(state, budget)

    async def _thought(self, finished: asyncio.Task[str], ply: int) -> None:
        """The bot has answered for ``ply``: send the move if the game is still there."""
        try:
            move = finished.result()
        except Resign as e:
            log.info("%s: the bot resigns: %s", self.game_id, e.reason)
            await self._resign(f"the bot resigned ({e.reason})")
            return
        except Exception:
            log.exception("%s: the bot failed to choose a move; resigning", self.game_id)
            await self._resign("the bot raised an exception")
            return
        if not self._my_turn() or self.state is None or self.state.ply != ply:
            return  # the game moved on (resync, game over) while the bot thought
        try:
            text = self.state.parse_move(move).text
        except (engine.IllegalMove, TypeError, AttributeError) as e:
            log.error("%s: the bot chose an illegal move %r at ply %d: %s; resigning",
                      self.game_id, move, ply, e)
            await self._resign(f"illegal move {move!r}")
            return
        await self._send_move(ply, text)

    async def _send_move(self, ply: int, text: str) -> None:
        self.unacked = (ply, text)
        self.resend = False
        try:
            await self.runner.request(p.Move, game_id=self.game_id, ply=ply, move=text)
        except Disconnected:
            return  # resent after the reconnect's resume
        except ServerError as e:
            if e.code == p.ErrorCode.NOT_STORED:  # nothing happened: the same move, later
                wait_s = (e.retry_after_ms or 1000) / 1000
                log.info("%s: move %s at ply %d not stored by the server; sending it again "
                         "in %.1f s", self.game_id, text, ply, wait_s)
                asyncio.get_running_loop().call_later(
                    wait_s, self.inbox.put_nowait, SendAgain())
            elif e.code == p.ErrorCode.ILLEGAL_MOVE:
                log.error("%s: the server refused %s at ply %d as illegal: %s; resigning",
                          self.game_id, text, ply, e.message)
                await self._resign(f"illegal move {text!r}")
            else:  # stale_ply, not_your_turn, game_over, not_found: catch up with the server
                log.info("%s: move %s at ply %d refused (%s); resynchronising",
                         self.game_id, text, ply, e)
                self.unacked = None
                await self._resync()

    async def _resign(self, why: str) -> None:
        self.resigning = why
        try:
            await self.runner.request(p.Resign, game_id=self.game_id)
        except Disconnected:
            return  # resigned again after the reconnect
        except ServerError as e:
            log.info("%s: resign refused (%s); resynchronising", self.game_id, e)
            await self._resync()

    def resign_soon(self, why: str) -> None:
        """Resign from outside the game's task (shutdown)."""
        if self.resigning is None and not self.over:
            self.resigning = why
            self.runner.spawn(self._resign(why))

    # -- events --------------------------------------------------------------------------------
    async def _handle(self, item: Item) -> None:
        if isinstance(item, SendAgain):
            self.resend = self.unacked is not None  # unless played or given up meanwhile
            return
        if isinstance(item, Resync):
            await self._resync(since_zero=item.since_zero)
            if self.resigning is not None and not self.over:
                await self._resign(self.resigning)
            return
        await events.dispatch(item, self)

    async def _fresh(self, event: p.GameEvent) -> bool:
        """Is ``event`` new (not a repeat)? A gap before it is repaired with ``resume``."""
        verdict = self.runner.seqs.observe(event)
        if verdict == "gap":
            log.info("%s: missed events before seq %d; resuming", self.game_id, event.seq)
            await self._resync()
        return verdict == "new"

    # -- events (clients.events) ---------------------------------------------------------------
    async def on_game_state(self, event: p.GameState) -> None:
        self.runner.seqs.snapshot(event)
        await self._load(event.game)

    async def on_game_started(self, event: p.GameStarted) -> None:
        if await self._fresh(event):
            await self._load(event.snapshot)

    async def on_moved(self, event: p.Moved) -> None:
        if await self._fresh(event):
            self._moved(event)

    async def on_game_over(self, event: p.GameOver) -> None:
        if await self._fresh(event):
            self._over(p.Result(winner=event.winner, reason=event.reason, ending=event.ending))

    async def on_chat_message(self, event: p.ChatMessage) -> None:
        if await self._fresh(event):
            log.info("%s: %s says: %s", self.game_id, event.from_, event.text)

    async def on_opponent_left(self, event: p.OpponentLeft) -> None:
        self._presence(event)  # presence notices count whatever their seq says
        await self._fresh(event)

    async def on_opponent_back(self, event: p.OpponentBack) -> None:
        self._presence(event)
        await self._fresh(event)

    def _moved(self, event: p.Moved) -> None:
        if self.state is None or event.ply != self.state.ply:
            log.info("%s: move at ply %d does not follow our ply %s; resuming", self.game_id,
                     event.ply, None if self.state is None else self.state.ply)
            self.runner.seqs.forget(self.game_id)
            self.inbox.put_nowait(Resync(since_zero=True))
            return
        try:
            self.state = self.state.play(event.move)
        except engine.IllegalMove as e:
            log.error("%s: the server's move %s is illegal here (%s); reloading the game",
                      self.game_id, event.move, e)
            self.runner.seqs.forget(self.game_id)
            self.inbox.put_nowait(Resync(since_zero=True))
            return
        if event.clocks_ms is not None:
            self.clocks_ms = event.clocks_ms
            self.clocks_at = time.monotonic()
        if self.unacked is not None and self.unacked[0] < self.state.ply:
            self.unacked = None

    async def _load(self, snapshot: p.Snapshot) -> None:
        """Take a full snapshot (game start, or after a resume that could not replay)."""
        me = self.runner.name.lower()
        players = [u.name.lower() for u in snapshot.players]
        if me not in players:
            log.warning("%s: not our game (players %s); ignoring it", self.game_id, players)
            self.over = True
            return
        first = self.snapshot is None
        self.snapshot, self.seat = snapshot, players.index(me)
        try:
            self.state = engine.replay(snapshot.game, snapshot.options,
                                       [m.move for m in snapshot.moves])
        except (ValueError, engine.IllegalMove) as e:
            log.error("%s: cannot replay the game: %s; resigning", self.game_id, e)
            self.state = None
            await self._resign("the game cannot be replayed here")
            return
        self.clocks_ms = snapshot.clocks_ms
        self.clocks_at = time.monotonic()
        if self.unacked is not None and self.unacked[0] < self.state.ply:
            self.unacked = None
        if first:
            opponent = snapshot.players[1 - self.seat].name
            log.info("%s: %s %s against %s, we are seat %d%s", self.game_id, snapshot.game,
                     " ".join(f"{k}={v}" for k, v in snapshot.options.items()), opponent,
                     self.seat, f" (resumed at ply {self.state.ply})" if snapshot.ply else "")
        if snapshot.result is not None:
            self._over(snapshot.result)
            return
        if self.bot is None:
            try:
                self.bot = await self.runner.take_bot()
                await asyncio.to_thread(self.bot.new_game, snapshot.game,
                                        dict(snapshot.options), self.seat)
            except Exception:
                log.exception("%s: the bot's new_game failed; resigning", self.game_id)
                await self._resign("the bot could not start the game")

    def _over(self, result: p.Result) -> None:
        self.over = True
        self.result = result
        if result.winner is None:
            outcome = "aborted"
        else:
            outcome = "won" if result.winner == self.seat else "lost"
        log.info("%s: game over: %s (%s) after %d plies", self.game_id, outcome, result.reason,
                 self.state.ply if self.state else 0)

    def _presence(self, event: p.OpponentLeft | p.OpponentBack) -> None:
        if event.player == self.seat:
            return
        if self._claim is not None:
            self._claim.cancel()
            self._claim = None
        if isinstance(event, p.OpponentLeft) and self.runner.claim_abandoned:
            delay = event.claim_after_ms / 1000 + CLAIM_MARGIN_S
            log.info("%s: the opponent left; claiming the game in %.1f s unless they return",
                     self.game_id, delay)
            self._claim = asyncio.get_running_loop().call_later(
                delay, lambda: self.runner.spawn(self._claim_win()))

    async def _claim_win(self) -> None:
        self._claim = None
        if self.over:
            return
        try:
            await self.runner.request(p.ClaimWin, game_id=self.game_id)
            log.info("%s: claimed the game: the opponent did not come back", self.game_id)
        except ServerError as e:
            if e.retry_after_ms:
                self._claim = asyncio.get_running_loop().call_later(
                    e.retry_after_ms / 1000 + CLAIM_MARGIN_S,
                    lambda: self.runner.spawn(self._claim_win()))
        except Disconnected:
            pass

    # -- resynchronising -----------------------------------------------------------------------
    async def _resync(self, *, since_zero: bool = False) -> None:
        """``resume`` from the last applied seq (0: the whole game as a snapshot)."""
        since = 0 if since_zero or self.state is None else self.runner.seqs.last(self.game_id)
        try:
            reply = await self.runner.request(p.Resume, game_id=self.game_id, since_seq=since)
        except Disconnected:
            return  # the reconnect resumes again
        except ServerError as e:
            if e.code == p.ErrorCode.NOT_FOUND:
                log.error("%s: the server has no such game; giving it up", self.game_id)
                self.over = True
            else:
                log.warning("%s: resume failed: %s", self.game_id, e)
            return
        if isinstance(reply, p.GameState):
            self.runner.seqs.snapshot(reply)
            await self._load(reply.game)
        self.resend = self.unacked is not None

    def _result(self) -> GameResult | None:
        snap, result = self.snapshot, self.result
        if snap is None or result is None:
            return None
        return GameResult(
            game_id=self.game_id, game=snap.game, options=dict(snap.options), clock=snap.clock,
            players=(snap.players[0].name, snap.players[1].name), seat=self.seat,
            winner=result.winner, reason=result.reason,
            moves=self.state.moves if self.state is not None else (),
            ending=result.ending.text if result.ending is not None else None)
