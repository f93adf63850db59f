"""The offline match runner: colours alternate, results repeat whatever the number of jobs,
faulty bots lose, and the statistics and the command line print what they should."""

from __future__ import annotations

import math

import pytest

import engine
from clients.bots import Bot, TimeBudget, make_bot
from clients.bots.match import (
    elo_difference,
    main,
    play_game,
    report,
    run_match,
    wilson_interval,
)
from tests.clients.faulty_bots import CrashingBot, IllegalBot


class HookRecorder(Bot):
    name = "recorder"

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(seed)
        self.events: list[tuple[object, ...]] = []

    def new_game(self, game_key: str, options: dict[str, object], seat: int) -> None:
        self.events.append(("new_game", game_key, options, seat))

    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        return state.random_move(self.rng).text

    def game_over(self, winner: int | None) -> None:
        self.events.append(("game_over", winner))


def test_colours_alternate_and_every_game_counts() -> None:
    result = run_match(make_bot("random"), make_bot("random"), "hadron", games=6, seed=1)
    assert [r.seats for r in result.played] == [(0, 1), (1, 0)] * 3
    assert result.wins(0) + result.wins(1) == 6
    for r in result.played:
        final = engine.replay("hadron", result.options, r.moves)
        assert final.is_over and final.winner == r.winner_seat and r.error is None


def test_results_do_not_depend_on_the_number_of_jobs() -> None:
    def moves(jobs: int) -> list[tuple[str, ...]]:
        bots = (make_bot("mcts", iterations=10), make_bot("random"))
        result = run_match(*bots, "hexifact", games=4, seed=3, jobs=jobs)
        return [r.moves for r in result.played]

    assert moves(1) == moves(2)


def test_games_differ_from_one_another() -> None:
    result = run_match(make_bot("random"), make_bot("random"), "xodd", {"size": 5}, games=4)
    assert len({r.moves for r in result.played}) == 4


@pytest.mark.parametrize("faulty", [IllegalBot(), CrashingBot()], ids=["illegal", "crashing"])
def test_a_faulty_bot_loses_and_the_error_is_recorded(faulty: Bot) -> None:
    result = run_match(faulty, make_bot("random"), "hadron", games=2)
    assert result.wins(1) == 2
    assert all(r.error and faulty.name in r.error for r in result.played)
    assert "error in game" in report(result)


def test_play_game_calls_the_hooks() -> None:
    a, b = HookRecorder(seed=1), HookRecorder(seed=2)
    record = play_game([a, b], "hadron", {"size": 3}, TimeBudget(None), seats=(1, 0))
    full = {"size": 3}
    assert a.events == [("new_game", "hadron", full, 1), ("game_over", record.winner_seat)]
    assert b.events[0] == ("new_game", "hadron", full, 0)


def test_wilson_interval_and_elo() -> None:
    ci = wilson_interval(90, 100)
    assert ci.low == pytest.approx(0.8256, abs=1e-4) and ci.high == pytest.approx(0.9448,
                                                                                   abs=1e-4)
    top = wilson_interval(100, 100)
    assert top.high == 1.0 and top.low == pytest.approx(0.9630, abs=1e-4)
    assert elo_difference(0.5) == 0.0
    assert elo_difference(0.75) == pytest.approx(190.85, abs=0.01)
    assert elo_difference(1.0) == math.inf and elo_difference(0.0) == -math.inf


def test_command_line_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["--game", "hadron", "--bots", "greedy,random", "--games", "4",
                   "--time", "0.05", "--option", "size=3"])
    out = capsys.readouterr().out
    assert status == 0
    assert "hadron size=3: greedy vs random, 4 games" in out
    assert "95% Wilson interval" in out and "Elo difference greedy - random" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["--game", "hadron", "--bots", "random"],
        ["--game", "hadron", "--bots", "random,nobody"],
        ["--game", "hadron", "--bots", "random,random", "--option", "size=99"],
        ["--game", "hadron", "--bots", "random,random", "--option", "size"],
    ],
)
def test_command_line_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
