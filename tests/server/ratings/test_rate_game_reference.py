"""``rate_game`` against a computation of the documented method written here from the paper.

docs/RATINGS.md: each rated game is one rating period for its two players, both updates use
the ratings from before the game, and the deviation grows between games (the caller ages
both ratings to the game's start), so within the game the paper's step 6 growth is left
out (phi* = phi). This module computes that from Glickman's "Example of the Glicko-2
system" on its own: nothing is imported from ``server.ratings`` but the ``Rating`` value
and the function under test, and the volatility's equation (step 5) is solved by plain
bisection rather than the paper's Illinois iteration that the server uses, so a shared
mistake in the two is unlikely.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.ratings.glicko2 import Rating, rate_game

SCALE = 173.7178  # the paper's step 2: 400 / ln 10
TAU = 0.5  # docs/RATINGS.md: the system constant
PROPERTIES = settings(derandomize=True, max_examples=400, deadline=None, database=None)


def reference(player: tuple[float, float, float], opponent: tuple[float, float, float],
              score: float, *, step6: bool = False) -> tuple[float, float, float]:
    """One player's (rating, deviation, volatility) after one game, by the paper's steps."""
    r, rd, sigma = player
    mu, phi = (r - 1500.0) / SCALE, rd / SCALE  # step 2
    mu_j, phi_j = (opponent[0] - 1500.0) / SCALE, opponent[1] / SCALE
    g = 1.0 / math.sqrt(1.0 + 3.0 * phi_j ** 2 / math.pi ** 2)  # step 3
    expected = 1.0 / (1.0 + math.exp(-g * (mu - mu_j)))
    v = 1.0 / (g ** 2 * expected * (1.0 - expected))
    delta = v * g * (score - expected)  # step 4
    a = math.log(sigma ** 2)  # step 5: the root of f, by bisection

    def f(x: float) -> float:
        return (math.exp(x) * (delta ** 2 - phi ** 2 - v - math.exp(x))
                / (2.0 * (phi ** 2 + v + math.exp(x)) ** 2) - (x - a) / TAU ** 2)

    low, high = a - 1.0, a + 1.0  # f falls from + to -: widen until the root is inside
    while f(low) < 0.0:
        low -= 1.0
    while f(high) > 0.0:
        high += 1.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if f(middle) > 0.0:
            low = middle
        else:
            high = middle
    sigma_new = math.exp((low + high) / 4.0)
    phi_star = math.sqrt(phi ** 2 + sigma_new ** 2) if step6 else phi  # step 6
    phi_new = 1.0 / math.sqrt(1.0 / phi_star ** 2 + 1.0 / v)  # step 7
    mu_new = mu + phi_new ** 2 * g * (score - expected)
    return 1500.0 + SCALE * mu_new, SCALE * phi_new, sigma_new  # step 8


def assert_matches(rating: Rating, expected: tuple[float, float, float]) -> None:
    assert rating.rating == pytest.approx(expected[0], abs=1e-6)
    assert rating.deviation == pytest.approx(expected[1], abs=1e-6)
    # the server stops its iteration at |B - A| <= 1e-6 on ln(sigma^2)
    assert rating.volatility == pytest.approx(expected[2], rel=1e-6)


CASES = [  # (a, b, a's score)
    ((1500.0, 350.0, 0.06), (1500.0, 350.0, 0.06), 1.0),  # two new players
    ((1500.0, 350.0, 0.06), (1500.0, 350.0, 0.06), 0.5),
    ((1500.0, 200.0, 0.06), (1400.0, 30.0, 0.06), 1.0),  # the paper's first opponent
    ((1500.0, 200.0, 0.06), (1700.0, 300.0, 0.06), 0.0),
    ((1850.25, 45.5, 0.059), (1320.0, 120.0, 0.09), 0.0),  # an upset
    ((2400.0, 60.0, 0.05), (2410.0, 70.0, 0.061), 0.5),
    ((900.0, 340.0, 0.2), (3100.0, 31.0, 0.01), 1.0),
]


@pytest.mark.parametrize(("a", "b", "score_a"), CASES)
def test_a_game_is_the_papers_period_without_step_6(
        a: tuple[float, float, float], b: tuple[float, float, float], score_a: float) -> None:
    new_a, new_b = rate_game(Rating(*a), Rating(*b), score_a)
    assert_matches(new_a, reference(a, b, score_a))
    assert_matches(new_b, reference(b, a, 1.0 - score_a))


def test_two_new_players_first_game() -> None:
    """1500/350/0.06 beats 1500/350/0.06: 1662.21 / 290.23 / 0.05999968 and its mirror. (The
    paper's step 6 inside the game would give 1662.31 / 290.32: the figures some of the docs'
    examples show.)"""
    winner, loser = rate_game(Rating(1500.0, 350.0, 0.06), Rating(1500.0, 350.0, 0.06), 1.0)
    assert winner.rounded() == Rating(1662.21, 290.23, 0.05999968)
    assert loser.rounded() == Rating(1337.79, 290.23, 0.05999968)
    assert reference((1500.0, 350.0, 0.06), (1500.0, 350.0, 0.06), 1.0) == pytest.approx(
        (1662.21, 290.23, 0.05999968), abs=0.005)


@pytest.mark.parametrize(("a", "b", "score_a"), CASES)
def test_the_reference_tells_step_6_apart(
        a: tuple[float, float, float], b: tuple[float, float, float], score_a: float) -> None:
    """The comparison above can fail: with the paper's step 6 inside the game, the deviation
    (and so the rating's move) differs by more than the tolerance."""
    new_a, _ = rate_game(Rating(*a), Rating(*b), score_a)
    with_growth = reference(a, b, score_a, step6=True)
    assert abs(new_a.deviation - with_growth[1]) > 1e-3


ratings = st.tuples(st.floats(0.0, 4000.0), st.floats(30.0, 350.0), st.floats(0.01, 0.2))


@PROPERTIES
@given(ratings, ratings, st.sampled_from([1.0, 0.5, 0.0]))
def test_every_game_matches_the_reference(a: tuple[float, float, float],
                                          b: tuple[float, float, float], score_a: float) -> None:
    try:
        new_a, new_b = rate_game(Rating(*a), Rating(*b), score_a)
    except ValueError:  # too far apart for a result to say anything: refused, not rated
        assert abs(a[0] - b[0]) > 2000.0
        return
    assert_matches(new_a, reference(a, b, score_a))
    assert_matches(new_b, reference(b, a, 1.0 - score_a))
