"""Glicko-2: Glickman's worked example, and properties of one game (hypothesis).

The properties are drawn over the extremes a pool can hold: ratings 0 to 4000, deviations
30 to 350, volatilities 0.01 to 0.2. Derandomized, so every run tries the same examples.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.ratings.glicko2 import (
    DEFAULT,
    MAX_DEVIATION,
    SYSTEM_TAU,
    Rating,
    age,
    is_provisional,
    rate,
    rate_game,
)

PROPERTIES = settings(derandomize=True, max_examples=300, deadline=None, database=None)

GLICKO2_SCALE = 173.7178  # the paper's step 2

rating_values = st.floats(0.0, 4000.0)
deviations = st.floats(30.0, 350.0)
ratings = st.builds(Rating, rating_values, deviations, st.floats(0.01, 0.2))
scores = st.sampled_from([1.0, 0.5, 0.0])
decisive = st.sampled_from([1.0, 0.0])
periods = st.floats(0.0, 1000.0)


def test_the_papers_worked_example() -> None:
    """1500 / 200 / 0.06 beats 1400/30, loses to 1550/100 and 1700/300, with tau 0.5."""
    player = Rating(1500.0, 200.0, 0.06)
    results = [
        (Rating(1400.0, 30.0, 0.06), 1.0),
        (Rating(1550.0, 100.0, 0.06), 0.0),
        (Rating(1700.0, 300.0, 0.06), 0.0),
    ]
    new = rate(player, results, tau=0.5)
    # The paper rounds its intermediate steps: its mu' = -0.2069, phi' = 0.8722 (step 7)
    # and r' = 1464.06, RD' = 151.52, sigma' = 0.05999 (step 8) hold to that rounding.
    assert (new.rating - 1500.0) / GLICKO2_SCALE == pytest.approx(-0.2069, abs=0.0001)
    assert new.deviation / GLICKO2_SCALE == pytest.approx(0.8722, abs=0.0001)
    assert new.rating == pytest.approx(1464.06, abs=0.01)
    assert new.deviation == pytest.approx(151.52, abs=0.01)
    assert new.volatility == pytest.approx(0.05999, abs=0.00001)
    assert SYSTEM_TAU == 0.5


def test_the_worked_examples_of_ratings_md() -> None:
    """docs/RATINGS.md's worked example: what the server stores, without step 6."""
    black, white = (r.rounded() for r in rate_game(DEFAULT, DEFAULT, 1.0))
    assert black == Rating(1662.21, 290.23, 0.05999968)
    assert white == Rating(1337.79, 290.23, 0.05999968)
    start = age(black, 1.0).rounded()  # one period later
    assert start == Rating(1662.21, 290.42, 0.05999968)
    lost, won = (r.rounded() for r in rate_game(start, Rating(1700.0, 60.0, 0.06), 0.0))
    assert lost == Rating(1534.35, 224.96, 0.05999868)
    assert won == Rating(1706.9, 59.53, 0.05999971)
    player = Rating(1500.0, 200.0, 0.06)
    results = [(Rating(1400.0, 30.0, 0.06), 1.0), (Rating(1550.0, 100.0, 0.06), 0.0),
               (Rating(1700.0, 300.0, 0.06), 0.0)]
    assert rate(player, results).rounded() == Rating(1464.05, 151.52, 0.05999598)
    no_growth = rate(player, results, periods=0.0).rounded()
    assert (no_growth.rating, no_growth.deviation) == (1464.11, 151.4)


def test_a_period_without_games_grows_only_the_deviation() -> None:
    """Step 6 alone: RD' = 173.7178 * sqrt(phi^2 + sigma^2) = sqrt(200^2 + 10.423^2)."""
    player = Rating(1500.0, 200.0, 0.06)
    new = rate(player, [])
    assert new == age(player, 1.0)
    assert (new.rating, new.volatility) == (1500.0, 0.06)
    assert new.deviation == pytest.approx(200.2714, abs=0.0001)


def test_a_new_player_is_provisional_until_the_deviation_is_110_or_less() -> None:
    assert (DEFAULT.rating, DEFAULT.deviation, DEFAULT.volatility) == (1500.0, 350.0, 0.06)
    assert is_provisional(DEFAULT)
    assert is_provisional(Rating(1500.0, 110.01, 0.06))
    assert not is_provisional(Rating(1500.0, 110.0, 0.06))


def test_rounded_is_the_storage_form() -> None:
    rating = Rating(1464.0506705393013, 151.5165241238573, 0.059995984286488495)
    assert rating.rounded() == Rating(1464.05, 151.52, 0.05999598)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ((math.nan, 350.0, 0.06), "rating"),
        ((math.inf, 350.0, 0.06), "rating"),
        ((1500.0, 0.0, 0.06), "deviation"),
        ((1500.0, 350.5, 0.06), "deviation"),
        ((1500.0, math.nan, 0.06), "deviation"),
        ((1500.0, 350.0, 0.0), "volatility"),
        ((1500.0, 350.0, math.inf), "volatility"),
    ],
)
def test_a_rating_out_of_range_is_refused(values: tuple[float, float, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Rating(*values)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="score"):
        rate_game(DEFAULT, DEFAULT, 2.0)
    with pytest.raises(ValueError, match="score"):
        rate(DEFAULT, [(DEFAULT, -1.0)])
    with pytest.raises(ValueError, match="tau"):
        rate_game(DEFAULT, DEFAULT, 1.0, tau=0.0)
    with pytest.raises(ValueError, match="periods"):
        age(DEFAULT, -1.0)
    with pytest.raises(ValueError, match="periods"):
        age(DEFAULT, math.nan)
    with pytest.raises(ValueError, match="periods"):
        rate(DEFAULT, [(DEFAULT, 1.0)], periods=math.inf)


def test_ratings_too_far_apart_for_a_result_to_count_are_refused() -> None:
    """Beyond about 6,400 points the expected score is 1 in floating point: no information."""
    with pytest.raises(ValueError, match="too far apart"):
        rate_game(Rating(9000.0, 30.0, 0.06), Rating(0.0, 30.0, 0.06), 1.0)


@PROPERTIES
@given(ratings, ratings, decisive)
def test_a_win_never_lowers_a_rating_and_a_loss_never_raises_one(
    a: Rating, b: Rating, score_a: float
) -> None:
    new_a, new_b = rate_game(a, b, score_a)
    winner, new_winner, loser, new_loser = (
        (a, new_a, b, new_b) if score_a == 1.0 else (b, new_b, a, new_a)
    )
    assert new_winner.rating >= winner.rating
    assert new_loser.rating <= loser.rating


@PROPERTIES
@given(ratings, ratings, scores)
def test_the_two_updates_of_a_game_mirror_each_other(a: Rating, b: Rating, score_a: float) -> None:
    """One's gain is the other's loss in sign, and in size too when the deviations are equal."""
    new_a, new_b = rate_game(a, b, score_a)
    gain_a, gain_b = new_a.rating - a.rating, new_b.rating - b.rating
    assert gain_a * gain_b <= 0.0
    assert (gain_a == 0.0) == (gain_b == 0.0)
    if score_a != 0.5:
        assert gain_a != 0.0  # a decisive game always moves both ratings in this range


@PROPERTIES
@given(rating_values, rating_values, deviations, st.floats(0.01, 0.2), st.floats(0.01, 0.2), scores)
def test_with_equal_deviations_the_winners_gain_is_the_losers_loss(
    rating_a: float, rating_b: float, deviation: float, vol_a: float, vol_b: float, score_a: float
) -> None:
    a, b = Rating(rating_a, deviation, vol_a), Rating(rating_b, deviation, vol_b)
    new_a, new_b = rate_game(a, b, score_a)
    gain_a, gain_b = new_a.rating - a.rating, new_b.rating - b.rating
    assert gain_a == pytest.approx(-gain_b, rel=1e-9, abs=1e-9)
    assert new_a.deviation == pytest.approx(new_b.deviation, rel=1e-12)


@PROPERTIES
@given(ratings, ratings, scores)
def test_a_game_never_raises_either_deviation(a: Rating, b: Rating, score_a: float) -> None:
    new_a, new_b = rate_game(a, b, score_a)
    assert new_a.deviation <= a.deviation
    assert new_b.deviation <= b.deviation


@PROPERTIES
@given(rating_values, deviations, st.floats(0.01, 0.2), st.floats(0.01, 0.2))
def test_a_draw_between_equals_changes_no_rating(
    rating: float, deviation: float, vol_a: float, vol_b: float
) -> None:
    a, b = Rating(rating, deviation, vol_a), Rating(rating, deviation, vol_b)
    new_a, new_b = rate_game(a, b, 0.5)
    assert (new_a.rating, new_b.rating) == (rating, rating)


@PROPERTIES
@given(ratings, periods, periods)
def test_age_never_lowers_the_deviation_and_stops_at_350(
    rating: Rating, first: float, second: float
) -> None:
    aged = age(rating, first)
    assert rating.deviation <= aged.deviation <= MAX_DEVIATION
    assert (aged.rating, aged.volatility) == (rating.rating, rating.volatility)
    # Periods add up: aging by one stretch of time or by its two parts is the same.
    assert age(aged, second).deviation == pytest.approx(
        age(rating, first + second).deviation, rel=1e-12
    )


@PROPERTIES
@given(ratings)
def test_a_long_absence_makes_the_deviation_a_new_players(rating: Rating) -> None:
    # 350^2 / (173.7178 * 0.01)^2 is about 40,600 periods at the smallest volatility.
    assert age(rating, 50_000.0).deviation == MAX_DEVIATION
    assert age(rating, 0.0) == rating


@PROPERTIES
@given(ratings, ratings, scores, st.floats(0.3, 1.2))
def test_a_game_between_extremes_gives_finite_ratings(
    a: Rating, b: Rating, score_a: float, tau: float
) -> None:
    for new in rate_game(a, b, score_a, tau):
        assert all(math.isfinite(x) for x in (new.rating, new.deviation, new.volatility))


@PROPERTIES
@given(ratings, st.lists(st.tuples(ratings, scores), min_size=1, max_size=12), st.floats(0.3, 1.2))
def test_a_period_of_many_results_between_extremes_gives_a_finite_rating(
    player: Rating, results: list[tuple[Rating, float]], tau: float
) -> None:
    new = rate(player, results, tau)
    assert all(math.isfinite(x) for x in (new.rating, new.deviation, new.volatility))
    assert new.deviation <= MAX_DEVIATION
