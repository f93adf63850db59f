"""Engine benchmark: ``python -m engine.bench`` (or ``make bench``).

Prints, per game and board, random-playout throughput and the cost of one ``play()`` (the
server's path: parse the move text, check it, apply it to a copy), and the ratio of that
cost between a small and a large board, which should stay near 1 (flat in board size).
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from . import new_game

CASES: list[tuple[str, dict[str, Any]]] = [
    ("xodd", {"size": 9}),
    ("xodd", {"size": 19}),
    ("yodd", {"size": 6}),
    ("yodd", {"size": 12}),
    ("hadron", {"size": 5}),
    ("hadron", {"size": 11}),
    ("hexifact", {"board": "hex3-4"}),
    ("hexifact", {"board": "hex5-6", "jumps": "once-per-stone"}),
]
FLAT_PAIRS = [(("xodd", 9), ("xodd", 19)), (("yodd", 6), ("yodd", 12))]


def playouts(key: str, options: dict[str, Any], seconds: float, seed: int
             ) -> dict[str, float]:
    """Random playouts from the start for ``seconds``: games and plies per second."""
    rng = random.Random(seed)
    start = new_game(key, **options)
    games = plies = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        games += 1
        plies += start.playout(rng).ply
    elapsed = time.perf_counter() - t0
    return {"playouts_per_s": games / elapsed, "plies_per_s": plies / elapsed,
            "avg_plies": plies / max(games, 1)}


def record_games(key: str, options: dict[str, Any], seed: int, games: int = 8
                 ) -> list[list[str]]:
    """Move texts of a few seeded random games, to be replayed through play()."""
    rng = random.Random(seed)
    out = []
    for _ in range(games):
        s = new_game(key, **options)
        moves = []
        while not s.is_over:
            move = s.random_move(rng)
            moves.append(move.text)
            s = s.play(move)
        out.append(moves)
    return out


def time_play(key: str, options: dict[str, Any], games: list[list[str]]) -> float:
    """Seconds per play(text) over every move of ``games`` (the server's path)."""
    start = new_game(key, **options)
    n = 0
    t0 = time.perf_counter()
    for moves in games:
        s = start
        for text in moves:
            s = s.play(text)
        n += len(moves)
    return (time.perf_counter() - t0) / n


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="playout time per case")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=9, help="timing rounds of play()")
    args = parser.parse_args(argv)
    print(f"{'game':<10}{'options':<38}{'playouts/s':>11}{'plies/s':>10}{'plies':>7}"
          f"{'play() us':>11}")
    recorded = [record_games(key, options, args.seed) for key, options in CASES]
    # Rounds interleave the cases, so a busy moment of the machine hits all of them alike;
    # the best round of each case is its least disturbed one.
    best = [float("inf")] * len(CASES)
    for _ in range(args.rounds):
        for i, (key, options) in enumerate(CASES):
            best[i] = min(best[i], time_play(key, options, recorded[i]))
    results = {}
    for i, (key, options) in enumerate(CASES):
        r = {**playouts(key, options, args.seconds, args.seed), "play_us": best[i] * 1e6}
        results[key, next(iter(options.values()))] = r
        opts = ",".join(f"{k}={v}" for k, v in options.items())
        print(f"{key:<10}{opts:<38}{r['playouts_per_s']:>11.1f}{r['plies_per_s']:>10.0f}"
              f"{r['avg_plies']:>7.0f}{r['play_us']:>11.1f}")
    print()
    for small, large in FLAT_PAIRS:
        a, b = results[small]["play_us"], results[large]["play_us"]
        print(f"play() cost {large[0]} {large[1]} / {small[0]} {small[1]}: "
              f"{b:.1f} us / {a:.1f} us = ratio {b / a:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
