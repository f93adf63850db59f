"""``tessera arena``: bots play each other through a real server; a table rates them.

    tessera arena mcts random --game hadron --game 'xodd size=9' --games 20 --time 0.2
    tessera arena random 'engine:python3 examples/random_engine.py' --server ws://h:8765/ws \\
        --token random=TOKEN1 --token engine=TOKEN2

Every pair of bots plays ``--games`` games of every ``--game`` (default: every game of the
registry, ``engine.GAMES``, on its default options), colours alternating: the first bot of
a pair challenges the other with ``color`` 0 in even-numbered games and 1 in odd ones. Up
to ``--jobs`` games run at once. The games are ordinary server games, stored like any other.

Bots are bundled names (``random``, ``greedy``, ``mcts``), ``FILE.py:CLASS`` or
``module:CLASS``, or ``engine:PROGRAM ARGS`` for an external engine on the bridge; prefix
``LABEL=`` to name one (``fast=engine:./fast --depth 2``). Each bot connects with the bot
SDK as its own bot account. Without ``--server`` the arena starts a throwaway local server
(``python -m server serve`` on a free port, SQLite in a temporary directory unless ``--db``
says where) and creates the accounts with ``python -m server admin create-bot``. With
``--server``, ``--token LABEL=TOKEN`` logs a bot in with its bot token; bots without one
play as guests.

With ``--sprt elo0=E0,elo1=E1[,alpha=A,beta=B]`` two bots play a sequential probability
ratio test (:mod:`clients.sprt`) instead of a fixed number of games: pairs of games of one
``--game`` (the next one for each pair), each bot taking each colour once, until the test
accepts H0 or H1 or ``--games`` (default 10,000) have been played. A line per pair gives the
log-likelihood ratio and its bounds; the verdict follows the table. Exit status 0 when the
test reached a verdict (either one), 1 when it did not.

``--time`` is each bot's think time per move as in ``python -m clients.bots.match`` (a
budget of that many milliseconds per move, of which bots plan 80%); the game clock
(``--clock``, default 10x that per move, at least ``2s/move``) is what the server enforces.
All the Python bots of an arena share one process: with ``--jobs`` above the number of
CPU cores, bots that think on time get less search per move than they would alone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import logging
import math
import os
import re
import shlex
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import engine
import protocol as p
from clients.address import server_argument
from clients.bots import BOTS, Bot, make_bot
from clients.bots.match import elo_difference, wilson_interval
from clients.bridge import EngineBot
from clients.connection import Disconnected, ServerError
from clients.localserver import LocalServer
from clients.sdk.cli import load_bot_class
from clients.sdk.policy import Policy
from clients.sdk.runner import BotRunner, ChallengeDeclined, FatalError, GameResult
from clients.sdk.specs import GameSpec, parse_game_spec
from clients.sprt import H1, Pentanomial, SprtParams, elo_estimate, llr
from clients.stored import sqlite_file_url

log = logging.getLogger("clients.arena")

ALL_CLOCKS = frozenset({"fischer", "per_move", "correspondence", "unlimited"})
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
CHALLENGE_RETRIES = 50  # a challenge declined because the opponent is still finishing a game
GAMES, SPRT_MAX_GAMES = 10, 10_000  # --games by default: per pairing and game; with --sprt, a cap
_LABEL = re.compile(r"([A-Za-z][A-Za-z0-9_-]{0,15})=(.+)")


# -- bots ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Entrant:
    """One bot in the arena: its label in the table and how to make it."""

    label: str
    spec: str
    make: Callable[[int | None], Bot] = field(repr=False, compare=False)


def parse_entrant(text: str) -> Entrant:
    """``[LABEL=]NAME``, ``[LABEL=]FILE.py:CLASS`` or ``[LABEL=]engine:PROGRAM ARGS``."""
    label: str | None = None
    match = _LABEL.fullmatch(text.strip())
    if match and not match.group(1).startswith("engine"):
        label, text = match.group(1), match.group(2)
    spec = text.strip()
    if spec.startswith("engine:"):
        command = shlex.split(spec.removeprefix("engine:"))
        if not command:
            raise ValueError(f"{text!r}: engine: needs a command, e.g. engine:./my_engine")
        files = [os.path.basename(w) for w in command if "/" in w or w.endswith(".py")]
        name = label or "engine:" + (files[-1] if files else os.path.basename(command[0]))
        return Entrant(name, spec, lambda seed: EngineBot(command, seed=seed))
    if spec in BOTS:
        return Entrant(label or spec, spec, lambda seed: make_bot(spec, seed=seed))
    cls = load_bot_class(spec)
    return Entrant(label or cls.name, spec, lambda seed: cls(seed=seed))


def unique_labels(entrants: list[Entrant]) -> list[Entrant]:
    seen: Counter[str] = Counter()
    out = []
    for e in entrants:
        seen[e.label] += 1
        out.append(e if seen[e.label] == 1 else replace(e, label=f"{e.label}#{seen[e.label]}"))
    return out


def account_name(index: int, label: str) -> str:
    """A valid user name for entrant ``index``: ``arena1-mcts``."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", label).strip("-") or "bot"
    return f"arena{index + 1}-{slug}"[:20]


# -- playing -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ArenaGame:
    """One finished arena game: which pair, which game, bot A's seat and who won."""

    pair: tuple[int, int]
    spec: GameSpec
    a_seat: int
    result: GameResult  # as bot A saw it

    @property
    def a_won(self) -> bool | None:
        return self.result.won

    @property
    def a_score(self) -> float | None:
        """Bot A's points: 1 for a win, 0 for a loss, None if the game was aborted."""
        won = self.a_won
        return None if won is None else float(won)


@dataclass
class Arena:
    """Bots, what they play, and the results so far."""

    entrants: list[Entrant]
    specs: list[GameSpec]
    games: int
    clock: p.TimeControl
    move_time_ms: int | None
    jobs: int = 1
    seed: int | None = None
    sprt: SprtRun | None = None  # play pairs until its verdict, at most ``games`` games
    results: list[ArenaGame] = field(default_factory=list)

    def pairs(self) -> Iterator[tuple[int, int]]:
        n = len(self.entrants)
        for i in range(n):
            for j in range(i + 1, n):
                yield i, j

    def schedule(self) -> list[tuple[tuple[int, int], GameSpec, int]]:
        return [(pair, spec, k) for pair in self.pairs() for spec in self.specs
                for k in range(self.games)]

    async def run(self, url: str, tokens: Sequence[str | None],
                  progress: Callable[[str], None] | None = None,
                  report: Callable[[str], None] | None = None) -> None:
        """Connect every bot, play the schedule (or the SPRT's pairs), disconnect.
        ``progress`` gets a line per game, ``report`` one per SPRT pair."""
        runners = []
        for index, entrant in enumerate(self.entrants):
            seed = None if self.seed is None else self.seed * 1000 + index

            def factory(entrant: Entrant = entrant, seed: int | None = seed) -> Bot:
                return entrant.make(seed)

            runners.append(BotRunner(
                factory, url=url, token=tokens[index], client="tessera-arena/1",
                policy=Policy(max_games=self.jobs, accept_from=frozenset(),
                              time_controls=ALL_CLOCKS),
                move_time_ms=self.move_time_ms, backoff_s=(0.5, 5.0)))
        tasks = [asyncio.create_task(r.run()) for r in runners]
        try:
            await self._wait_ready(runners, tasks)
            everyone = frozenset(r.name.lower() for r in runners)
            for r in runners:
                r.policy = replace(r.policy, accept_from=everyone - {r.name.lower()})
            if self.sprt is None:
                await self._play_schedule(runners, progress)
            else:
                await self._play_sprt(self.sprt, runners, progress, report)
        finally:
            for r in runners:
                r.stop(resign=True)
            _, pending = await asyncio.wait(tasks, timeout=STOP_TIMEOUT_S)
            for task in pending:  # e.g. the server is gone and nothing can be resigned
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _play_schedule(self, runners: list[BotRunner],
                             progress: Callable[[str], None] | None) -> None:
        jobs = asyncio.Semaphore(self.jobs)
        schedule = self.schedule()

        async def play(pair: tuple[int, int], spec: GameSpec, k: int) -> None:
            async with jobs:
                game = await self._play_one(runners, pair, spec, k)
            self._finished(game, len(schedule), progress)

        await asyncio.gather(*(play(*item) for item in schedule))

    async def _play_sprt(self, sprt: SprtRun, runners: list[BotRunner],
                         progress: Callable[[str], None] | None,
                         report: Callable[[str], None] | None) -> None:
        """Games 2k and 2k+1 are pair k (bot A first, then second); ``jobs`` workers take
        the games in order, each finished pair is tested, and the first verdict ends it
        (games still in progress are resigned as the bots stop, and not counted)."""
        cap = self.games - self.games % 2
        next_game = 0
        waiting: dict[int, ArenaGame] = {}  # a finished game whose partner is not

        async def worker() -> None:
            nonlocal next_game
            while sprt.verdict is None and next_game < cap:
                index, next_game = next_game, next_game + 1
                number = index // 2
                spec = self.specs[number % len(self.specs)]
                game = await self._play_one(runners, (0, 1), spec, index)
                self._finished(game, cap, progress)
                partner = waiting.pop(index ^ 1, None)
                if partner is None:
                    waiting[index] = game
                    continue
                first, second = (game, partner) if game.a_seat == 0 else (partner, game)
                counted = sprt.add_pair(first, second)
                if report is not None:
                    report(sprt.pair_line(number + 1, spec, first, second, counted,
                                          [e.label for e in self.entrants]))

        workers = {asyncio.create_task(worker()) for _ in range(self.jobs)}
        try:
            while workers and sprt.verdict is None:
                done, workers = await asyncio.wait(workers, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    task.result()
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    def _finished(self, game: ArenaGame, total: int,
                  progress: Callable[[str], None] | None) -> None:
        self.results.append(game)
        if progress is not None:
            progress(self._progress_line(len(self.results), total, game))

    @staticmethod
    async def _wait_ready(runners: list[BotRunner], tasks: list[asyncio.Task[None]]) -> None:
        waits = [asyncio.create_task(r.ready.wait()) for r in runners]
        try:
            pending = set(waits) | set(tasks)
            deadline = time.monotonic() + READY_TIMEOUT_S
            while not all(w.done() for w in waits):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError("the bots could not all log in to the server")
                done, pending = await asyncio.wait(pending, timeout=left,
                                                   return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    if t in tasks:  # a runner ended before logging in
                        t.result()
                        raise RuntimeError("a bot stopped before logging in")
        finally:
            for w in waits:
                w.cancel()

    async def _play_one(self, runners: list[BotRunner], pair: tuple[int, int], spec: GameSpec,
                        k: int) -> ArenaGame:
        a, b = runners[pair[0]], runners[pair[1]]
        seat = k % 2
        for attempt in range(CHALLENGE_RETRIES):
            try:
                game_id = await a.challenge(b.name, spec.game, spec.options, self.clock,
                                            color=seat)
                break
            except ChallengeDeclined:  # b is still wrapping up a game: try again shortly
                await asyncio.sleep(0.05 * (attempt + 1))
        else:
            raise RuntimeError(f"{b.name} declined {CHALLENGE_RETRIES} challenges in a row")
        return ArenaGame(pair, spec, seat, await a.result(game_id))

    def _progress_line(self, done: int, total: int, game: ArenaGame) -> str:
        a, b = (self.entrants[i].label for i in game.pair)
        r = game.result
        outcome = ("aborted" if r.winner is None
                   else f"{a if game.a_won else b} won ({r.reason}, {len(r.moves)} plies)")
        first = a if game.a_seat == 0 else b
        return f"[{done}/{total}] {game.spec}: {a} vs {b}, {first} first: {outcome}"


# -- the table ----------------------------------------------------------------------------------
def _elo(value: float) -> str:
    if not math.isfinite(value):
        return "+inf" if value > 0 else "-inf"
    return f"{round(value) + 0:+d}"


@dataclass(frozen=True, slots=True)
class Line:
    label: str
    a: str
    b: str
    games: list[ArenaGame]

    def cells(self) -> list[str]:
        decided = [g for g in self.games if g.result.winner is not None]
        n = len(decided)
        wins = sum(1 for g in decided if g.a_won)
        first = [g for g in decided if g.a_seat == 0]
        second = [g for g in decided if g.a_seat == 1]
        ci = wilson_interval(wins, n)
        score = wins / n if n else 0.5
        return [self.label, self.a, self.b, str(len(self.games)), str(wins), str(n - wins),
                f"{sum(1 for g in first if g.a_won)}/{len(first)}",
                f"{sum(1 for g in second if g.a_won)}/{len(second)}",
                f"{score:.1%}", f"[{ci.low:.1%}, {ci.high:.1%}]",
                f"{_elo(elo_difference(score))} "
                f"({_elo(elo_difference(ci.low))}..{_elo(elo_difference(ci.high))})"]


HEADER = ["game", "bot A", "bot B", "games", "A wins", "B wins", "A 1st", "A 2nd",
          "A win rate", "95% CI (Wilson)", "Elo A-B (95% CI)"]


def table(arena: Arena) -> str:
    """The results: one line per pairing and game (and per pairing over all games)."""
    rows: list[list[str]] = []
    for pair in arena.pairs():
        a, b = (arena.entrants[i].label for i in pair)
        games = [g for g in arena.results if g.pair == pair]
        for spec in arena.specs:
            rows.append(Line(str(spec), a, b, [g for g in games if g.spec == spec]).cells())
        if len(arena.specs) > 1:
            rows.append(Line("all games", a, b, games).cells())
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in [HEADER, *rows]]
    reasons = Counter(g.result.reason for g in arena.results)
    lines.append("ended by: " + (", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
                                 or "no game finished"))
    plies = [len(g.result.moves) for g in arena.results]
    if plies:
        lines.append(f"plies per game: {sum(plies) / len(plies):.1f} on average")
    return "\n".join(lines)


# -- the SPRT -----------------------------------------------------------------------------------
def _llr(value: float) -> str:
    return f"{round(value, 2) + 0:.2f}"  # + 0: no "-0.00"


@dataclass
class SprtRun:
    """The SPRT of a two-bot arena: the pairs counted so far, the LLR and the verdict."""

    params: SprtParams
    result: Pentanomial = field(default_factory=Pentanomial)
    games: list[ArenaGame] = field(default_factory=list)  # those of the pairs counted
    llr: float = 0.0
    verdict: str | None = None

    def add_pair(self, first: ArenaGame, second: ArenaGame) -> bool:
        """Count a finished pair and test again; False (not counted) if a game was aborted."""
        a, b = first.a_score, second.a_score
        if a is None or b is None:
            return False
        self.result = self.result.add(a, b)
        self.games += [first, second]
        self.llr = llr(self.result, self.params)
        self.verdict = self.params.verdict(self.llr)
        return True

    def bounds(self) -> str:
        return f"({_llr(self.params.lower)}, {_llr(self.params.upper)})"

    def pair_line(self, number: int, spec: GameSpec, first: ArenaGame, second: ArenaGame,
                  counted: bool, labels: Sequence[str]) -> str:
        """``pair 3 (xodd size=3): mcts 2-0 random; ptnml(0-2) 0, 0, 1, 0, 2; LLR 1.26
        (-2.94, 2.94)``."""
        if not counted:
            return f"pair {number} ({spec}): a game was aborted, the pair is not counted"
        wins = sum(1 for g in (first, second) if g.a_won)
        return (f"pair {number} ({spec}): {labels[0]} {wins}-{2 - wins} {labels[1]}; "
                f"ptnml(0-2) {self.result}; LLR {_llr(self.llr)} {self.bounds()}")

    def report(self, labels: Sequence[str], ended: str) -> str:
        """The verdict, the games (W/D/L for bot A), the pair counts and the Elo estimate;
        ``ended`` says why an inconclusive test stopped."""
        a, b = labels
        params = self.params
        if self.verdict == H1:
            verdict = (f"H1 accepted (LLR {_llr(self.llr)} >= {_llr(params.upper)}): {a} is "
                       f"more than {params.elo0:g} Elo stronger than {b}")
        elif self.verdict is not None:
            verdict = (f"H0 accepted (LLR {_llr(self.llr)} <= {_llr(params.lower)}): {a} is not "
                       f"{params.elo1:g} Elo stronger than {b}")
        else:
            verdict = f"inconclusive, {ended} (LLR {_llr(self.llr)} within {self.bounds()})"
        wins = sum(1 for g in self.games if g.a_won)
        estimate = elo_estimate(self.result)
        interval = ("no interval: every pair scored alike" if estimate.low is None
                    or estimate.high is None
                    else f"95% CI {_elo(estimate.low)}..{_elo(estimate.high)}")
        return "\n".join([
            f"SPRT {params}: {verdict}",
            f"{len(self.games)} games in {self.result.pairs} pairs: {a} W/D/L "
            f"{wins}/0/{len(self.games) - wins}; ptnml(0-2) {self.result}",
            f"Elo {a}-{b}: {_elo(estimate.elo)} ({interval})"])


# -- the command --------------------------------------------------------------------------------
def parse_tokens(items: Sequence[str], labels: Sequence[str]) -> dict[str, str]:
    tokens: dict[str, str] = {}
    for item in items:
        label, sep, token = item.partition("=")
        if not sep or label not in labels:
            raise ValueError(f"--token wants LABEL=TOKEN with LABEL one of "
                             f"{', '.join(labels)}; got {label!r}")
        tokens[label] = token.strip()
    return tokens


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tessera arena", description="Play bots against each other through a server "
        "and print win rates, Wilson intervals and Elo differences.")
    parser.add_argument("bots", nargs="+", metavar="BOT",
                        help=f"bundled ({', '.join(sorted(BOTS))}), FILE.py:CLASS, "
                             "module:CLASS or 'engine:PROGRAM ARGS'; LABEL=BOT names it")
    parser.add_argument("--game", action="append", default=[], metavar="SPEC",
                        help="a game and options, e.g. 'hadron size=7' (repeatable; "
                             f"default: {', '.join(engine.GAMES)} with default options)")
    parser.add_argument("--games", type=int, metavar="N",
                        help=f"games per pairing and game (default: {GAMES}); with --sprt, "
                             f"the most games to play (default: {SPRT_MAX_GAMES})")
    parser.add_argument("--sprt", type=str, metavar="elo0=E0,elo1=E1[,alpha=A,beta=B]",
                        help="two bots: play pairs of games, colours swapped, until a "
                             "sequential probability ratio test (pentanomial, logistic Elo) "
                             "accepts H0 (elo = E0) or H1 (elo = E1); alpha and beta default "
                             "to 0.05. Exit status 0 when it reached a verdict, 1 when not")
    parser.add_argument("--time", type=float, default=0.2, metavar="S",
                        help="think time per move, seconds (default: %(default)s)")
    parser.add_argument("--clock", help="the game clock, e.g. 5s/move or 1m+1s (default: "
                        "10x --time per move, at least 2s/move)")
    parser.add_argument("--jobs", type=int, default=1, help="games played at once")
    parser.add_argument("--seed", type=int, help="seed of the bots' random choices")
    parser.add_argument("--server", type=server_argument, metavar="ADDRESS",
                        help="play on this server (HOST:PORT or ws://HOST:PORT/ws) instead "
                             "of a local one (arena starts its own: $TESSERA_SERVER is not "
                             "read)")
    parser.add_argument("--token", action="append", default=[], metavar="LABEL=TOKEN",
                        help="with --server: a bot's token (others play as guests)")
    parser.add_argument("--db", help="local server: the database URL (default: SQLite in "
                        "a temporary directory, removed afterwards)")
    parser.add_argument("--quiet", action="store_true", help="no line per finished game")
    parser.add_argument("--verbose", action="store_true", help="log what the bots do")
    return parser


def _default_clock(move_time_ms: int | None) -> p.TimeControl:
    per_move = max(2000, 10 * (move_time_ms or 1000))
    return p.PerMove(per_move_ms=min(per_move, 24 * 3600 * 1000))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        stream=sys.stderr, format="%(asctime)s %(levelname)-7s %(message)s",
                        datefmt="%H:%M:%S")
    try:
        entrants = unique_labels([parse_entrant(b) for b in args.bots])
        if len(entrants) < 2:
            raise ValueError("name at least two bots")
        specs = [parse_game_spec(s) for s in args.game] or [
            parse_game_spec(g) for g in engine.GAMES]
        move_time = round(args.time * 1000) if args.time else None
        clock = p.parse_time_control(args.clock) if args.clock else _default_clock(move_time)
        labels = [e.label for e in entrants]
        given = parse_tokens(args.token, labels)
        if given and not args.server:
            raise ValueError("--token is for --server; a local arena creates its own accounts")
        sprt = SprtRun(SprtParams.parse(args.sprt)) if args.sprt is not None else None
        if sprt is not None and len(entrants) != 2:
            raise ValueError("--sprt is a test between exactly two bots")
        games = args.games
        if games is None:
            games = GAMES if sprt is None else SPRT_MAX_GAMES
        if games < (1 if sprt is None else 2) or args.jobs < 1:
            raise ValueError("--games must be at least 1 (2 with --sprt), --jobs at least 1")
    except (ValueError, OSError) as e:
        parser.error(str(e))
    arena = Arena(entrants, specs, games, clock, move_time, args.jobs, args.seed, sprt)
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    report: Callable[[str], None] = functools.partial(print, flush=True)
    with contextlib.ExitStack() as stack:
        if args.server:
            url, where = args.server, args.server
            tokens: list[str | None] = [given.get(label) for label in labels]
        else:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(
                prefix="tessera-arena-")))
            db = args.db or sqlite_file_url(workdir / 'arena.db')
            server = LocalServer(workdir, db_url=db)
            server.start()
            stack.callback(server.stop)
            with ThreadPoolExecutor(4) as pool:  # the server has migrated the database
                tokens = list(pool.map(server.create_bot, [account_name(i, e.label)
                                                           for i, e in enumerate(entrants)]))
            url = server.url
            where = f"{url} (local; database {db}{'' if args.db else ', removed at exit'})"
        plan = (f"{games} games per pairing and game" if sprt is None else
                 f"SPRT {sprt.params} in pairs of games, at most {games - games % 2} games")
        print(f"arena: {', '.join(labels)}; {plan}; clock {p.format_time_control(clock)}; "
              f"think {args.time:g} s per move; jobs {args.jobs}; server {where}", flush=True)
        started = time.monotonic()
        ended = f"the cap of {games - games % 2} games (--games) reached"
        try:
            asyncio.run(arena.run(url, tokens, progress, report))
        except KeyboardInterrupt:
            print("interrupted: results so far", file=sys.stderr)
            ended = "interrupted"
        except (RuntimeError, FatalError, ServerError, Disconnected) as e:
            print(f"arena: {e}; results so far:", file=sys.stderr)
            print(table(arena))
            if sprt is not None:
                print(sprt.report(labels, "stopped by an error"))
            return 1
        print(table(arena))
        print(f"{len(arena.results)} games in {time.monotonic() - started:.0f} s")
        if sprt is not None:
            print(sprt.report(labels, ended))
            return 0 if sprt.verdict is not None else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
