"""Botcheck's own players: accounts on its private server, played by the script.

A :class:`Side` is one account's connection, which it makes again after the server
restarts (and then resumes its games and the lobby); it keeps what the server told it: its
games (:class:`GameView`), how its challenges and rematch offers ended, and, for the side
that watches the lobby, who is online and what they seek. Every side wakes the one
:class:`Hub`, where the scenarios wait for what they expect (:meth:`Hub.until`), with a
timeout and a line that says what did not happen.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import engine
import protocol as p
from clients import events
from clients.connection import Connection, Disconnected, ServerError

CONNECT_TIMEOUT_S = 30.0  # for botcheck's own side to get back onto a restarted server
LobbyEvent = p.PlayerOnline | p.PlayerOffline | p.SeekAdded | p.SeekRemoved


class Failed(Exception):
    """A scenario failed; the message says why, for the table."""


@dataclass
class GameView:
    """One game as a side was told it: the position, its moves (with when each was seen),
    who left it, and how it ended."""

    game_id: str
    snapshot: p.Snapshot  # as it started (or as a resume found it)
    state: engine.State
    seq: int
    moves: list[p.PlayedMove] = field(default_factory=list)
    seen: list[float] = field(default_factory=list)  # time.monotonic() each move was seen
    left: list[int] = field(default_factory=list)  # the seat of each opponent_left
    result: p.Result | None = None

    @classmethod
    def of(cls, snapshot: p.Snapshot) -> GameView:
        view = cls(snapshot.game_id, snapshot,
                   engine.new_game(snapshot.game, **snapshot.options), 0)
        view.refresh(snapshot)
        return view

    @property
    def over(self) -> bool:
        return self.result is not None

    def seat_of(self, name: str) -> int:
        return [u.name.lower() for u in self.snapshot.players].index(name.lower())

    def refresh(self, snapshot: p.Snapshot) -> None:
        """Take a full snapshot (a resume's): the moves not seen yet are added. One older
        than the events applied already (read before they were) changes nothing."""
        if snapshot.seq < self.seq:
            return
        now = time.monotonic()
        for played in snapshot.moves[len(self.moves):]:
            self.state = self.state.play(played.move)
            self.moves.append(played)
            self.seen.append(now)
        self.seq, self.result = snapshot.seq, snapshot.result

    def apply(self, event: p.GameEvent) -> bool:
        """Fold a game event in (False after a gap: resume then)."""
        if event.seq <= self.seq:
            return True
        if event.seq != self.seq + 1:
            return False
        self.seq = event.seq
        if isinstance(event, p.Moved):
            self.state = self.state.play(event.move)
            clock = event.clocks_ms[event.by] if event.clocks_ms else None
            self.moves.append(p.PlayedMove(ply=event.ply, move=event.move, by=event.by,
                                           ms_used=event.ms_used, clock_ms=clock))
            self.seen.append(time.monotonic())
        elif isinstance(event, p.GameOver):
            self.result = p.Result(winner=event.winner, reason=event.reason,
                                   ending=event.ending)
        elif isinstance(event, p.OpponentLeft):
            self.left.append(event.player)
        return True

    def moves_by(self, seat: int) -> list[p.PlayedMove]:
        return [m for m in self.moves if m.by == seat]


class Hub:
    """Where the scenarios wait: every side's news wakes it; ``alive`` says whether the bot
    under test still runs (a wait ends at once, failed, when it stops)."""

    def __init__(self, alive: Callable[[], str | None]) -> None:
        self.alive = alive  # None while the bot runs, else how it ended
        self.changed = asyncio.Event()

    def wake(self) -> None:
        self.changed.set()

    async def until(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        """Wait until ``done()``; Failed naming ``what`` after ``timeout`` seconds, or as
        soon as the bot's process has ended."""
        deadline = time.monotonic() + timeout
        while True:
            self.changed.clear()
            if done():
                return
            ended = self.alive()
            if ended is not None:
                raise Failed(f"the bot's process {ended} while botcheck waited for {what}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failed(f"{what}: not within {timeout:g} s")
            with contextlib.suppress(TimeoutError):  # the process is looked at every second
                await asyncio.wait_for(self.changed.wait(), min(left, 1.0))


@dataclass(frozen=True, slots=True)
class Answer:
    """How a challenge or a rematch offer ended: ``reason`` (accepted, declined, ...), the
    other's ``message``, the game it made, and how long the answer took."""

    reason: str
    message: str | None
    game_id: str | None
    seconds: float


class Side:
    """One of botcheck's accounts: its connection (made again after a restart), its games,
    its challenges and offers, and (``lobby``) who is online and what they seek."""

    def __init__(self, hub: Hub, url: str, name: str, token: str, *, seed: int,
                 lobby: bool = False) -> None:
        self.hub = hub
        self.url = url
        self.name = name
        self.token = token
        self.rng = random.Random(seed)
        self.watch_lobby = lobby
        self.conn: Connection | None = None
        self.games: dict[str, GameView] = {}
        self.challenges: dict[int, p.ChallengeEnded] = {}
        self.rematches: dict[str, p.RematchEnded] = {}
        self.online: set[str] = set()
        self.seeks: dict[int, p.OpenSeek] = {}
        self.refused: Counter[str] = Counter()  # the error codes our own requests drew
        self._pump: asyncio.Task[None] | None = None
        self._backlog: list[LobbyEvent] | None = None

    # -- the connection ------------------------------------------------------------------------
    async def connect(self, timeout: float = CONNECT_TIMEOUT_S) -> None:
        """Connect and log in (again: after a restart), resume the games in progress and
        subscribe to the lobby if this side watches it; retries until ``timeout``."""
        await self.close()
        deadline = time.monotonic() + timeout
        while True:
            try:
                conn = await Connection.open(self.url, client="tessera-botcheck/1")
                break
            except (OSError, Disconnected, TimeoutError):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)
        self.conn = conn
        self.challenges.clear()  # a server started again numbers challenges from 1 again
        await self.call(p.AuthToken, token=self.token)
        self._pump = asyncio.create_task(self._read(conn))
        for view in list(self.games.values()):
            if not view.over:
                await self._resume(view)
        if self.watch_lobby:
            self._backlog = []  # lobby events read before the reply: newer than its page
            lobby = await self.call(p.LobbySubscribe)
            assert isinstance(lobby, p.Lobby)
            self.online = {u.name.lower() for u in lobby.players}
            self.seeks = {s.seek_id: s for s in lobby.seeks}
            backlog, self._backlog = self._backlog, None
            for event in backlog:
                self._lobby(event)
        self.hub.wake()

    async def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            await conn.close()
        if self._pump is not None:
            await asyncio.gather(self._pump, return_exceptions=True)
            self._pump = None

    @property
    def port(self) -> int | None:
        """The local port of this side's connection (to tell its sockets from the bot's)."""
        if self.conn is None:
            return None
        port: int = self.conn.ws.local_address[1]
        return port

    async def call(self, kind: type[Any], **fields: Any) -> p.ServerMessage:
        """A request on the current connection, sent again as long as the server answers
        ``rate_limited`` (after the wait it names); every refusal is counted, and any other
        is raised."""
        while True:
            if self.conn is None:
                raise Disconnected("not connected")
            try:
                return await self.conn.call(kind, **fields)
            except ServerError as e:
                self.refused[e.code] += 1
                if e.code != p.ErrorCode.RATE_LIMITED:
                    raise
                await asyncio.sleep((e.retry_after_ms or 100) / 1000)

    async def _read(self, conn: Connection) -> None:
        try:
            while True:
                event = await conn.next_event()
                events.dispatch(event, self)
                self.hub.wake()
        except Disconnected:
            self.hub.wake()

    async def _resume(self, view: GameView) -> None:
        reply = await self.call(p.Resume, game_id=view.game_id, since_seq=view.seq)
        if isinstance(reply, p.GameState):
            view.refresh(reply.game)

    # -- games ---------------------------------------------------------------------------------
    def view(self, game_id: str) -> GameView:
        return self.games[game_id]

    def my_turn(self, view: GameView) -> bool:
        return not view.over and view.state.to_move == view.seat_of(self.name)

    def choose(self, view: GameView) -> str:
        """A random legal move (the seeded ``rng``); one that is not a pass when there is
        one, so that the game goes on long enough for the scenario."""
        moves = view.state.legal_moves()
        placing = [m for m in moves if str(m) != "pass"]
        return str(self.rng.choice(placing or moves))

    async def move(self, view: GameView) -> p.MoveAck:
        """Play a move (:meth:`choose`) at the game's ply; the ack, once the view has it."""
        ack = await self.call(p.Move, game_id=view.game_id, ply=view.state.ply,
                              move=self.choose(view))
        assert isinstance(ack, p.MoveAck)
        await self.hub.until(lambda: view.over or view.state.ply > ack.ply, CONNECT_TIMEOUT_S,
                             f"{self.name}'s own move at ply {ack.ply}")
        return ack

    async def resign_unfinished(self) -> None:
        """Resign every game of this side still in progress (a failed scenario's)."""
        for view in self.games.values():
            if not view.over and self.conn is not None:
                with contextlib.suppress(ServerError, Disconnected):
                    await self.call(p.Resign, game_id=view.game_id)

    # -- challenges and rematches ---------------------------------------------------------------
    async def challenge(self, to: str, game: str, options: dict[str, int | str],
                        clock: p.TimeControl, color: int, timeout: float) -> Answer:
        """Challenge ``to`` (``color``: our seat) and wait for the answer; a challenge not
        answered within ``timeout`` is withdrawn (reason ``unanswered``)."""
        known = set(self.games)
        started = time.monotonic()
        created = await self.call(p.Challenge, to=to, game=game, options=options, clock=clock,
                                  color=color)
        assert isinstance(created, p.ChallengeCreated)
        cid = created.challenge_id
        if not await self._answered(lambda: cid in self.challenges, timeout, functools.partial(
                self.call, p.CancelChallenge, challenge_id=cid)):
            return Answer("unanswered", None, None, timeout)
        ended = self.challenges[cid]
        new = [g for g in self.games if g not in known]
        return Answer(ended.reason, ended.message, new[0] if ended.reason == "accepted" and new
                      else None, time.monotonic() - started)

    async def _answered(self, came: Callable[[], bool], timeout: float,
                        withdraw: Callable[[], Awaitable[p.ServerMessage]]) -> bool:
        """Whether the answer came (``came()``) within ``timeout``; if not, the offer is
        withdrawn (``withdraw()``). Failed if the bot's process ends meanwhile."""
        try:
            await self.hub.until(came, timeout, "an answer")
        except Failed:
            if self.hub.alive() is not None:
                raise
            await withdraw()
            return False
        return True

    async def accept_seek(self, seek_id: int) -> GameView:
        """Take an open seek: the game it became."""
        known = set(self.games)
        await self.call(p.AcceptSeek, seek_id=seek_id)
        await self.hub.until(lambda: len(self.games) > len(known), CONNECT_TIMEOUT_S,
                             f"the game of seek {seek_id}")
        return next(view for game_id, view in self.games.items() if game_id not in known)

    async def offer_rematch(self, game_id: str, timeout: float) -> Answer:
        """Offer a rematch of ``game_id`` and wait for the answer (``unanswered``: none
        within ``timeout``; the offer is then withdrawn)."""
        started = time.monotonic()
        await self.call(p.OfferRematch, game_id=game_id)
        if not await self._answered(lambda: game_id in self.rematches, timeout,
                                    functools.partial(self.call, p.DeclineRematch,
                                                      game_id=game_id)):
            return Answer("unanswered", None, None, timeout)
        ended = self.rematches[game_id]
        return Answer(ended.reason, ended.message, ended.new_game_id,
                      time.monotonic() - started)

    # -- events (clients.events) ------------------------------------------------------------------
    def on_game_started(self, event: p.GameStarted) -> None:
        if event.game_id not in self.games:
            self.games[event.game_id] = GameView.of(event.snapshot)

    def on_game_state(self, event: p.GameState) -> None:
        view = self.games.get(event.game.game_id)
        if view is not None:
            view.refresh(event.game)

    def on_moved(self, event: p.GameEvent) -> None:
        view = self.games.get(event.game_id)
        if view is not None and not view.apply(event) and self.conn is not None:
            asyncio.get_running_loop().create_task(self._resume(view))

    on_game_over = on_opponent_left = on_opponent_back = on_chat_message = on_moved

    def on_challenge_ended(self, event: p.ChallengeEnded) -> None:
        self.challenges[event.challenge_id] = event

    def on_rematch_ended(self, event: p.RematchEnded) -> None:
        self.rematches[event.game_id] = event

    def on_player_online(self, event: LobbyEvent) -> None:
        if self._backlog is not None:
            self._backlog.append(event)
        else:
            self._lobby(event)

    on_player_offline = on_seek_added = on_seek_removed = on_player_online

    def _lobby(self, event: LobbyEvent) -> None:
        """Who is online and what is sought, after a lobby event."""
        if isinstance(event, p.PlayerOnline):
            self.online.add(event.user.name.lower())
        elif isinstance(event, p.PlayerOffline):
            self.online.discard(event.name.lower())
        elif isinstance(event, p.SeekAdded):
            self.seeks[event.seek.seek_id] = event.seek
        else:
            self.seeks.pop(event.seek_id, None)

    def on_challenge_received(self, event: p.ChallengeReceived) -> None:
        pass  # botcheck's sides only send challenges

    on_seek_taken = on_rematch_offered = on_error = on_challenge_received
