"""The bot runner: one connection to a server, any number of games, a bot's moves in them.

    runner = BotRunner(make_bot("mcts"), url="ws://127.0.0.1:8765/ws", token=TOKEN,
                       policy=Policy(max_games=4, seeks=(parse_seek("hadron 2s/move"),)))
    await runner.run()            # until runner.stop() and the games in progress are over

What it does, so that a bot only chooses moves:

- **Logs in** with ``auth_token`` (a bot token; never in the URL), or as a guest without one.
- **Accepts challenges** that the :class:`~clients.sdk.policy.Policy` allows while it has a
  free game slot, declines the others saying why, within a budget of their own
  (:mod:`~clients.sdk.challenges`); **keeps the policy's seeks open** while slots are free
  (:mod:`~clients.sdk.seeks`).
- **Plays each game in its own task** (:class:`~clients.sdk.game.GameSession`).
- **Reconnects** with exponential backoff, capped at 2 s, when the connection drops (server
  restart or network), logs in again with the session token and resumes every game it was playing,
  resending a move whose ``move_ack`` it never saw.
- **Stops cleanly**: :meth:`BotRunner.stop` withdraws the seeks, declines new challenges,
  lets the games in progress finish and then closes; ``stop(resign=True)`` resigns them.

The runner wires these parts: the connection loop, the dispatch of events by type
(:mod:`clients.events`) to the part that handles them, the results. Requests go through
:class:`~clients.sdk.requests.Requests` (the server's rate limit), bots come from a
:class:`~clients.sdk.botpool.BotPool` (one per game played at once, reused later).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import protocol as p
from clients import events
from clients.bots.base import Bot, Resign
from clients.connection import DEFAULT_URL, Connection

from .botpool import BotPool, BotSource
from .challenges import ChallengeDeclined, ChallengeDesk
from .game import GameResult, GameSession, Item, Results, Resync
from .link import RECONNECT_BACKOFF_S, FatalError, RunnerLink
from .policy import Policy
from .requests import Requests
from .seeks import SeekKeeper

log = logging.getLogger("clients.sdk")

SHUTDOWN_WAIT_S = 2.0  # for the runner's tasks to settle once the connection is closed

__all__ = ["BotRunner", "BotSource", "ChallengeDeclined", "FatalError", "GameResult", "Resign"]


class BotRunner:
    """Connects one bot (or a bot factory) to a server and plays by a policy."""

    def __init__(self, bot: BotSource, *, url: str = DEFAULT_URL, token: str | None = None,
                 policy: Policy | None = None, move_time_ms: int | None = None,
                 stop_after: int | None = None, client: str = "tessera-bot-sdk/1",
                 on_game_over: Callable[[GameResult], None] | None = None,
                 backoff_s: tuple[float, float] = RECONNECT_BACKOFF_S,
                 claim_abandoned: bool = True) -> None:
        self.policy = policy or Policy()
        self.move_time_ms = move_time_ms
        self.stop_after = stop_after
        self.claim_abandoned = claim_abandoned
        self.finished = Results(on_game_over)
        self.games: dict[str, GameSession] = {}
        self.seqs = p.GameSeqs()
        self.stopping = False
        self._off_ladder = False  # stopping: the server has answered ladder_leave
        self.bots = BotPool(bot, games_at_once=self.policy.max_games)
        self.requests = Requests(self.spawn)
        self.challenges = ChallengeDesk(
            self.requests, policy=lambda: self.policy, games_in_progress=self._playing,
            stopping=lambda: self.stopping, changed=self._slots_changed, spawn=self.spawn)
        self.seeks = SeekKeeper(
            self.requests, policy=lambda: self.policy, slots_used=self.active,
            stopping=lambda: self.stopping, settled=self._check_done)
        self.router = EventRouter(self)
        self.link = RunnerLink(url, token, client=client, backoff_s=backoff_s,
                               logged_in=self._logged_in, event=self._on_event,
                               caught_up=self._caught_up, lost=self.requests.detach)
        self._done = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- public API ----------------------------------------------------------------------------
    @property
    def results(self) -> list[GameResult]:
        """Every game finished so far, in the order they ended."""
        return self.finished.done

    @property
    def name(self) -> str:
        """The bot's user name on the server (known once logged in)."""
        user = self.link.user
        return user.name if user else "?"

    @property
    def ready(self) -> asyncio.Event:
        """Set once logged in (the first time)."""
        return self.link.ready

    @property
    def reconnects(self) -> int:
        """How many times the connection was lost and made again."""
        return self.link.reconnects

    def active(self) -> int:
        """Games in progress, and accepted challenges whose game has not started yet."""
        return self._playing() + self.challenges.pending_accepts()

    async def run(self) -> None:
        """Connect, play, reconnect as needed; return after :meth:`stop` once games are over.

        Raises :class:`FatalError` if the server refuses the token or the client.
        """
        seeker = self.spawn(self.seeks.run(self._done))
        try:
            await self.link.run(self._done)
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
            await self.bots.close()

    def stop(self, *, resign: bool = False) -> None:
        """Stop seeking and accepting; finish (or with ``resign``, resign) games; then end."""
        if not self.stopping:
            log.info("stopping: no new games; %d in progress will be %s", self.active(),
                     "resigned" if resign else "finished")
        first = not self.stopping
        self.stopping = True
        if self.requests.conn is None:
            self.seeks.disconnected_for_good()
            self._off_ladder = True  # the server forgets a bot's ladder on a disconnect
        elif first and self.policy.ladder:
            self.spawn(self._leave_ladder())
        self.seeks.wakeup.set()
        if resign:
            for game in self.games.values():
                if not game.over:
                    game.resign_soon("the bot is shutting down")
        self._check_done()

    async def challenge(self, to: str, game: str, options: dict[str, Any] | None = None,
                        clock: p.TimeControl | None = None, color: int | str = "random") -> str:
        """Challenge user ``to``; return the game id once accepted (``color``: our seat).

        Raises :class:`ChallengeDeclined` if it is declined or withdrawn (with the
        decliner's reason), ``ServerError`` if the server refuses it (e.g. ``not_found``:
        ``to`` is not online).
        """
        return await self.challenges.challenge(to, game, options, clock, color)

    async def result(self, game_id: str) -> GameResult:
        """The result of game ``game_id`` once it is over."""
        return await self.finished.wait(game_id)

    async def request(self, kind: type[Any], **fields: Any) -> p.ServerMessage:
        """A request on the current connection within the rate limit (see Requests)."""
        return await self.requests.request(kind, **fields)

    # -- connecting ----------------------------------------------------------------------------
    def _logged_in(self, conn: Connection, authed: p.Authed) -> None:
        """A connection is ready: use it, open seeks on it, resume every game."""
        self.requests.attach(conn, used=2)  # hello and the login
        self.seeks.connected(conn.welcome.limits if conn.welcome else None)
        if not self.link.ready.is_set():
            log.info("policy: %s", self.policy.describe())
        for game_id in authed.active_games:
            if game_id not in self.games and not self.finished.ended(game_id):
                self._start_session(game_id)
        for game in self.games.values():
            if not game.over:
                game.inbox.put_nowait(Resync())
        if self.policy.ladder and not self.stopping:  # the server forgets it on a disconnect
            self.spawn(self._join_ladder())
        wanted = self.policy.challengers
        if wanted is not None and wanted != (authed.challenge_policy or "everyone"):
            self.spawn(self._set_challengers(wanted))

    async def _set_challengers(self, policy: str) -> None:
        try:
            await self.request(p.SetChallengePolicy, policy=policy)
            log.info("the server lets %s challenge this bot", policy)
        except Exception as exc:
            log.error("could not choose who may challenge this bot: %s", exc)

    async def _join_ladder(self) -> None:
        try:
            await self.request(p.LadderJoin, games=self.policy.ladder)
            log.info("on the ladder of %s", ", ".join(self.policy.ladder))
        except Exception as exc:
            log.error("could not join the ladder: %s", exc)

    async def _leave_ladder(self) -> None:
        """Off the ladder before the bot may end: a game the server pairs it into meanwhile
        is started (and played) before the leave is answered."""
        try:
            await self.request(p.LadderLeave)
        except Exception as exc:  # disconnected: the server forgets the ladder then anyway
            log.info("leaving the ladder: %s", exc)
        self._off_ladder = True
        self._check_done()

    async def _answer_rematch(self, event: p.RematchOffered) -> None:
        """Accept an opponent's rematch offer if the policy says so and a slot is free;
        else decline it saying why."""
        why = self._rematch_refusal()
        try:
            if why is None:
                await self.request(p.AcceptRematch, game_id=event.game_id)
            else:
                log.info("declining the rematch of %s: %s", event.game_id, why)
                await self.request(p.DeclineRematch, game_id=event.game_id, message=why)
        except Exception as exc:  # e.g. our own offer, or it lapsed meanwhile
            log.info("rematch of %s not %s: %s", event.game_id,
                     "accepted" if why is None else "declined", exc)

    def _rematch_refusal(self) -> str | None:
        """Why this bot declines a rematch now (None: it accepts)."""
        if not self.policy.rematches:
            return "this bot does not play rematches (it runs without --rematch)"
        if self.stopping:
            return "the bot is shutting down"
        busy = self.active()
        if busy >= self.policy.max_games:
            return f"busy: playing {busy} of at most {self.policy.max_games} games"
        return None

    def _on_event(self, event: p.ServerMessage) -> None:
        try:
            events.dispatch(event, self.router, self.challenges, self.seeks)
        except events.UnhandledEvent as e:
            log.error("%s", e)

    def _caught_up(self) -> None:
        if self.stopping:
            self._check_done()

    # -- games ---------------------------------------------------------------------------------
    def route(self, game_id: str, item: Item) -> None:
        """Put a game's event in its session's inbox (starting the session if need be)."""
        if self.finished.ended(game_id):
            return
        game = self.games.get(game_id) or self._start_session(game_id)
        game.inbox.put_nowait(item)

    def _playing(self) -> int:
        """Games in progress as the server has told them: a game stops counting when the
        connection reads its ``game_over``, before any later frame is handled (its task may
        still be telling the bot), so a challenge sent after the game ended finds it free."""
        return sum(not (g.over or g.ended) for g in self.games.values())

    def ended_at_server(self, game_id: str) -> None:
        """The connection has read that game ``game_id`` is over: its slot is free."""
        game = self.games.get(game_id)
        if game is not None and not game.ended:
            game.ended = True
            self._slots_changed()

    async def take_bot(self) -> Bot:
        """A bot for a game starting: an idle one, the one of a game that has just ended
        (once its task has told it so), or a new one."""
        return await self.bots.take(coming_back=lambda: any(
            g.ended and g.bot is not None for g in self.games.values()))

    def _start_session(self, game_id: str) -> GameSession:
        game = GameSession(self, game_id)
        self.games[game_id] = game
        game.task = self.spawn(game.run())
        return game

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        """Run ``coro`` as one of the runner's tasks (cancelled when it ends)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("internal error in the runner", exc_info=task.exception())

    def _slots_changed(self) -> None:
        self.seeks.wakeup.set()
        self._check_done()

    def game_ended(self, game: GameSession, result: GameResult | None) -> None:
        """A game's task is over: record its result, free its slot, tell who waits."""
        self.games.pop(game.game_id, None)
        self.seqs.forget(game.game_id)
        self.finished.add(game.game_id, result)
        if self.stop_after is not None and len(self.results) >= self.stop_after:
            if not self.stopping:
                log.info("played %d games: stopping", len(self.results))
            self.stop()
        self._slots_changed()

    def _check_done(self) -> None:
        """Done when stopping, every game's task has ended and no accepted game is due."""
        if (self.stopping and not self.games and self.challenges.pending_accepts() == 0
                and self.seeks.withdrawn and (self._off_ladder or not self.policy.ladder)):
            self._done.set()


class EventRouter:
    """The runner's event sink (:mod:`clients.events`) for all but the challenges (the
    :class:`~clients.sdk.challenges.ChallengeDesk`'s) and ``seek_taken`` (the
    :class:`~clients.sdk.seeks.SeekKeeper`'s): a game's events go to its session, a new game
    settles the challenge it came from, the lobby's events are not needed."""

    def __init__(self, runner: BotRunner) -> None:
        self.runner = runner

    def on_game_state(self, event: p.GameState) -> None:
        self.runner.route(event.game.game_id, event)
        if event.game.result is not None:
            self.runner.ended_at_server(event.game.game_id)

    def on_game_started(self, event: p.GameStarted) -> None:
        runner = self.runner
        if event.game_id not in runner.games:  # a challenge's game, or a seek's
            runner.challenges.settle(runner.name, event.snapshot)
        runner.route(event.game_id, event)

    def on_moved(self, event: p.GameEvent) -> None:
        self.runner.route(event.game_id, event)

    def on_game_over(self, event: p.GameOver) -> None:
        self.runner.route(event.game_id, event)
        self.runner.ended_at_server(event.game_id)

    on_chat_message = on_opponent_left = on_opponent_back = on_moved

    def on_error(self, event: p.ErrorReply) -> None:  # answers a request it could not read
        log.warning("server error for no known request: %s: %s", event.code, event.message)

    def on_rematch_offered(self, event: p.RematchOffered) -> None:
        result = self.runner.finished.result_of(event.game_id)
        if result is None or result.seat != event.by:  # not our own offer
            self.runner.spawn(self.runner._answer_rematch(event))

    on_seek_added = on_seek_removed = on_player_online = on_player_offline = events.ignore
    on_rematch_ended = events.ignore
