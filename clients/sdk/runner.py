"""The bot runner: one connection to a server, any number of games, a bot's moves in them.

    runner = BotRunner(make_bot("mcts"), url="ws://127.0.0.1:8765/ws", token=TOKEN,
                       policy=Policy(max_games=4, seeks=(parse_seek("hadron per_move 2s"),)))
    await runner.run()            # until runner.stop() and the games in progress are over

What it does, so that a bot only chooses moves:

- **Logs in** with ``auth_token`` (a bot token; never in the URL), or as a guest without one.
- **Accepts challenges** that the :class:`~clients.sdk.policy.Policy` allows while it has a
  free game slot, declines the others; **keeps the policy's seeks open** while slots are free.
- **Plays each game in its own task**: it folds ``moved`` events into an ``engine.State``
  (``protocol.GameSeqs`` drops repeats and notices gaps, which it repairs with ``resume``),
  computes the :class:`~clients.bots.base.TimeBudget` from the clock, runs
  ``bot.choose_move`` in a worker thread so the connection stays responsive, and sends the
  move with its ply. An illegal move or a bot that raises resigns the game (with the reason
  in the log); ``stale_ply`` and the like resynchronise with ``resume``; an opponent who
  leaves and stays away is claimed against once the server allows it.
- **Reconnects** with exponential backoff when the connection drops (server restart or
  network), logs in again with the session token and resumes every game it was playing,
  resending a move whose ``move_ack`` it never saw.
- **Stops cleanly**: :meth:`BotRunner.stop` withdraws the seeks, declines new challenges,
  lets the games in progress finish and then closes; ``stop(resign=True)`` resigns them.

Each game gets its own bot object: the one given for the first game, copies
(``copy.deepcopy``, reseeded) or the factory's products for games played at the same time.
A bot is reused for later games once its game is over; :meth:`close` is called on bots
that have one (engine bridges) when the runner ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import random
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import websockets

import engine
import protocol as p
from clients.bots.base import Bot, Resign, TimeBudget
from clients.bridge import EngineBot
from clients.connection import DEFAULT_URL, Connection, Disconnected, ServerError

from .policy import Policy
from .specs import SeekSpec, budget_for

log = logging.getLogger("clients.sdk")


BotSource = Bot | Callable[[], Bot]
LATENCY_MS = 50  # kept back from every clock for the network and the runner
SEEK_REFRESH_S = 30.0  # seeks are checked against the lobby at least this often
CLAIM_MARGIN_S = 0.5  # claim an abandoned game this long after the server allows it
RATE_LIMIT_RETRIES = 20
REQUEST_TIMEOUT_S = 30.0  # a request unanswered this long: reconnect and resume
RATE_SHARE = 0.8  # of the server's advertised request rate that the runner uses
FATAL_CLOSE_CODES = {p.CLOSE_POLICY_VIOLATION, p.CLOSE_TOO_BIG}
ACCEPT_WAIT_S = 30.0  # an accepted challenge holds a game slot until its game starts
ENDED_KEPT = 1000  # ids of finished games remembered, to ignore their late events
SHUTDOWN_WAIT_S = 2.0  # for the runner's tasks to settle once the connection is closed


async def wait_event(event: asyncio.Event, timeout: float) -> None:
    """Wait until ``event`` is set or ``timeout`` seconds pass.

    Unlike ``asyncio.wait_for`` on Python 3.11, a cancellation arriving just as the event
    is set is never swallowed.
    """
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({waiter}, timeout=timeout)
    finally:
        waiter.cancel()


class _Throttle:
    """A client-side token bucket that keeps requests under the server's advertised rate,
    so that they are not refused with ``rate_limited`` in the first place (a bot that
    moves at once in several games would otherwise hit the limit all the time)."""

    def __init__(self, rate: float = 10.0, burst: float = 10.0) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp = time.monotonic()

    async def take(self) -> None:
        while True:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.tokens >= 1.0:
                self.tokens -= 1.0
                return
            await asyncio.sleep((1.0 - self.tokens) / self.rate)


class FatalError(Exception):
    """The runner cannot go on: the token was refused, or the server closed with 1008."""


class ChallengeDeclined(Exception):
    """A challenge sent with :meth:`BotRunner.challenge` was declined or cancelled."""


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

    @property
    def won(self) -> bool | None:
        """True if the bot won, False if it lost, None if the game was aborted."""
        return None if self.winner is None else self.winner == self.seat

    @property
    def opponent(self) -> str:
        return self.players[1 - self.seat]


@dataclass(frozen=True, slots=True)
class _Resync:
    """Inbox item: resume the game (after a reconnect, or when the runner asks)."""

    since_zero: bool = False


@dataclass(frozen=True, slots=True)
class _Accepted:
    """A challenge this runner accepted whose ``game_started`` has not come yet."""

    sender: str
    game: str
    options: dict[str, Any]
    clock: p.TimeControl
    since: float


@dataclass(slots=True)
class _Outgoing:
    """A challenge this runner sent and whose game it waits for."""

    to: str
    game: str
    options: dict[str, Any]
    clock: p.TimeControl
    color: int | str
    future: asyncio.Future[str] = field(repr=False)


_Item = (p.GameStarted | p.Moved | p.GameOver | p.ChatMessage | p.OpponentLeft
         | p.OpponentBack | p.GameState | _Resync)


class BotRunner:
    """Connects one bot (or a bot factory) to a server and plays by a policy."""

    def __init__(self, bot: BotSource, *, url: str = DEFAULT_URL, token: str | None = None,
                 policy: Policy | None = None, move_time_ms: int | None = None,
                 stop_after: int | None = None, client: str = "tessera-bot-sdk/1",
                 on_game_over: Callable[[GameResult], None] | None = None,
                 backoff_s: tuple[float, float] = (1.0, 30.0),
                 claim_abandoned: bool = True) -> None:
        self.url = url
        self.token = token
        self.policy = policy or Policy()
        self.move_time_ms = move_time_ms
        self.stop_after = stop_after
        self.client = client
        self.on_game_over = on_game_over
        self.backoff_s = backoff_s
        self.claim_abandoned = claim_abandoned
        self.conn: Connection | None = None
        self.user: p.User | None = None
        self.session_token: str | None = None
        self.ready = asyncio.Event()  # set once logged in (the first time)
        self.results: list[GameResult] = []
        self.games: dict[str, GameSession] = {}
        self.reconnects = 0
        self.seqs = p.GameSeqs()
        self.stopping = False
        self._bot_source = bot
        self._pristine: Bot | None = None
        if isinstance(bot, Bot):
            try:  # copied now, before it plays: games played at once each need a bot
                self._pristine = copy.deepcopy(bot)
            except Exception as e:
                if self.policy.max_games > 1:
                    raise TypeError(f"cannot copy {bot!r} to play several games at once ({e}); "
                                    "pass a factory (a function returning a new bot)") from e
        self._bots_made: list[Bot] = []
        self._idle: list[Bot] = []
        self._accepted: dict[int, _Accepted] = {}
        self._outgoing: dict[int, _Outgoing] = {}
        self._waiters: dict[str, list[asyncio.Future[GameResult]]] = {}
        self._finished: OrderedDict[str, GameResult | None] = OrderedDict()
        self._seek_wakeup = asyncio.Event()
        self._seek_cursor = 0
        # Stopping, the runner is done only once the server has let go of its seeks: a seek
        # taken meanwhile starts a game (announced before the cancel's reply), played too.
        self._seeks_withdrawn = not self.policy.seeks
        # This connection's seeks, counted: made, withdrawn, and turned into games. A seek
        # neither withdrawn nor a game yet when stopping was taken: its game is on its way.
        self._seeks_made = self._seeks_cancelled = self._seek_games = 0
        self._games_due_since: float | None = None
        self._done = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._max_open_seeks = 5
        self._throttle = _Throttle()

    # -- public API ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The bot's user name on the server (known once logged in)."""
        return self.user.name if self.user else "?"

    def active(self) -> int:
        """Games in progress, and accepted challenges whose game has not started yet."""
        now = time.monotonic()
        for cid in [c for c, a in self._accepted.items() if now - a.since > ACCEPT_WAIT_S]:
            del self._accepted[cid]  # the game never came: the slot is free again
        return sum(not g.over for g in self.games.values()) + len(self._accepted)

    async def run(self) -> None:
        """Connect, play, reconnect as needed; return after :meth:`stop` once games are over.

        Raises :class:`FatalError` if the server refuses the token or the client.
        """
        seeker = self._spawn(self._seek_loop())
        try:
            await self._connection_loop()
        finally:
            seeker.cancel()
            # The connection is closed: requests still in flight fail at once. Let them
            # (a task cancelled inside a send would leave its reply future unawaited).
            settling = [t for t in self._tasks if t is not seeker]
            if settling:
                await asyncio.wait(settling, timeout=SHUTDOWN_WAIT_S)
            for task in list(self._tasks):
                task.cancel()
            if self._tasks:
                await asyncio.wait(list(self._tasks), timeout=SHUTDOWN_WAIT_S)
            await self._close_bots()

    def stop(self, *, resign: bool = False) -> None:
        """Stop seeking and accepting; finish (or with ``resign``, resign) games; then end."""
        if not self.stopping:
            log.info("stopping: no new games; %d in progress will be %s", self.active(),
                     "resigned" if resign else "finished")
        self.stopping = True
        if self.conn is None:
            self._seeks_withdrawn = True  # a connection's seeks go with it
        self._seek_wakeup.set()
        if resign:
            for game in self.games.values():
                if not game.over:
                    game.resign_soon("the bot is shutting down")
        self._check_done()

    async def challenge(self, to: str, game: str, options: dict[str, Any] | None = None,
                        clock: p.TimeControl | None = None, color: int | str = "random") -> str:
        """Challenge user ``to``; return the game id once accepted (``color``: our seat).

        Raises :class:`ChallengeDeclined` if it is declined or withdrawn, ``ServerError`` if
        the server refuses it (e.g. ``not_found``: ``to`` is not online).
        """
        clock = clock or p.Unlimited()
        request = p.Challenge(id=0, to=to, game=game, options=dict(options or {}), clock=clock,
                              color=color)  # type: ignore[arg-type]
        reply = await self.request(p.Challenge, to=to, game=game, options=request.options,
                                   clock=clock, color=color)
        assert isinstance(reply, p.ChallengeCreated)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._outgoing[reply.challenge_id] = _Outgoing(to.lower(), game, dict(request.options),
                                                       clock, color, future)
        return await future

    async def result(self, game_id: str) -> GameResult:
        """The result of game ``game_id`` once it is over."""
        done = self._finished.get(game_id)
        if done is not None:
            return done
        future: asyncio.Future[GameResult] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(game_id, []).append(future)
        return await future

    async def request(self, kind: type[Any], **fields: Any) -> p.ServerMessage:
        """``conn.call`` on the current connection, waiting out ``rate_limited`` refusals.

        Raises ``Disconnected`` when there is no connection.
        """
        for _ in range(RATE_LIMIT_RETRIES):
            await self._throttle.take()
            conn = self._require_conn()
            try:
                return await asyncio.wait_for(conn.call(kind, **fields), REQUEST_TIMEOUT_S)
            except TimeoutError:
                log.warning("no reply to %s within %.0f s; reconnecting", kind.TAG,
                            REQUEST_TIMEOUT_S)
                self._spawn(conn.close())
                raise Disconnected("no reply") from None
            except ServerError as e:
                if e.code != p.ErrorCode.RATE_LIMITED:
                    raise
                await asyncio.sleep((e.retry_after_ms or 100) / 1000)
        raise ServerError(p.error_reply(p.ErrorCode.RATE_LIMITED, "still rate limited"))

    # -- connecting ----------------------------------------------------------------------------
    def _require_conn(self) -> Connection:
        if self.conn is None:
            raise Disconnected("not connected")
        return self.conn

    async def _connection_loop(self) -> None:
        delay = self.backoff_s[0]
        while not self._done.is_set():
            try:
                conn = await self._connect()
            except FatalError:
                raise
            except (OSError, TimeoutError, Disconnected, ServerError,
                    websockets.exceptions.WebSocketException) as e:
                log.warning("cannot connect to %s: %s; retrying in %.1f s", self.url,
                            e or type(e).__name__, delay)
                await wait_event(self._done, delay)
                delay = min(delay * 2, self.backoff_s[1])
                continue
            delay = self.backoff_s[0]
            try:
                await self._serve(conn)
            finally:
                self.conn = None
                await conn.close()
            code = conn.ws.close_code
            if code in FATAL_CLOSE_CODES:
                raise FatalError(f"the server closed the connection with {code} "
                                 f"({conn.ws.close_reason or 'policy violation'})")
            if not self._done.is_set():
                self.reconnects += 1
                log.warning("connection lost (close code %s); reconnecting", code)

    async def _connect(self) -> Connection:
        conn = await Connection.open(self.url, client=self.client)
        try:
            authed = await self._login(conn)
        except BaseException:
            await conn.close()
            raise
        first = self.user is None
        self.user, self.session_token = authed.user, authed.session_token
        if conn.welcome is not None:
            limits = conn.welcome.limits
            self._max_open_seeks = limits.max_open_seeks
            # hello and the login have used two of this connection's requests already
            self._throttle = _Throttle(RATE_SHARE * limits.rate_per_s,
                                       max(1.0, RATE_SHARE * limits.burst - 2))
        self.conn = conn
        self._seeks_made = self._seeks_cancelled = self._seek_games = 0
        log.info("%s as %s (%s) on %s", "logged in" if first else "reconnected",
                 authed.user.name, authed.user.kind, self.url)
        if first:
            log.info("policy: %s", self.policy.describe())
        self.ready.set()
        for game_id in authed.active_games:
            if game_id not in self.games and game_id not in self._finished:
                self._start_session(game_id)
        for game in self.games.values():
            if not game.over:
                game.inbox.put_nowait(_Resync())
        self._seek_wakeup.set()
        return conn

    async def _login(self, conn: Connection) -> p.Authed:
        tokens = [t for t in (self.session_token, self.token) if t]
        if not tokens:
            reply = await conn.call(p.Guest)
            assert isinstance(reply, p.Authed)
            return reply
        candidates = list(dict.fromkeys(tokens))  # the session token first, then the bot's
        for i, token in enumerate(candidates):
            try:
                reply = await conn.call(p.AuthToken, token=token)
            except ServerError as e:
                if e.code not in (p.ErrorCode.UNAUTHORIZED, p.ErrorCode.INVALID_CREDENTIALS,
                                  p.ErrorCode.FORBIDDEN, p.ErrorCode.BAD_REQUEST):
                    raise
                if i + 1 == len(candidates):
                    raise FatalError(f"the server refused the token: {e}") from None
                continue
            assert isinstance(reply, p.Authed)
            return reply
        raise FatalError("no token to log in with")

    async def _serve(self, conn: Connection) -> None:
        """Dispatch the connection's events until it closes or the runner is done."""
        reader = asyncio.create_task(self._dispatch(conn))
        done = asyncio.create_task(self._done.wait())
        try:
            await asyncio.wait({reader, done}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            done.cancel()
            if not reader.done():
                await conn.close()
            with contextlib.suppress(Exception):
                await reader

    async def _dispatch(self, conn: Connection) -> None:
        while True:
            try:
                event = await conn.next_event()
            except Disconnected:
                return
            self._on_event(event)
            if self.stopping and conn.events.empty():
                self._check_done()  # events read before a reply are dispatched by now

    def _on_event(self, event: p.ServerMessage) -> None:
        if isinstance(event, p.ChallengeReceived):
            self._spawn(self._on_challenge(event))
        elif isinstance(event, p.ChallengeEnded):
            self._on_challenge_ended(event)
        elif isinstance(event, p.GameState):
            self._route(event.game.game_id, event)
        elif isinstance(event, p.GameStarted | p.Moved | p.GameOver | p.ChatMessage |
                        p.OpponentLeft | p.OpponentBack):
            if (isinstance(event, p.GameStarted) and event.game_id not in self.games
                    and not self._match_challenge(event.snapshot)):
                self._seek_games += 1
                if self.stopping and not self._seeks_withdrawn:
                    self._seek_wakeup.set()  # perhaps the game it was waiting for
            self._route(event.game_id, event)
        elif isinstance(event, p.ErrorReply):  # answers a request the server could not read
            log.warning("server error for no known request: %s: %s", event.code, event.message)
        # lobby events (seek_added, player_online, ...) are not needed

    def _route(self, game_id: str, item: _Item) -> None:
        if game_id in self._finished:
            return
        game = self.games.get(game_id) or self._start_session(game_id)
        game.inbox.put_nowait(item)

    def _start_session(self, game_id: str) -> GameSession:
        game = GameSession(self, game_id)
        self.games[game_id] = game
        game.task = self._spawn(game.run())
        return game

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("internal error in the runner", exc_info=task.exception())

    # -- challenges ------------------------------------------------------------------------------
    async def _on_challenge(self, ch: p.ChallengeReceived) -> None:
        sender = ch.from_.name
        reason = self.policy.refusal(sender, ch.game, ch.options, ch.clock)
        if reason is None and self.stopping:
            reason = "the bot is shutting down"
        if reason is None and self.active() >= self.policy.max_games:
            reason = f"busy: playing {self.active()} of at most {self.policy.max_games} games"
        try:
            if reason is not None:
                log.info("declining challenge %d from %s (%s): %s", ch.challenge_id, sender,
                         ch.game, reason)
                await self.request(p.DeclineChallenge, challenge_id=ch.challenge_id)
                return
            log.info("accepting challenge %d from %s: %s", ch.challenge_id, sender, ch.game)
            # the server may answer before game_started: the slot is taken until it comes
            self._accepted[ch.challenge_id] = _Accepted(sender.lower(), ch.game,
                                                        dict(ch.options), ch.clock,
                                                        time.monotonic())
            await self.request(p.AcceptChallenge, challenge_id=ch.challenge_id)
        except (ServerError, Disconnected) as e:
            self._accepted.pop(ch.challenge_id, None)
            log.info("challenge %d from %s: %s", ch.challenge_id, sender, e)
        self._seek_wakeup.set()

    def _on_challenge_ended(self, event: p.ChallengeEnded) -> None:
        outgoing = self._outgoing.get(event.challenge_id)
        if outgoing is None or event.reason == "accepted":
            return
        del self._outgoing[event.challenge_id]
        if not outgoing.future.done():
            outgoing.future.set_exception(ChallengeDeclined(
                f"challenge to {outgoing.to} was {event.reason}"))

    def _match_challenge(self, snapshot: p.Snapshot) -> bool:
        """A new game may come from a challenge: the oldest one it fits is settled.

        Returns whether it did (if not, the game comes from a seek).
        """
        me = self.name.lower()
        players = [u.name.lower() for u in snapshot.players]
        if me not in players:
            return False
        seat = players.index(me)
        offer = (players[1 - seat], snapshot.game, dict(snapshot.options), snapshot.clock)
        for cid, acc in self._accepted.items():
            if (acc.sender, acc.game, acc.options, acc.clock) == offer:
                del self._accepted[cid]
                return True
        for cid, out in self._outgoing.items():
            if (out.to, out.game, out.options, out.clock) == (
                    players[1 - seat], snapshot.game, dict(snapshot.options), snapshot.clock
            ) and out.color in ("random", seat):
                del self._outgoing[cid]
                if not out.future.done():
                    out.future.set_result(snapshot.game_id)
                return True
        return False

    # -- seeks ---------------------------------------------------------------------------------
    async def _seek_loop(self) -> None:
        while not self._done.is_set():
            await wait_event(self._seek_wakeup, SEEK_REFRESH_S
                             if self._games_due_since is None else 1.0)
            self._seek_wakeup.clear()
            if self.conn is None or not self.policy.seeks:
                continue
            try:
                await self._reconcile_seeks()
            except (ServerError, Disconnected) as e:
                log.info("could not update seeks: %s", e)

    async def _reconcile_seeks(self) -> None:
        """Make the open seeks on the server match what the free game slots call for."""
        specs = self.policy.seeks
        free = self.policy.max_games - self.active()
        stopping = self.stopping  # as of the listing below
        want = 0 if stopping else max(0, min(len(specs), free, self._max_open_seeks))
        lobby = await self.request(p.LobbySubscribe)
        with contextlib.suppress(ServerError):
            await self.request(p.LobbyUnsubscribe)
        assert isinstance(lobby, p.Lobby)
        me = self.name.lower()
        mine = [s for s in lobby.seeks if s.user.name.lower() == me]
        keep: list[SeekSpec] = []
        for seek in mine:
            spec = next((s for s in specs if s.matches(seek.game, seek.options, seek.clock)
                         and all(s is not k for k in keep)), None)
            if spec is not None and len(keep) < want:
                keep.append(spec)
                continue
            log.info("withdrawing seek %d (%s)", seek.seek_id, seek.game)
            with contextlib.suppress(ServerError):  # not_found: taken meanwhile
                await self.request(p.CancelSeek, seek_id=seek.seek_id)
                self._seeks_cancelled += 1
        if stopping:
            # Every seek of ours is gone from the lobby. One taken before the listing may
            # not be a game yet (the server announces it once the game's first commit is
            # done): wait for that many games, a while at most.
            due = self._seeks_made - self._seeks_cancelled - self._seek_games
            now = time.monotonic()
            if due > 0 and self._games_due_since is None:
                self._games_due_since = now
            if due > 0 and now - (self._games_due_since or now) < ACCEPT_WAIT_S:
                log.info("stopping: %d game(s) from taken seeks still to start", due)
                return
            self._games_due_since = None
            self._seeks_withdrawn = True
            # A game started before the replies is in the events not yet dispatched, or
            # already a game.
            if self.conn is None or self.conn.events.empty():
                self._check_done()
            return
        for _ in range(len(specs)):
            if len(keep) >= want:
                break
            spec = specs[self._seek_cursor % len(specs)]
            self._seek_cursor += 1
            if any(k is spec for k in keep):
                continue
            if self.stopping or self.policy.max_games - self.active() <= len(keep):
                break  # things changed while we were asking
            reply = await self.request(p.Seek, game=spec.game, options=spec.options,
                                       clock=spec.clock)
            assert isinstance(reply, p.SeekCreated)
            self._seeks_made += 1
            log.info("seeking %s (seek %d)", spec, reply.seek_id)
            keep.append(spec)

    # -- bots and the end of games -------------------------------------------------------------
    def _take_bot(self) -> Bot:
        if self._idle:
            return self._idle.pop()
        n = len(self._bots_made)
        if not isinstance(self._bot_source, Bot):
            bot = self._bot_source()
        elif n == 0:
            bot = self._bot_source
        else:
            if self._pristine is None:
                raise RuntimeError(f"a second game at once needs a copy of {self._bot_source!r}")
            bot = copy.deepcopy(self._pristine)
            seed = self._bot_source.seed
            bot.rng = random.Random(None if seed is None else f"{seed} copy {n}")
        self._bots_made.append(bot)
        return bot

    def _give_back(self, bot: Bot) -> None:
        self._idle.append(bot)

    async def _close_bots(self) -> None:
        for bot in self._bots_made:
            close = getattr(bot, "close", None)
            if callable(close):
                try:
                    await asyncio.to_thread(close)
                except Exception:
                    log.exception("closing %r failed", bot)

    def _game_ended(self, game: GameSession, result: GameResult | None) -> None:
        self.games.pop(game.game_id, None)
        self.seqs.forget(game.game_id)
        self._finished[game.game_id] = result
        while len(self._finished) > ENDED_KEPT:
            self._finished.popitem(last=False)
        if result is not None:
            self.results.append(result)
            if self.on_game_over is not None:
                try:
                    self.on_game_over(result)
                except Exception:
                    log.exception("on_game_over failed")
            for future in self._waiters.pop(game.game_id, []):
                if not future.done():
                    future.set_result(result)
            if self.stop_after is not None and len(self.results) >= self.stop_after:
                if not self.stopping:
                    log.info("played %d games: stopping", len(self.results))
                self.stop()
        self._seek_wakeup.set()
        self._check_done()

    def _check_done(self) -> None:
        if self.stopping and self.active() == 0 and self._seeks_withdrawn:
            self._done.set()


class GameSession:
    """One game the bot plays: its state, its clock, its bot, and the task that plays it."""

    def __init__(self, runner: BotRunner, game_id: str) -> None:
        self.runner = runner
        self.game_id = game_id
        self.inbox: asyncio.Queue[_Item] = asyncio.Queue()
        self.task: asyncio.Task[Any] | None = None
        self.snapshot: p.Snapshot | None = None
        self.state: engine.State | None = None
        self.seat = 0
        self.bot: Bot | None = None
        self.clocks_ms: tuple[int, int] | None = None
        self.clocks_at = 0.0
        self.over = False
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
                self.runner._give_back(self.bot)
            self.over = True
            self.runner._game_ended(self, result)

    async def _play(self) -> None:
        getter: asyncio.Task[_Item] | None = None
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
            left = int(self.clocks_ms[self.seat] - waited - LATENCY_MS)
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
            if e.code == p.ErrorCode.ILLEGAL_MOVE:
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
            self.runner._spawn(self._resign(why))

    # -- events --------------------------------------------------------------------------------
    async def _handle(self, item: _Item) -> None:
        if isinstance(item, _Resync):
            await self._resync(since_zero=item.since_zero)
            if self.resigning is not None and not self.over:
                await self._resign(self.resigning)
            return
        if isinstance(item, p.GameState):
            self.runner.seqs.snapshot(item)
            await self._load(item.game)
            return
        verdict = self.runner.seqs.observe(item)
        if isinstance(item, p.OpponentLeft | p.OpponentBack):
            self._presence(item)  # presence notices count whatever their seq says
        if verdict == "old":
            return
        if verdict == "gap":
            log.info("%s: missed events before seq %d; resuming", self.game_id, item.seq)
            await self._resync()
            return
        if isinstance(item, p.GameStarted):
            await self._load(item.snapshot)
        elif isinstance(item, p.Moved):
            self._moved(item)
        elif isinstance(item, p.GameOver):
            self._over(p.Result(winner=item.winner, reason=item.reason))
        elif isinstance(item, p.ChatMessage):
            log.info("%s: %s says: %s", self.game_id, item.from_, item.text)

    def _moved(self, event: p.Moved) -> None:
        if self.state is None or event.ply != self.state.ply:
            log.info("%s: move at ply %d does not follow our ply %s; resuming", self.game_id,
                     event.ply, None if self.state is None else self.state.ply)
            self.runner.seqs.forget(self.game_id)
            self.inbox.put_nowait(_Resync(since_zero=True))
            return
        try:
            self.state = self.state.play(event.move)
        except engine.IllegalMove as e:
            log.error("%s: the server's move %s is illegal here (%s); reloading the game",
                      self.game_id, event.move, e)
            self.runner.seqs.forget(self.game_id)
            self.inbox.put_nowait(_Resync(since_zero=True))
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
                self.bot = self.runner._take_bot()
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
                delay, lambda: self.runner._spawn(self._claim_win()))

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
                    lambda: self.runner._spawn(self._claim_win()))
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
            moves=self.state.moves if self.state is not None else ())
