"""The canaries of ``tessera siege``: honest users whose experience is the measurement.

- :class:`PingCanary`: a logged-in player sending ``ping`` every 200 ms;
- :class:`MoveCanary`: a game between two accounts, a move every 200 ms, a new game when
  one ends; it keeps the ledger of acknowledged moves that is compared with the database
  (on a cluster its players are on two nodes, so the game crosses nodes);
- :class:`HealthProbe`: ``GET /healthz`` every 250 ms, of every node of a cluster;
- :class:`BotCanary`: a player who challenges the bundled bot and plays it, game after
  game (``challenge-flood`` only).

Every sample carries the phase it was taken in (``quiet``, ``attack``, ``after``), read
from a shared :class:`Phase`.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from websockets.exceptions import ConnectionClosed, InvalidHandshake

import engine
import protocol as p

from ..connection import Connection, Disconnected, ServerError
from .raw import CANARY, close_reason, healthz

PERIOD_S = 0.2
REPLY_TIMEOUT_S = 10.0
NETWORK_ERRORS = (Disconnected, ConnectionClosed, OSError, InvalidHandshake,
                  asyncio.TimeoutError)
CANARY_GAME = ("hadron", {"size": 7})


class Phase:
    """The phase of the run, shared by every canary."""

    def __init__(self) -> None:
        self.name = "quiet"


@dataclass
class Samples:
    """Latencies (ms) by phase, and what went wrong by phase."""

    latency: dict[str, list[float]] = field(default_factory=dict)
    problems: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, phase: str, ms: float) -> None:
        self.latency.setdefault(phase, []).append(ms)

    def problem(self, phase: str, what: str) -> None:
        self.problems.setdefault(phase, Counter())[what] += 1

    def count(self, what: str, phases: tuple[str, ...]) -> int:
        return sum(self.problems.get(ph, Counter())[what] for ph in phases)

    def summary(self) -> dict[str, Any]:
        return {ph: {**stats(self.latency.get(ph, [])),
                     **dict(self.problems.get(ph, Counter()))}
                for ph in ("quiet", "attack", "after")}

    def during(self, phases: tuple[str, ...] = ("attack", "after")) -> list[float]:
        return [ms for ph in phases for ms in self.latency.get(ph, [])]


def stats(values: list[float]) -> dict[str, Any]:
    """n, p50, p99, max (ms, one decimal)."""
    if not values:
        return {"n": 0, "p50": None, "p99": None, "max": None}
    s = sorted(values)
    return {"n": len(s), "p50": round(s[len(s) // 2], 1),
            "p99": round(s[min(len(s) - 1, int(len(s) * 0.99))], 1), "max": round(s[-1], 1)}


@dataclass
class Account:
    name: str
    password: str
    token: str = ""


async def login(url: str, account: Account, source: str = CANARY) -> Connection:
    """A connection logged in as ``account`` (with its session token once it has one)."""
    conn = await Connection.open(url, client="tessera-siege-canary", local_addr=(source, 0),
                                 open_timeout=REPLY_TIMEOUT_S)
    try:
        if account.token:
            reply = await asyncio.wait_for(conn.call(p.AuthToken, token=account.token),
                                           REPLY_TIMEOUT_S)
        else:
            reply = await asyncio.wait_for(
                conn.call(p.Login, username=account.name, password=account.password),
                REPLY_TIMEOUT_S)
    except BaseException:
        await conn.close()
        raise
    assert isinstance(reply, p.Authed)
    account.token = reply.session_token
    return conn


class Canary:
    """A loop that runs until stopped, with its samples."""

    def __init__(self, url: str, phase: Phase) -> None:
        self.url = url
        self.phase = phase
        self.samples = Samples()
        self.stopping = False
        self.task: asyncio.Task[None] | None = None
        self.conns: list[Connection] = []  # open now; closed on stop

    def start(self) -> None:
        self.task = asyncio.create_task(self.run())

    async def stop_task(self) -> None:
        """Mark it stopping and cancel its task, waiting for the task to end."""
        self.stopping = True
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
            self.task = None

    async def stop(self) -> None:
        await self.stop_task()
        for conn in self.conns:
            await conn.close()
        self.conns = []

    async def run(self) -> None:
        raise NotImplementedError

    async def pause(self, since: float) -> None:
        await asyncio.sleep(max(0.0, PERIOD_S - (time.monotonic() - since)))


class PingCanary(Canary):
    def __init__(self, url: str, phase: Phase, account: Account) -> None:
        super().__init__(url, phase)
        self.account = account

    async def run(self) -> None:
        conn: Connection | None = None
        while not self.stopping:
            t0 = time.monotonic()
            try:
                if conn is None:
                    conn = await login(self.url, self.account)
                    self.conns = [conn]
                await asyncio.wait_for(conn.call(p.Ping), REPLY_TIMEOUT_S)
                self.samples.add(self.phase.name, (time.monotonic() - t0) * 1000)
            except ServerError as exc:
                self.samples.problem(self.phase.name, exc.code)
            except NETWORK_ERRORS as exc:
                if isinstance(exc, asyncio.TimeoutError):
                    self.samples.add(self.phase.name, (time.monotonic() - t0) * 1000)
                self.samples.problem(self.phase.name, "disconnects")
                self.samples.problem(self.phase.name, f"by:{close_reason(exc)}")
                if conn is not None:
                    await conn.close()
                conn = None
            await self.pause(t0)
        if conn is not None:
            await conn.close()


class MoveCanary(Canary):
    """Two accounts playing each other; both seats are driven from here, each player
    connected to their own of ``urls`` (the second accepts each challenge, so a game runs
    on the second's node; the same if both are one)."""

    def __init__(self, urls: tuple[str, str], phase: Phase, a: Account, b: Account,
                 seed: int = 1) -> None:
        super().__init__(urls[0], phase)
        self.urls = urls
        self.accounts = (a, b)
        self.acked: dict[tuple[str, int], str] = {}
        self.games = 0
        self.rng = random.Random(seed)

    async def run(self) -> None:
        conns: list[Connection] = []
        while not self.stopping:
            try:
                if not conns:
                    conns = [await login(url, acc)
                             for url, acc in zip(self.urls, self.accounts, strict=True)]
                    self.conns = list(conns)
                await self.play_one(conns)
            except ServerError as exc:
                self.samples.problem(self.phase.name, exc.code)
                await asyncio.sleep(PERIOD_S)
            except NETWORK_ERRORS as exc:
                self.samples.problem(self.phase.name, "disconnects")
                self.samples.problem(self.phase.name, f"by:{close_reason(exc)}")
                for c in conns:
                    await c.close()
                conns = []
                await asyncio.sleep(PERIOD_S)
        for c in conns:
            await c.close()

    async def play_one(self, conns: list[Connection]) -> None:
        game, options = CANARY_GAME
        created = await asyncio.wait_for(conns[0].call(
            p.Challenge, to=self.accounts[1].name, game=game, options=options,
            clock=p.Unlimited(), color=0), REPLY_TIMEOUT_S)
        assert isinstance(created, p.ChallengeCreated)
        await asyncio.wait_for(conns[1].call(p.AcceptChallenge,
                                             challenge_id=created.challenge_id),
                               REPLY_TIMEOUT_S)
        started = await conns[0].wait_for(p.GameStarted, timeout=REPLY_TIMEOUT_S)
        game_id = started.game_id
        state = engine.new_game(game, **options)
        self.games += 1
        while not state.is_over and not self.stopping:
            t0 = time.monotonic()
            move = state.random_move(self.rng).text
            try:
                ack = await asyncio.wait_for(conns[state.to_move].call(
                    p.Move, game_id=game_id, ply=state.ply, move=move), REPLY_TIMEOUT_S)
            except TimeoutError:
                self.samples.add(self.phase.name, (time.monotonic() - t0) * 1000)
                raise
            self.samples.add(self.phase.name, (time.monotonic() - t0) * 1000)
            assert isinstance(ack, p.MoveAck)
            self.acked[game_id, ack.ply] = move
            state = state.play(move)
            for c in conns:  # the other side's events: not needed, not kept
                while not c.events.empty():
                    if c.events.get_nowait() is None:
                        raise Disconnected("closed")
            await self.pause(t0)


class HealthProbe(Canary):
    """``GET /healthz`` of each of ``ports`` (one process's, or every node's) at once,
    every 250 ms: every answer in ``samples``, and each node's also in ``by_node``."""

    def __init__(self, url: str, phase: Phase, ports: list[int]) -> None:
        super().__init__(url, phase)
        self.ports = ports
        self.by_node = [Samples() for _ in ports]

    async def run(self) -> None:
        while not self.stopping:
            t0 = time.monotonic()
            await asyncio.gather(*(self.poll(port, node)
                                   for port, node in zip(self.ports, self.by_node,
                                                         strict=True)))
            await asyncio.sleep(max(0.0, 0.25 - (time.monotonic() - t0)))

    async def poll(self, port: int, node: Samples) -> None:
        t0 = time.monotonic()
        failure = await healthz(port)
        ms = (time.monotonic() - t0) * 1000
        for samples in (self.samples, node):
            if failure is None:
                samples.add(self.phase.name, ms)
            else:
                samples.problem(self.phase.name, "failures")
                samples.problem(self.phase.name, f"by:{failure}")


class BotCanary(Canary):
    """A player who challenges the bot (hadron 5, unlimited clock) and plays it out."""

    def __init__(self, url: str, phase: Phase, account: Account, bot: str) -> None:
        super().__init__(url, phase)
        self.account = account
        self.bot = bot
        self.finished: Counter[str] = Counter()
        self.declined: Counter[str] = Counter()
        self.rng = random.Random(2)
        self.challenge: int | None = None  # sent, not yet ended or become a game

    async def stop(self) -> None:
        """Stop, leaving the bot free when it is told to stop: the challenge in flight is
        withdrawn, and every game this player is in is resigned (found by ``list_games``:
        a challenge the bot accepted as it was withdrawn has a game the loop never saw)."""
        await self.stop_task()
        conn = self.conns[0] if self.conns else None
        if conn is not None and not conn.closed.is_set():
            with contextlib.suppress(ServerError, *NETWORK_ERRORS):
                if self.challenge is not None:
                    with contextlib.suppress(ServerError):
                        await asyncio.wait_for(conn.call(
                            p.CancelChallenge, challenge_id=self.challenge), REPLY_TIMEOUT_S)
                games = await asyncio.wait_for(conn.call(
                    p.ListGames, player=self.account.name, status="playing"), REPLY_TIMEOUT_S)
                assert isinstance(games, p.GameList)
                for game in games.games:
                    with contextlib.suppress(ServerError):
                        await asyncio.wait_for(conn.call(p.Resign, game_id=game.game_id),
                                               REPLY_TIMEOUT_S)
        self.challenge = None
        await super().stop()

    async def run(self) -> None:
        conn: Connection | None = None
        while not self.stopping:
            try:
                if conn is None:
                    conn = await login(self.url, self.account)
                    self.conns = [conn]
                await self.play_one(conn)
            except (ServerError, *NETWORK_ERRORS) as exc:
                self.samples.problem(self.phase.name, close_reason(exc) if not isinstance(
                    exc, ServerError) else exc.code)
                if conn is not None and conn.closed.is_set():
                    await conn.close()
                    conn = None
                await asyncio.sleep(0.5)
        if conn is not None:
            await conn.close()

    async def play_one(self, conn: Connection) -> None:
        t0 = time.monotonic()
        created = await asyncio.wait_for(conn.call(
            p.Challenge, to=self.bot, game="hadron", options={"size": 5},
            clock=p.Unlimited(), color=0), REPLY_TIMEOUT_S)
        assert isinstance(created, p.ChallengeCreated)
        self.challenge = created.challenge_id
        while True:
            event = await conn.next_event(timeout=30)
            if isinstance(event, p.ChallengeEnded) and \
                    event.challenge_id == created.challenge_id:
                self.challenge = None
                self.declined[event.reason] += 1
                await asyncio.sleep(0.5)
                return
            if isinstance(event, p.GameStarted):
                self.challenge = None
                break
        self.samples.add(self.phase.name, (time.monotonic() - t0) * 1000)  # time to a game
        game_id = event.game_id
        state = engine.new_game("hadron", size=5)
        while not state.is_over:
            if state.to_move == 0:
                move = state.random_move(self.rng).text
                await asyncio.wait_for(conn.call(p.Move, game_id=game_id, ply=state.ply,
                                                 move=move), REPLY_TIMEOUT_S)
                state = state.play(move)
                continue
            event = await conn.next_event(timeout=60)
            if isinstance(event, p.Moved) and event.game_id == game_id \
                    and event.ply == state.ply:
                state = state.play(event.move)
            elif isinstance(event, p.GameOver) and event.game_id == game_id:
                break
        self.finished[self.phase.name] += 1
