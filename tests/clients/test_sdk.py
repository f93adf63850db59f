"""The bot SDK against a real server subprocess: bots play whole games of every game via
challenges and seeks, the policy declines what it should, a server crash mid-game is
survived, the engine bridge plays through the SDK, and ``tessera bot`` stops on signals.
Plus the text forms (clocks, seeks, game rules) and time budgets, without a server."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import engine
import protocol as p
from clients.bots.base import Bot, TimeBudget
from clients.bots.random_bot import RandomBot
from clients.connection import Connection, ServerError
from clients.sdk import BotRunner, GameResult, Policy, Resign, parse_seek
from clients.sdk.specs import budget_for, format_game_rules, parse_game_rules
from tests.clients.faulty_bots import CrashingBot, IllegalBot
from tests.clients.sdk_fixtures import ServerProcess, client, until

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_ENGINE = ROOT / "examples" / "random_engine.py"
EXAMPLE_BOT = ROOT / "examples" / "my_bot.py"
SMALL: dict[str, dict[str, Any]] = {"xodd": {"size": 5}, "yodd": {"size": 4}, "hadron": {"size": 5},
         "hexifact": {"board": "hex4"}}
CLOCK = p.PerMove(per_move_ms=10_000)


class SlowBot(RandomBot):
    """A random bot that takes ``delay`` seconds per move: games last long enough to
    interrupt."""

    name = "slow-random"

    def __init__(self, seed: int | None = None, delay: float = 0.03) -> None:
        super().__init__(seed)
        self.delay = delay

    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        time.sleep(self.delay)
        return super().choose_move(state, budget)


class ResigningBot(Bot):
    name = "resigning"

    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        raise Resign("no hope")


def make_runner(server: ServerProcess, name: str, bot: Bot | None = None,
                **kw: object) -> BotRunner:
    return BotRunner(bot or RandomBot(seed=len(name)), url=server.url,
                     token=server.tokens[name], backoff_s=(0.1, 0.5), **kw)  # type: ignore


@contextlib.asynccontextmanager
async def running(*runners: BotRunner) -> AsyncIterator[list[asyncio.Task[None]]]:
    """Run the runners for the block; then stop them and wait until they have ended."""
    tasks = [asyncio.create_task(r.run()) for r in runners]
    try:
        await asyncio.wait_for(asyncio.gather(*(r.ready.wait() for r in runners)), 15)
        yield tasks
    finally:
        for r in runners:
            r.stop(resign=True)
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 15)


async def until_ply(runner: BotRunner, game_id: str, plies: int) -> None:
    """Wait until ``runner`` has seen ``plies`` moves of its game ``game_id``."""
    def reached() -> bool:
        game = runner.games.get(game_id)
        return game is not None and game.state is not None and game.state.ply >= plies

    await until(reached, what=f"{plies} plies")


async def stored(server: ServerProcess, game_id: str) -> p.Record:
    conn = await client(server)
    try:
        reply = await conn.call(p.GetGame, game_id=game_id)
    finally:
        await conn.close()
    assert isinstance(reply, p.GameRecord)
    return reply.record


async def check_stored(server: ServerProcess, result: GameResult) -> None:
    """The server's record is the game the runner saw, and the rules agree on the winner."""
    record = await stored(server, result.game_id)
    assert record.status == "over"
    assert tuple(m.move for m in record.moves) == result.moves
    assert record.result is not None
    assert (record.result.winner, record.result.reason) == (result.winner, result.reason)
    if result.reason == "normal":
        final = engine.replay(result.game, result.options, result.moves)
        assert final.is_over and final.winner == result.winner
        assert final.ending is not None and result.ending == final.ending.text
    else:
        assert result.ending is None


# -- whole games ----------------------------------------------------------------------------------
async def test_challenged_games_of_every_game_are_played_to_the_end(
        server_proc: ServerProcess) -> None:
    alpha = make_runner(server_proc, "alpha", policy=Policy(max_games=4))
    beta = make_runner(server_proc, "beta", policy=Policy(max_games=4, accept_from=frozenset(
        {"alpha"})))
    async with running(alpha, beta):
        ids = await asyncio.gather(*(
            alpha.challenge("beta", game, options, CLOCK, color=i % 2)
            for i, (game, options) in enumerate(SMALL.items())))
        seen = await asyncio.wait_for(asyncio.gather(*(alpha.result(g) for g in ids)), 60)
        theirs = await asyncio.gather(*(beta.result(g) for g in ids))
    for i, (mine, other) in enumerate(zip(seen, theirs, strict=True)):
        assert mine.seat == i % 2 and other.seat == 1 - i % 2  # color = the challenger's seat
        assert mine.game == list(SMALL)[i] and mine.clock == CLOCK
        assert (mine.winner, mine.reason, mine.moves) == (other.winner, other.reason,
                                                          other.moves)
        assert mine.reason == "normal" and mine.opponent == "beta"
        await check_stored(server_proc, mine)


async def test_seeks_of_every_game_pair_up_while_game_slots_are_free(
        server_proc: ServerProcess) -> None:
    specs = (parse_seek("xodd size=5 10s/move"), parse_seek("yodd size=4 10s/move"),
             parse_seek("hadron 10s/move"), parse_seek("hexifact board=hex4 1m+1s"))
    runners = [make_runner(server_proc, name,
                           policy=Policy(max_games=len(specs), accept_from=frozenset(),
                                         seeks=specs))
               for name in ("epsilon", "zeta")]  # a game their seeks start as they stop
    # Each keeps every spec open while it has a free slot for each (with fewer slots than
    # specs, the two could each be seeking the specs the other is not, and wait for others).
    async with running(*runners):                      # must not meet other tests' bots
        await until(lambda: all({r.game for r in runner.results} == set(SMALL)
                                for runner in runners), 40, "a game of each kind")
        for runner in runners:
            runner.stop()  # no more seeks; the games in progress are finished
        await until(lambda: all(not r.active() for r in runners), 20, "the last games")
    for runner in runners:
        for r in runner.results:
            assert any(s.matches(r.game, r.options, r.clock) for s in specs)
            assert r.reason == "normal"
    await check_stored(server_proc, runners[0].results[0])
    conn = await client(server_proc)  # the seeks were withdrawn or went with the connection
    try:
        lobby = await conn.call(p.LobbySubscribe)
        assert isinstance(lobby, p.Lobby)
        assert not [s for s in lobby.seeks if s.user.name in ("epsilon", "zeta")]
    finally:
        await conn.close()


async def test_a_runner_stopping_waits_for_the_game_of_a_seek_taken_before_it_stopped(
        server_proc: ServerProcess) -> None:
    """The server takes a seek out of the lobby before the game's first commit, and only
    then announces the game; a runner stopping in between must wait for it and play it."""
    spec = parse_seek("hadron 10s/move")
    eta = make_runner(server_proc, "eta", policy=Policy(max_games=1, accept_from=frozenset(),
                                                       seeks=(spec,)))
    taker, watcher = await client(server_proc), await client(server_proc)
    task = asyncio.create_task(eta.run())
    writer_lock = sqlite3.connect(server_proc.directory / "sdk.db", isolation_level=None)
    try:
        async def eta_seek() -> int | None:
            lobby = await watcher.call(p.LobbySubscribe)  # the taker's requests wait
            assert isinstance(lobby, p.Lobby)
            return next((s.seek_id for s in lobby.seeks if s.user.name == "eta"), None)

        deadline = time.monotonic() + 15
        while (seek_id := await eta_seek()) is None:
            assert time.monotonic() < deadline, "eta never sought"
            await asyncio.sleep(0.05)
        # Hold SQLite's write lock: the game's first commit waits, the seek is taken.
        writer_lock.execute("BEGIN IMMEDIATE")
        accepted = await taker.send(p.AcceptSeek(id=taker.pending.next_id(), seek_id=seek_id))
        while await eta_seek() is not None:
            await asyncio.sleep(0.02)
        eta.stop()
        await asyncio.sleep(0.5)  # long enough for it to list the lobby and find nothing
        assert not task.done(), "the runner stopped before the game of its taken seek"
        writer_lock.execute("ROLLBACK")
        await asyncio.wait_for(accepted, 10)  # answered once the game has started
        while True:
            event = await taker.next_event(10)
            if isinstance(event, p.GameStarted):
                break
        await taker.call(p.Resign, game_id=event.game_id)
        await asyncio.wait_for(task, 15)
        assert [(r.game_id, r.reason, r.won) for r in eta.results] == [
            (event.game_id, "resign", True)]
    finally:
        if writer_lock.in_transaction:
            writer_lock.execute("ROLLBACK")
        writer_lock.close()
        eta.stop(resign=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 15)
        await taker.close()
        await watcher.close()


# -- the policy ------------------------------------------------------------------------------------
async def test_the_policy_declines_games_clocks_senders_and_a_busy_bot(
        server_proc: ServerProcess) -> None:
    policy = Policy(games=parse_game_rules("hadron:size=5..7"),
                    time_controls=frozenset({"per_move"}), max_games=1,
                    accept_from=frozenset({"delta", "beta"}))
    gamma = make_runner(server_proc, "gamma", SlowBot(seed=1, delay=0.2), policy=policy)
    delta, alpha = await client(server_proc, "delta"), await client(server_proc, "alpha")

    started: list[p.GameStarted] = []

    async def offer(conn: Connection, game: str, options: dict[str, object],
                    clock: p.TimeControl) -> tuple[str, str | None]:
        """Challenge gamma; its answer and why (a game_started seen on the way is kept)."""
        created = await conn.call(p.Challenge, to="gamma", game=game, options=options,
                                  clock=clock)
        assert isinstance(created, p.ChallengeCreated)
        while True:
            event = await conn.next_event(10)
            if isinstance(event, p.GameStarted):
                started.append(event)
            if isinstance(event, p.ChallengeEnded) and (
                    event.challenge_id == created.challenge_id):
                return event.reason, event.message

    try:
        async with running(gamma):
            assert await offer(delta, "xodd", {}, CLOCK) == (
                "declined", "xodd is not played (plays hadron)")
            assert await offer(delta, "hadron", {"size": 9}, CLOCK) == (
                "declined", "hadron size=9 is not played (size: 5..7)")
            assert await offer(delta, "hadron", {"size": 5}, p.Fischer(
                base_ms=60_000, increment_ms=0)) == (
                "declined", "1m+0s is not played (per_move)")
            assert await offer(alpha, "hadron", {"size": 5}, CLOCK) == (
                "declined", "challenges from alpha are not accepted")
            assert await offer(delta, "hadron", {"size": 6}, CLOCK) == ("accepted", None)
            assert await offer(delta, "hadron", {"size": 7}, CLOCK) == (
                "declined", "busy: playing 1 of at most 1 games")
            (game,) = started
            await delta.call(p.Resign, game_id=game.game_id)
            result = await asyncio.wait_for(gamma.result(game.game_id), 10)
            assert result.won and result.reason == "resign"
    finally:
        await delta.close()
        await alpha.close()


class SlowStarter(RandomBot):
    """A random bot whose ``new_game`` waits until ``go`` is set: its game's task is held
    there while the game's later events queue up in its inbox."""

    name = "slow-starter"

    def __init__(self) -> None:
        super().__init__(seed=1)
        self.starting = threading.Event()
        self.go = threading.Event()

    def new_game(self, game: str, options: dict[str, Any], seat: int) -> None:
        self.starting.set()
        self.go.wait(20)


async def test_a_challenge_sent_after_game_over_is_accepted_though_the_game_task_lags(
        server_proc: ServerProcess) -> None:
    """The slot of a game is free once the connection has read its ``game_over``, whether
    or not the game's task has (issue 23.15): a challenger who challenges the moment it sees
    ``game_over`` is accepted by a bot playing at most one game, here while the task of the
    game that ended is still held in the bot's ``new_game``."""
    bot = SlowStarter()
    eta = make_runner(server_proc, "eta", bot, policy=Policy(max_games=1))
    delta = await client(server_proc, "delta")

    async def answer(challenge_id: int) -> tuple[str, str | None, str | None]:
        """How eta answered: the reason, the decline's message, the game if accepted."""
        game_id = None
        while True:
            event = await delta.next_event(10)
            if isinstance(event, p.GameStarted):
                game_id = event.game_id
            if isinstance(event, p.ChallengeEnded) and event.challenge_id == challenge_id:
                if event.reason == "accepted" and game_id is None:
                    game_id = (await delta.wait_for(p.GameStarted)).game_id
                return event.reason, event.message, game_id

    async def challenge() -> int:
        created = await delta.call(p.Challenge, to="eta", game="hadron", options={"size": 5},
                                   clock=CLOCK)
        assert isinstance(created, p.ChallengeCreated)
        return created.challenge_id

    try:
        async with running(eta):
            try:
                reason, _, first = await answer(await challenge())
                assert reason == "accepted" and first is not None
                await until(bot.starting.is_set, what="the bot's new_game")
                await delta.call(p.Resign, game_id=first)
                await delta.wait_for(p.GameOver, game_id=first)
                second = await challenge()  # the moment delta sees the game over
                reason, message, game_id = await answer(second)
                assert (reason, message) == ("accepted", None) and game_id is not None
                assert eta.games[first].ended and not eta.games[first].over  # still held
                bot.go.set()
                assert (await asyncio.wait_for(eta.result(first), 10)).won
                await delta.call(p.Resign, game_id=game_id)
                assert (await asyncio.wait_for(eta.result(game_id), 10)).won
                assert len(eta.bots.made) == 1  # the second game waited for the first's bot
            finally:
                bot.go.set()  # a failure above must not hold the runner's stop
    finally:
        await delta.close()


class HeldBot(RandomBot):
    """A random bot that chooses its first move once ``go`` is set, and counts the plies it
    is asked to move at."""

    name = "held"

    def __init__(self) -> None:
        super().__init__(seed=2)
        self.go = threading.Event()
        self.asked: list[int] = []

    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        self.go.wait(20)
        self.asked.append(state.ply)
        return super().choose_move(state, budget)


async def test_a_move_the_server_did_not_store_is_sent_again_as_it_was(
        server_proc: ServerProcess, caplog: pytest.LogCaptureFixture) -> None:
    """A move refused as ``not_stored`` (SQLite's write lock held by another connection, for
    real) is sent again by the runner after ``retry_after_ms``, the same move, without asking
    the bot again; it is played once the lock is gone (issue 23.19)."""
    caplog.set_level(logging.INFO, logger="clients.sdk")
    bot = HeldBot()
    eta = make_runner(server_proc, "eta", bot, policy=Policy(max_games=1))
    delta = await client(server_proc, "delta")
    holder = sqlite3.connect(server_proc.directory / "sdk.db", isolation_level=None)
    try:
        async with running(eta):
            try:
                created = await delta.call(p.Challenge, to="eta", game="hadron",
                                           options={"size": 5}, clock=CLOCK, color=1)
                assert isinstance(created, p.ChallengeCreated)
                game_id = (await delta.wait_for(p.GameStarted)).game_id
                holder.execute("BEGIN IMMEDIATE")
                bot.go.set()  # eta moves now, into the held lock
                await until(lambda: any("not stored by the server" in r.getMessage()
                                        for r in caplog.records), 30, "not_stored")
                holder.execute("ROLLBACK")
                moved = await delta.wait_for(p.Moved, 15, game_id=game_id)
                assert moved.ply == 0 and bot.asked == [0]  # the bot was asked once
                await delta.call(p.Resign, game_id=game_id)
                result = await asyncio.wait_for(eta.result(game_id), 15)
                assert result.won and result.moves == (moved.move,)
            finally:
                bot.go.set()
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()
        await delta.close()


@pytest.mark.parametrize("bot", [IllegalBot(), CrashingBot(), ResigningBot()],
                         ids=lambda b: b.name)
async def test_a_bot_that_plays_illegally_raises_or_resigns_loses_by_resignation(
        server_proc: ServerProcess, bot: Bot) -> None:
    faulty = make_runner(server_proc, "alpha", bot)
    beta = make_runner(server_proc, "beta")
    async with running(faulty, beta):
        game_id = await faulty.challenge("beta", "hadron", {}, CLOCK, color=0)
        result = await asyncio.wait_for(faulty.result(game_id), 10)
    assert (result.won, result.reason, result.moves) == (False, "resign", ())


# -- surviving a crash ----------------------------------------------------------------------------
async def test_runners_reconnect_after_a_server_crash_and_finish_the_game(
        server_proc: ServerProcess) -> None:
    alpha = make_runner(server_proc, "alpha", SlowBot(seed=2))
    beta = make_runner(server_proc, "beta", SlowBot(seed=3))
    try:
        async with running(alpha, beta):
            game_id = await alpha.challenge("beta", "xodd", {"size": 9}, CLOCK, color=0)
            await until_ply(alpha, game_id, 8)
            server_proc.kill()
            await asyncio.sleep(0.3)
            server_proc.start()
            results = await asyncio.wait_for(asyncio.gather(
                alpha.result(game_id), beta.result(game_id)), 40)
    finally:
        if server_proc.proc is None:
            server_proc.start()
    assert alpha.reconnects >= 1 and beta.reconnects >= 1
    mine, theirs = results
    assert mine.reason == "normal" and len(mine.moves) > 8
    assert (mine.winner, mine.moves) == (theirs.winner, theirs.moves)
    await check_stored(server_proc, mine)


# -- the command line: the bridge and signals ------------------------------------------------------
def tessera(*args: str, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "clients.cli", *args], cwd=ROOT,
                                stdout=out, stderr=subprocess.STDOUT)


async def exited(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> int:
    await until(lambda: proc.poll() is not None, timeout, "the process to exit")
    return proc.returncode


async def challenge_when_online(runner: BotRunner, to: str, game: str,
                                color: int = 0, log: Path | None = None) -> str:
    """Challenge ``to`` as soon as it has logged in (not_found until then); if it never
    does, the failure shows ``log`` (the output of the process that was to log it in)."""
    deadline = time.monotonic() + 20
    while True:
        try:
            return await runner.challenge(to, game, SMALL[game], CLOCK, color=color)
        except ServerError as e:
            if e.code != p.ErrorCode.NOT_FOUND:
                raise
            if time.monotonic() > deadline:
                said = log.read_text(errors="replace")[-3000:] if log is not None else ""
                raise AssertionError(f"{to} did not log in within 20 s ({e}); its "
                                     f"process said:\n{said}") from e
            await asyncio.sleep(0.1)


@pytest.mark.parametrize("extra", [[], ["--move-time", "0.1"]], ids=["clock", "move-time"])
async def test_the_bridge_plays_the_example_engine_through_the_server(
        server_proc: ServerProcess, tmp_path: Path, extra: list[str]) -> None:
    log = tmp_path / "bridge.log"
    bridge = tessera("bridge", "--server", server_proc.url, "--token",
                     server_proc.tokens["delta"], "--stop-after", "1", *extra, "--",
                     sys.executable, str(EXAMPLE_ENGINE), "--seed", "5", log=log)
    try:
        alpha = make_runner(server_proc, "alpha")
        async with running(alpha):
            game_id = await challenge_when_online(alpha, "delta", "xodd", color=1, log=log)
            result = await asyncio.wait_for(alpha.result(game_id), 30)
        assert await exited(bridge) == 0, log.read_text()
    finally:
        bridge.kill()
    assert result.reason == "normal" and result.opponent == "delta"
    await check_stored(server_proc, result)
    text = log.read_text()
    assert "random-engine is ready" in text and "stopped after 1 games" in text


async def test_the_example_bot_file_runs_itself_and_plays_a_game(
        server_proc: ServerProcess, tmp_path: Path) -> None:
    log = tmp_path / "my_bot.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(EXAMPLE_BOT), "--server", server_proc.url, "--stop-after",
             "1"], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
            env={**os.environ, "TESSERA_BOT_TOKEN": server_proc.tokens["delta"]})
    try:
        alpha = make_runner(server_proc, "alpha")
        async with running(alpha):
            game_id = await challenge_when_online(alpha, "delta", "hadron", log=log)
            result = await asyncio.wait_for(alpha.result(game_id), 30)
        assert await exited(proc) == 0, log.read_text()
    finally:
        proc.kill()
    assert result.reason == "normal"
    text = log.read_text()
    assert "my-bot: a game of hadron {'size': 5}" in text
    assert f"my-bot: game over, winner {result.winner}" in text


async def test_bot_command_finishes_its_game_on_sigint_and_resigns_on_a_second(
        server_proc: ServerProcess, tmp_path: Path) -> None:
    results = []
    for signals in (1, 2):
        log = tmp_path / f"bot{signals}.log"
        proc = tessera("bot", "--bot", "random", "--server", server_proc.url, "--token",
                       server_proc.tokens["gamma"], "--games", "hadron", log=log)
        try:
            slow = make_runner(server_proc, "alpha", SlowBot(seed=4, delay=0.15))
            async with running(slow):
                game_id = await challenge_when_online(slow, "gamma", "hadron", log=log)
                await until_ply(slow, game_id, 2)
                for _ in range(signals):
                    proc.send_signal(signal.SIGINT)
                    await asyncio.sleep(0.05)
                results.append(await asyncio.wait_for(slow.result(game_id), 20))
            assert await exited(proc) == 0, log.read_text()
        finally:
            proc.kill()
    finished, resigned = results
    assert finished.reason == "normal"
    assert resigned.reason == "resign" and resigned.won


async def test_a_challenge_whose_game_starts_before_its_reply_is_read_is_settled(
        server_proc: ServerProcess, tmp_path: Path) -> None:
    """The reply to ``challenge`` and the game's ``game_started`` may be read together
    (here: the runner's loop is held up while the other bot accepts); the game must still
    settle the challenge, whichever the runner handles first."""
    log = tmp_path / "bot.log"
    proc = tessera("bot", "--bot", "random", "--server", server_proc.url, "--token",
                   server_proc.tokens["epsilon"], "--games", "hadron", "--max-games", "4",
                   log=log)
    try:
        alpha = make_runner(server_proc, "alpha")
        async with running(alpha):
            await asyncio.wait_for(challenge_when_online(alpha, "epsilon", "hadron"), 30)
            task = asyncio.create_task(alpha.challenge("epsilon", "hadron", SMALL["hadron"],
                                                       CLOCK))
            conn = alpha.requests.require()
            for _ in range(1000):  # until the challenge is on its way
                await asyncio.sleep(0)
                if any(isinstance(r, p.Challenge) for r in conn.pending._pending.values()):
                    break
            else:
                raise AssertionError("the challenge was never sent")
            time.sleep(1.0)  # hold the loop: the reply and the game wait in the socket
            game_id = await asyncio.wait_for(task, 10)
            assert (await asyncio.wait_for(alpha.result(game_id), 30)).reason == "normal"
    finally:
        proc.kill()


async def test_a_flood_of_challenges_costs_the_bot_neither_its_game_nor_its_stop(
        server_proc: ServerProcess, tmp_path: Path) -> None:
    """Guests flood a bot with challenges it declines (issue 16): its declines do not take
    its moves' request budget (it plays a game on a 2 s clock to the end meanwhile), and it
    stops within seconds on SIGTERM, the flood still going on."""
    log = tmp_path / "bot.log"
    proc = tessera("bot", "--bot", "random", "--server", server_proc.url, "--token",
                   server_proc.tokens["zeta"], "--games", "hadron", log=log)
    flooders = [await client(server_proc) for _ in range(6)]
    flooding = True
    sent = 0

    async def flood(conn: Connection) -> None:
        nonlocal sent
        while flooding:  # about the server's rate per connection: 20 challenges a second
            with contextlib.suppress(Exception):
                await conn.send(p.Challenge(id=conn.pending.next_id(), to="zeta", game="xodd",
                                            options={}, clock=CLOCK))
                sent += 1
            await asyncio.sleep(0.05)

    tasks: list[asyncio.Task[None]] = []
    try:
        alpha = make_runner(server_proc, "alpha", SlowBot(seed=3, delay=0.3))
        async with running(alpha):
            first = await challenge_when_online(alpha, "zeta", "hadron")  # it is online
            await asyncio.wait_for(alpha.result(first), 60)
            tasks = [asyncio.create_task(flood(conn)) for conn in flooders]
            # zeta has read the game's end before the challenge: it is not "busy"
            game_id = await alpha.challenge("zeta", "hadron", {"size": 7},
                                            p.PerMove(per_move_ms=2000))
            result = await asyncio.wait_for(alpha.result(game_id), 60)
            assert (result.reason, result.winner is not None) == ("normal", True), result
            assert sent > 200  # the bot had far more challenges than it could decline
            proc.send_signal(signal.SIGTERM)
            started = time.monotonic()
            assert await exited(proc, 15) == 0, log.read_text()[-2000:]
            took = time.monotonic() - started
        assert took < 10, took
        assert "deferred" in log.read_text()  # what it could not decline at once, it deferred
    finally:
        flooding = False
        await asyncio.gather(*tasks, return_exceptions=True)
        for conn in flooders:
            await conn.close()
        proc.kill()


async def test_a_flood_beyond_what_the_bot_declines_leaves_it_reachable(
        server_proc: ServerProcess, tmp_path: Path) -> None:
    """Twenty guests send challenges as fast as the server lets them, in bursts far beyond
    what the bot declines a second (issue 16): the server keeps at most its caps of them
    pending (per challenger, per address: all come from one here) and refuses the rest with
    ``conflict``; the bot declines those it deferred as its budget allows, so with the
    flooders still connected a real challenge gets through, the bot plays it, and SIGTERM
    then stops it."""
    log = tmp_path / "bot.log"
    proc = tessera("bot", "--bot", "random", "--server", server_proc.url, "--token",
                   server_proc.tokens["epsilon"], "--games", "hadron", log=log)
    flooders = [await client(server_proc) for _ in range(20)]

    async def burst(conn: Connection, n: int) -> list[str]:
        """``n`` challenges sent at once; the reply tags (error codes for refusals)."""
        replies = [await conn.send(p.Challenge(id=conn.pending.next_id(), to="epsilon",
                                               game="xodd", options={}, clock=CLOCK))
                   for _ in range(n)]
        out = []
        for reply in replies:
            answer = await asyncio.wait_for(reply, 30)
            out.append(answer.code if isinstance(answer, p.ErrorReply) else answer.TAG)
        return out

    try:
        await until(lambda: "logged in" in log.read_text(), 30, "the bot to log in")
        tags: list[str] = []
        for _ in range(3):
            for got in await asyncio.gather(*(burst(conn, 18) for conn in flooders)):
                tags += got
        assert tags.count("challenge_created") > 50, tags  # more than the bot declines at once
        assert p.ErrorCode.CONFLICT in tags  # the caps held the rest back
        alpha = make_runner(server_proc, "alpha", SlowBot(seed=5, delay=0.05))
        async with running(alpha):
            deadline = time.monotonic() + 60
            while True:  # refused while the address's pending challenges are at its cap
                try:
                    game_id = await alpha.challenge("epsilon", "hadron", SMALL["hadron"], CLOCK)
                    break
                except ServerError as e:
                    assert e.code == p.ErrorCode.CONFLICT, e
                    assert time.monotonic() < deadline, log.read_text()[-2000:]
                    await asyncio.sleep(0.2)
            result = await asyncio.wait_for(alpha.result(game_id), 60)
            assert result.reason == "normal", result
        proc.send_signal(signal.SIGTERM)
        assert await exited(proc, 15) == 0, log.read_text()[-2000:]
    finally:
        for conn in flooders:
            await conn.close()
        proc.kill()


async def test_a_bot_chooses_who_may_challenge_it(server_proc: ServerProcess) -> None:
    """``Policy.challengers`` is set at login and kept with the account: a guest's
    challenge is refused by the server (``forbidden``), never reaching the bot, while a
    registered player's is played."""
    theta = make_runner(server_proc, "theta", policy=Policy(challengers="registered"))
    guest = await client(server_proc)
    try:
        async with running(theta):
            async def refused() -> bool:
                try:
                    created = await guest.call(p.Challenge, to="theta", game="hadron",
                                               options=SMALL["hadron"], clock=CLOCK)
                except ServerError as e:
                    assert e.code == p.ErrorCode.FORBIDDEN, e
                    return True
                assert isinstance(created, p.ChallengeCreated)
                await guest.call(p.CancelChallenge, challenge_id=created.challenge_id)
                return False

            deadline = time.monotonic() + 20
            while not await refused():  # set just after the login
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            alpha = make_runner(server_proc, "alpha")
            async with running(alpha):
                game_id = await alpha.challenge("theta", "hadron", SMALL["hadron"], CLOCK)
                assert (await asyncio.wait_for(alpha.result(game_id), 60)).reason == "normal"
        again = await Connection.open(server_proc.url, client="sdk-test")
        authed = await again.call(p.AuthToken, token=server_proc.tokens["theta"])
        assert isinstance(authed, p.Authed) and authed.challenge_policy == "registered"
        await again.close()
    finally:
        await guest.close()


async def test_bot_command_refuses_a_bad_token_and_bad_options(
        server_proc: ServerProcess, tmp_path: Path) -> None:
    log = tmp_path / "bad.log"
    proc = tessera("bot", "--bot", "random", "--server", server_proc.url, "--token", "nope",
                   log=log)
    assert await exited(proc) == 1
    assert "refused the token" in log.read_text()
    env = {k: v for k, v in os.environ.items() if k != "TESSERA_BOT_TOKEN"}
    for bad in (["--games", "chess"], ["--seek", "hadron per_move 5"], [],
                ["--token", "t", "--max-games", "0"], ["--token", "t", "--challengers", "kin"]):
        done = subprocess.run([sys.executable, "-m", "clients.cli", "bot", "--bot", "random",
                               *bad], cwd=ROOT, capture_output=True, text=True, env=env)
        assert done.returncode == 2, (bad, done.stderr)


# -- text forms and budgets (no server) ------------------------------------------------------------
@pytest.mark.parametrize("text", ["hadron size=5 unlimited", "hadron size=5 2s/move",
                                  "hadron size=5 1.5s/move", "xodd size=9 5m+3s",
                                  "xodd size=9 1m30s+0s", "yodd size=6 3d/move"])
def test_seeks_round_trip_through_text(text: str) -> None:
    assert str(parse_seek(text)) == text
    assert parse_seek(str(parse_seek(text))) == parse_seek(text)


def test_seek_text_is_forgiving_and_errors_are_clear() -> None:
    assert parse_seek("hadron 1500MS/move").clock == p.PerMove(per_move_ms=1500)
    with pytest.raises(ValueError, match=r"write 5m\+3s"):
        parse_seek("xodd fischer 5m+3s")  # the old notation says what to write now
    with pytest.raises(ValueError, match="write 2s/move"):
        parse_seek("xodd per_move 2s")
    for bad in ("hadron 2s", "hadron 10ms/move", "hadron 99d/move", "hadron 5+3"):
        with pytest.raises(ValueError):
            parse_seek(bad)
    seek = parse_seek("hexifact board=hex5 1m+1s")
    assert seek.options == {"board": "hex5", "jumps": "after-placing"}
    assert parse_seek(str(seek)) == seek
    for bad in ("hadron size=5", "chess 2s/move", "hadron size=99 2s/move", ""):
        with pytest.raises(ValueError):
            parse_seek(bad)


def test_game_rules_constrain_options_and_the_policy_explains_refusals() -> None:
    rules = parse_game_rules("hadron:size=5..7|9,hexifact:board=hex4|HEX5,yodd")
    assert rules is not None and format_game_rules(parse_game_rules(
        format_game_rules(rules))) == format_game_rules(rules)
    assert parse_game_rules("all") is None
    for bad in ("chess", "hadron:colour=red", "hadron:size", "hadron:size=a..b", ""):
        with pytest.raises(ValueError):
            parse_game_rules(bad)
    policy = Policy(games=rules, time_controls=frozenset({"per_move"}), min_think_s=0.9,
                    accept_from=frozenset({"ann"}))
    ok = p.PerMove(per_move_ms=2000)
    assert policy.refusal("Ann", "hadron", {"size": 9}, ok) is None
    assert policy.refusal("Ann", "hexifact", {"board": "hex5"}, ok) is None
    assert policy.refusal("Ann", "yodd", {"size": 13}, ok) is None
    assert "size=8" in (policy.refusal("ann", "hadron", {"size": 8}, ok) or "")
    assert "xodd" in (policy.refusal("ann", "xodd", {"size": 9}, ok) or "")
    assert "bob" in (policy.refusal("bob", "hadron", {"size": 5}, ok) or "")
    assert "unlimited" in (policy.refusal("ann", "hadron", {"size": 5}, p.Unlimited()) or "")
    assert "per move" in (policy.refusal("ann", "hadron", {"size": 5},
                                         p.PerMove(per_move_ms=1000)) or "")
    with pytest.raises(ValueError):
        Policy(max_games=0)


def test_budgets_follow_the_clock_and_the_move_time_cap() -> None:
    fischer = p.Fischer(base_ms=60_000, increment_ms=2000)
    assert budget_for(fischer, 30_000) == TimeBudget(remaining_ms=30_000, increment_ms=2000)
    assert budget_for(fischer, None) == TimeBudget(remaining_ms=60_000, increment_ms=2000)
    assert budget_for(fischer, -5) == TimeBudget(remaining_ms=0, increment_ms=2000)
    per_move = p.PerMove(per_move_ms=5000)
    assert budget_for(per_move, 4200) == TimeBudget(remaining_ms=None, per_move_ms=4200)
    # the move time caps the think time; the clock, not the cap, is the deadline
    capped = budget_for(per_move, 4200, 200)
    assert capped == TimeBudget(remaining_ms=None, per_move_ms=4200, cap_ms=200)
    assert capped.seconds_for_move() == pytest.approx(0.16)
    assert budget_for(fischer, 30_000, 200).cap_ms == 200
    assert budget_for(p.Unlimited(), None) == TimeBudget(remaining_ms=None)
    assert budget_for(p.Correspondence(days_per_move=2), 10**8) == TimeBudget(None)
