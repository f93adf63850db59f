"""The bundled bots: the Bot interface and registry, legal moves everywhere, seeded
determinism, the time budget, and a small statistical check that mcts beats random."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from typing import Any

import pytest

import engine
from clients.bots import BOTS, Bot, TimeBudget, make_bot, register
from clients.bots.match import run_match
from clients.bots.mcts import MctsBot
from tests.engine.helpers import DEFAULT_CONFIGS, SMALL_CONFIGS, per_game

# (game, options) from the registry: every game on its default options and on a small board.
CONFIGS: list[tuple[str, dict[str, Any]]] = [
    *DEFAULT_CONFIGS, *per_game(SMALL_CONFIGS, 1)]
FAST: dict[str, dict[str, Any]] = {"mcts": {"iterations": 25}}  # keep the suite quick
UNLIMITED = TimeBudget(remaining_ms=None)


def config_id(config: tuple[str, dict[str, Any]]) -> str:
    return "-".join([config[0], *(str(v) for v in config[1].values())])


def sample_positions(game: str, options: dict[str, Any], seed: int) -> list[engine.State]:
    """Live positions along one seeded random game: the start, ply 1, the middle, the end."""
    rng = random.Random(seed)
    line = [engine.new_game(game, **options)]
    while not line[-1].is_over:
        line.append(line[-1].play(line[-1].random_move(rng)))
    live = line[:-1]
    return [live[i] for i in sorted({0, min(1, len(live) - 1), len(live) // 2, len(live) - 1})]


def play_line(bots: list[Bot], state: engine.State, plies: int) -> list[str]:
    moves = []
    for _ in range(plies):
        if state.is_over:
            break
        move = bots[state.to_move].choose_move(state, UNLIMITED)
        moves.append(move)
        state = state.play(move)
    return moves


# -- interface and registry -----------------------------------------------------------------
def test_bundled_bots_are_registered() -> None:
    assert {"random", "greedy", "mcts"} <= set(BOTS)
    for name, cls in BOTS.items():
        assert cls.name == name and issubclass(cls, Bot)


def test_make_bot_passes_options_and_names_known_bots_on_error() -> None:
    bot = make_bot("mcts", seed=3, iterations=7)
    assert isinstance(bot, MctsBot) and bot.iterations == 7 and bot.seed == 3
    with pytest.raises(ValueError, match=r"unknown bot 'nobody' \(known: greedy, mcts, random"):
        make_bot("nobody")


def test_register_needs_a_name_and_refuses_a_clash() -> None:
    class Nameless(Bot):
        def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
            return "pass"

    with pytest.raises(TypeError, match="name"):
        register(Nameless)

    class Impostor(Nameless):
        name = "random"

    with pytest.raises(ValueError, match="already registered"):
        register(Impostor)


def test_hooks_default_to_no_ops() -> None:
    bot = make_bot("random", seed=1)
    bot.new_game("hadron", {"size": 5}, 0)
    bot.game_over(1)


@pytest.mark.parametrize(
    ("budget", "ply", "expected"),
    [
        (TimeBudget(remaining_ms=None), 0, 1.0),
        (TimeBudget(remaining_ms=None, per_move_ms=200), 0, 0.16),
        (TimeBudget(remaining_ms=None, per_move_ms=200, cap_ms=100), 0, 0.08),  # the cap wins
        (TimeBudget(remaining_ms=None, per_move_ms=50), 0, 0.04),  # 80% however short
        (TimeBudget(remaining_ms=40_025), 0, 1.0),  # 40 s over 40 moves to go
        (TimeBudget(remaining_ms=40_025), 100, 2.0),  # later: 20 moves to go
        (TimeBudget(remaining_ms=40_025, increment_ms=1000), 0, 1.8),
        (TimeBudget(remaining_ms=4_025, increment_ms=10_000), 0, 1.0),  # capped at 1/4 left
        (TimeBudget(remaining_ms=40_025, per_move_ms=500), 0, 0.4),  # the stricter limit
        (TimeBudget(remaining_ms=10), 0, 0.005),  # a floor, however short the clock
    ],
)
def test_time_budget_think_times(budget: TimeBudget, ply: int, expected: float) -> None:
    assert budget.seconds_for_move(ply) == pytest.approx(expected)


def test_time_budget_is_frozen() -> None:
    budget = TimeBudget(remaining_ms=1000)
    with pytest.raises(AttributeError):
        budget.remaining_ms = 5  # type: ignore[misc]


# -- every bot, every game ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["random", "greedy", "mcts"])
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_bot_returns_a_legal_canonical_move(name: str, config: tuple[str, dict[str, Any]]
                                            ) -> None:
    game, options = config
    bot = make_bot(name, seed=11, **FAST.get(name, {}))
    bot.new_game(game, dict(engine.new_game(game, **options).options), 0)
    for state in sample_positions(game, options, seed=5):
        move = bot.choose_move(state, TimeBudget(remaining_ms=None, per_move_ms=100))
        assert isinstance(move, str)
        assert state.parse_move(move).text == move  # legal, and in canonical form


@pytest.mark.parametrize("name", ["random", "greedy", "mcts"])
@pytest.mark.parametrize("game", list(engine.GAMES))
def test_seeded_bots_repeat_their_games(name: str, game: str) -> None:
    def line(seed: int) -> list[str]:
        bots = [make_bot(name, seed=seed, **FAST.get(name, {})), make_bot("random", seed=2)]
        return play_line(bots, engine.new_game(game), plies=6)

    assert line(1) == line(1)
    assert line(1) != line(2) or game == "hadron"  # Hadron's lines are short: may coincide


def test_mcts_is_deterministic_across_hash_seeds() -> None:
    """Set iteration order depends on PYTHONHASHSEED for strings; the search must not."""
    script = (
        "import engine; from clients.bots import make_bot, TimeBudget\n"
        "s = engine.new_game('xodd', size=5)\n"
        "for _ in range(4):\n"
        "    s = s.play(make_bot('mcts', seed=s.ply, iterations=40)"
        ".choose_move(s, TimeBudget(None)))\n"
        "print(' '.join(s.moves))\n"
    )
    outputs = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, check=True)
        outputs.add(run.stdout)
    assert len(outputs) == 1


# -- mcts specifics ---------------------------------------------------------------------------
@pytest.mark.parametrize("game", ["xodd", "hexifact"])
def test_mcts_respects_its_time_budget(game: str) -> None:
    state = engine.new_game(game).play(engine.new_game(game).random_move(random.Random(1)))
    bot = make_bot("mcts", seed=1)
    budget = TimeBudget(remaining_ms=None, per_move_ms=100)  # thinks 0.08 s
    # the search runs on this thread: the CPU time it takes is at most the wall time it
    # allowed itself (plus one iteration), however busy the machine (a busy machine only
    # gives it less), while a search past its budget (1 s unbudgeted) takes more
    t0 = time.thread_time()
    move = bot.choose_move(state, budget)
    cpu = time.thread_time() - t0
    state.parse_move(move)
    assert isinstance(bot, MctsBot) and bot.last_iterations > 0
    assert cpu < 3 * 0.1, cpu


def test_mcts_time_limit_overrides_the_budget() -> None:
    bot = make_bot("mcts", seed=1, time_limit=0.02)
    t0 = time.thread_time()  # CPU time of the search's thread: see above
    bot.choose_move(engine.new_game("hadron"), UNLIMITED)  # the budget alone says 1 s
    assert time.thread_time() - t0 < 0.5


def test_mcts_runs_exactly_the_iterations_asked() -> None:
    bot = make_bot("mcts", seed=1, iterations=33)
    bot.choose_move(engine.new_game("hadron"), UNLIMITED)
    assert isinstance(bot, MctsBot) and bot.last_iterations == 33
    with pytest.raises(ValueError):
        make_bot("mcts", iterations=0)


def hexifact_after(*moves: str) -> engine.State:
    state = engine.new_game("hexifact")
    for move in moves:
        state = state.play(move)
    return state


@pytest.mark.parametrize("name", ["greedy", "mcts"])
def test_bots_pass_to_win_after_the_opponents_pass(name: str) -> None:
    state = hexifact_after("c3", "d3", "pass")  # scores 0:0, a tie goes to the last passer
    move = make_bot(name, seed=1, **FAST.get(name, {})).choose_move(state, UNLIMITED)
    after = state.play(move)
    assert move == "pass" and after.is_over and after.winner == state.to_move


@pytest.mark.parametrize("name", ["greedy", "mcts"])
def test_bots_do_not_pass_into_a_loss(name: str) -> None:
    state = hexifact_after("c3", "d3", "e3", "d3-b3", "pass")  # Black leads 1:0
    assert state.play("pass").winner != state.to_move
    move = make_bot(name, seed=1, **FAST.get(name, {})).choose_move(state, UNLIMITED)
    assert move != "pass"


def test_mcts_beats_random_at_hadron() -> None:
    result = run_match(make_bot("mcts", iterations=200), make_bot("random"), "hadron",
                       games=12, seed=7)
    assert result.wins(0) >= 10


@pytest.mark.slow
@pytest.mark.parametrize("game", ["xodd", "yodd", "hexifact"])
def test_mcts_beats_random_at_the_other_games(game: str) -> None:
    result = run_match(make_bot("mcts", iterations=40), make_bot("random"), game,
                       games=4, seed=7, jobs=2)
    assert result.wins(0) >= 3
