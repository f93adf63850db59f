"""Offline matches between two bots: no server, no network, the engine in-process.

    python -m clients.bots.match --game hadron --bots mcts,random --games 100 --time 0.2 --jobs 2

Colours alternate (bot A has the first move in the even-numbered games). Each game gets
fresh copies of the two bots, reseeded from the match seed and the game number, so a match
with fixed iteration counts gives the same results whatever ``--jobs`` is. A bot that
raises or returns an illegal move loses that game, and the error is recorded. The clock is
measured but not enforced: moves slower than the budget are counted as ``slow``.
"""

from __future__ import annotations

import argparse
import copy
import math
import multiprocessing
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import engine

from .base import BOTS, Bot, TimeBudget, make_bot

Z95 = 1.959964  # two-sided 95% normal quantile


@dataclass(frozen=True, slots=True)
class OfflineGame:
    """One finished game: who sat where, who won, how, and how long the bots thought."""

    index: int
    seats: tuple[int, int]  # seats[s] = which bot (0 = A, 1 = B) played seat s
    winner_seat: int
    plies: int
    moves: tuple[str, ...]
    think_s: tuple[float, float]  # total think time per bot (A, B)
    max_think_s: tuple[float, float]
    slow_moves: tuple[int, int]  # moves over the budget, per bot
    error: str | None = None  # why the game ended early (a bot's illegal move or crash)

    @property
    def winner_bot(self) -> int:
        return self.seats[self.winner_seat]


@dataclass(frozen=True, slots=True)
class Interval:
    low: float
    high: float


@dataclass(slots=True)
class MatchResult:
    """All games of a match between bot A and bot B, with summary statistics."""

    names: tuple[str, str]
    game: str
    options: dict[str, int | str]
    budget: TimeBudget
    played: list[OfflineGame] = field(default_factory=list)

    @property
    def games(self) -> int:
        return len(self.played)

    def wins(self, bot: int) -> int:
        return sum(1 for r in self.played if r.winner_bot == bot)

    def wins_as(self, bot: int, seat: int) -> tuple[int, int]:
        """(wins, games) of ``bot`` when it sat in ``seat``."""
        games = [r for r in self.played if r.seats[seat] == bot]
        return sum(1 for r in games if r.winner_bot == bot), len(games)

    def score(self) -> float:
        """Bot A's share of the games won (no draws in these games)."""
        return self.wins(0) / self.games if self.games else 0.5

    def wilson(self) -> Interval:
        """95% Wilson score interval of bot A's win rate."""
        return wilson_interval(self.wins(0), self.games)

    def elo(self) -> float:
        """Elo difference A minus B implied by the score (+-inf at 100% / 0%)."""
        return elo_difference(self.score())


def wilson_interval(wins: int, games: int, z: float = Z95) -> Interval:
    """The Wilson score interval for a binomial proportion (sensible at 0% and 100%)."""
    if games == 0:
        return Interval(0.0, 1.0)
    p = wins / games
    denom = 1 + z * z / games
    centre = (p + z * z / (2 * games)) / denom
    half = z * math.sqrt(p * (1 - p) / games + z * z / (4 * games * games)) / denom
    low = 0.0 if wins == 0 else max(0.0, centre - half)
    high = 1.0 if wins == games else min(1.0, centre + half)
    return Interval(low, high)


def elo_difference(score: float) -> float:
    """Elo difference for an expected score in [0, 1]."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def _game_seed(match_seed: int, index: int, bot: int) -> str:
    return f"match {match_seed} game {index} bot {bot}"


def play_game(bots: Sequence[Bot], game: str, options: Mapping[str, Any],
              budget: TimeBudget, *, index: int = 0, seats: tuple[int, int] = (0, 1),
              max_plies: int = 100_000) -> OfflineGame:
    """Play one game; ``bots[seats[s]]`` plays seat ``s``. Returns its record.

    The bots' ``new_game`` and ``game_over`` hooks are called. A bot that raises, returns an
    illegal move or exceeds ``max_plies`` together with its opponent loses (the latter: the
    bot to move).
    """
    state = engine.new_game(game, **options)
    full_options = dict(state.options)
    for seat in (0, 1):
        bots[seats[seat]].new_game(game, dict(full_options), seat)
    think = [0.0, 0.0]
    longest = [0.0, 0.0]
    slow = [0, 0]
    limit = budget.per_move_ms / 1000 if budget.per_move_ms is not None else math.inf
    error: str | None = None
    forfeit: int | None = None
    while not state.is_over:
        bot = seats[state.to_move]
        t0 = time.perf_counter()
        try:
            move = bots[bot].choose_move(state, budget)
            elapsed = time.perf_counter() - t0
            state = state.play(move)
        except Exception as e:  # a bot's bug must not end the match
            elapsed = time.perf_counter() - t0
            error = f"{bots[bot].name} (seat {state.to_move}) at ply {state.ply}: {e!r}"
            forfeit = state.to_move
        think[bot] += elapsed
        longest[bot] = max(longest[bot], elapsed)
        slow[bot] += elapsed > limit
        if forfeit is None and state.ply >= max_plies and not state.is_over:
            error = f"no result after {max_plies} plies"
            forfeit = state.to_move
        if forfeit is not None:
            break
    winner = 1 - forfeit if forfeit is not None else state.winner
    assert winner is not None
    for seat in (0, 1):
        bots[seats[seat]].game_over(winner)
    return OfflineGame(index, seats, winner, state.ply, state.moves, (think[0], think[1]),
                      (longest[0], longest[1]), (slow[0], slow[1]), error)


_Task = tuple[int, tuple[Bot, Bot], str, dict[str, Any], TimeBudget, int]


def _play_task(task: _Task) -> OfflineGame:
    index, bots, game, options, budget, seed = task
    fresh = [copy.deepcopy(b) for b in bots]
    for i, bot in enumerate(fresh):
        bot.rng.seed(_game_seed(seed, index, i))
    seats = (0, 1) if index % 2 == 0 else (1, 0)
    return play_game(fresh, game, options, budget, index=index, seats=seats)


def run_match(bot_a: Bot, bot_b: Bot, game: str, options: Mapping[str, Any] | None = None,
              *, games: int = 100, budget: TimeBudget | None = None, jobs: int = 1,
              seed: int = 0) -> MatchResult:
    """Play ``games`` games of A against B, alternating colours; ``jobs`` processes.

    Each game plays fresh copies of the two bots whose ``rng`` is reseeded from ``seed`` and
    the game number, so the bots passed in are never changed.
    """
    options = dict(options or {})
    full = dict(engine.get_game(game).normalize_options(options))
    budget = budget or TimeBudget(remaining_ms=None, per_move_ms=200)
    result = MatchResult((bot_a.name, bot_b.name), game, full, budget)
    tasks: list[_Task] = [(i, (bot_a, bot_b), game, full, budget, seed) for i in range(games)]
    if jobs <= 1:
        result.played.extend(_play_task(t) for t in tasks)
    else:
        with multiprocessing.Pool(jobs) as pool:
            result.played.extend(pool.imap_unordered(_play_task, tasks))
        result.played.sort(key=lambda r: r.index)
    return result


def describe_budget(budget: TimeBudget) -> str:
    """The budget in words, e.g. "200 ms per move" or "60 s + 1 s per move"."""
    parts = []
    if budget.remaining_ms is not None:
        parts.append(f"{budget.remaining_ms / 1000:g} s + {budget.increment_ms / 1000:g} s "
                     "per move")
    if budget.per_move_ms is not None:
        parts.append(f"{budget.per_move_ms} ms per move")
    return ", at most ".join(parts) or "no clock"


def _elo_text(value: float) -> str:
    return f"{value:+.0f}" if math.isfinite(value) else ("+inf" if value > 0 else "-inf")


def report(result: MatchResult) -> str:
    """A plain-text table of a match: wins per bot and colour, win rate, Wilson CI, Elo."""
    a, b = result.names
    label_b = b if b != a else f"{b} (B)"
    opts = ",".join(f"{k}={v}" for k, v in result.options.items())
    lines = [f"{result.game} {opts}: {a} vs {label_b}, {result.games} games, "
             f"{describe_budget(result.budget)} (bots plan "
             f"{result.budget.seconds_for_move():.3f} s per move)"]
    lines.append(f"{'bot':<16}{'wins':>6}{'as first':>10}{'as second':>11}"
                 f"{'avg s/move':>12}{'max s/move':>12}{'slow':>6}")
    for bot, name in enumerate((a, label_b)):
        first, n_first = result.wins_as(bot, 0)
        second, n_second = result.wins_as(bot, 1)
        moves = sum((r.plies + (r.seats[0] == bot)) // 2 for r in result.played)
        think = sum(r.think_s[bot] for r in result.played)
        longest = max((r.max_think_s[bot] for r in result.played), default=0.0)
        slow = sum(r.slow_moves[bot] for r in result.played)
        lines.append(f"{name:<16}{result.wins(bot):>6}{f'{first}/{n_first}':>10}"
                     f"{f'{second}/{n_second}':>11}{think / max(moves, 1):>12.3f}"
                     f"{longest:>12.3f}{slow:>6}")
    ci = result.wilson()
    lines.append(f"{a} win rate {result.score():.1%}, 95% Wilson interval "
                 f"[{ci.low:.1%}, {ci.high:.1%}]")
    lines.append(f"Elo difference {a} - {label_b}: {_elo_text(result.elo())} "
                 f"(95%: {_elo_text(elo_difference(ci.low))} .. "
                 f"{_elo_text(elo_difference(ci.high))})")
    errors = [r.error for r in result.played if r.error]
    lines.extend(f"error in game: {e}" for e in errors)
    return "\n".join(lines)


def _parse_options(pairs: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"--option wants key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: run a match and print its table. Returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m clients.bots.match",
        description="Play two bundled bots against each other offline and print the score.")
    parser.add_argument("--game", required=True, choices=sorted(engine.GAMES))
    parser.add_argument("--bots", required=True,
                        help=f"two bot names, comma-separated (known: {', '.join(sorted(BOTS))})")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--time", type=float, default=0.2, help="seconds per move")
    parser.add_argument("--jobs", type=int, default=1, help="games played in parallel")
    parser.add_argument("--seed", type=int, default=0, help="match seed")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="game option, e.g. --option size=7 (repeatable)")
    args = parser.parse_args(argv)
    try:
        names = [n.strip() for n in args.bots.split(",")]
        if len(names) != 2:
            raise ValueError(f"--bots wants two names, got {args.bots!r}")
        bots = [make_bot(n) for n in names]
        options = _parse_options(args.option)
        engine.get_game(args.game).normalize_options(options)
    except ValueError as e:
        parser.error(str(e))
    budget = TimeBudget(remaining_ms=None, per_move_ms=round(args.time * 1000))
    t0 = time.perf_counter()
    result = run_match(bots[0], bots[1], args.game, options, games=args.games, budget=budget,
                       jobs=args.jobs, seed=args.seed)
    print(report(result))
    print(f"({time.perf_counter() - t0:.0f} s wall, {args.jobs} job(s), seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
