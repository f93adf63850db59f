"""Glicko-2 ratings, as in Glickman's "Example of the Glicko-2 system" (2022 edition).

Pure functions over frozen ``Rating`` values: no I/O, no clock. Ratings are on the Glicko
scale (a new player is 1500 / 350 / 0.06, ``DEFAULT``); the Glicko-2 scale of the paper
(mu = (r - 1500) / 173.7178, phi = RD / 173.7178) is used only inside the computation.

The period rule (lichess's): each rated game is one rating period for its two players.
Between games a deviation grows with time, ``age(rating, periods)`` with ``periods`` =
time since the player's last rated game / the period length (a float), capped at 350.
A game then counts as an instant at the end of that growth: ``rate_game`` ages neither
player itself, so the caller passes both ratings aged to the game's start. This is the
paper's step 6 (phi* = sqrt(phi^2 + sigma^2) per period) spread over real time, and it
makes the rating a profile shows just before a game exactly the one the game starts from.
(Lichess grows the deviation inside the game's step 6, with the volatility the game has
just produced; here the gap grows at the volatility in force during it.)
``rate`` is the paper's whole period (steps 1-8, its step 6 growth included), for a batch
of results; ``rate(player, [])`` is step 6 alone.

Values stay floats; ``Rating.rounded()`` is the storage form (rating and deviation to 2
decimals, volatility to 8). Store the rounded values and start the next game from them:
then a recomputation from the stored games starts every game from exactly the stored values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

SYSTEM_TAU = 0.5
"""The paper's tau: how far one period can move a volatility. Glickman advises 0.3 to 1.2;
0.5 is the paper's own (its worked example uses it) and, on the low side, suits periods of
one game, where a single surprising result should not make a rating swing for long."""

EPSILON = 0.000001
"""Convergence tolerance of the Illinois iteration for the new volatility (step 5)."""

MAX_DEVIATION = 350.0
"""A new player's deviation, and the most any deviation grows to: never less known than new."""

PROVISIONAL_DEVIATION = 110.0
"""A rating whose deviation is above this is provisional: shown with ``?``, off leaderboards."""

_SCALE = 173.7178  # 400 / ln(10): Glicko scale -> Glicko-2 scale (step 2)
_BASE = 1500.0
_SCORES = (0.0, 0.5, 1.0)


@dataclass(frozen=True, slots=True)
class Rating:
    """A player's rating, rating deviation (RD) and volatility, on the Glicko scale."""

    rating: float
    deviation: float
    volatility: float

    def __post_init__(self) -> None:
        if not math.isfinite(self.rating):
            raise ValueError(f"rating must be a finite number, not {self.rating!r}")
        if not 0.0 < self.deviation <= MAX_DEVIATION:
            raise ValueError(
                f"deviation must be above 0 and at most {MAX_DEVIATION:g}, not {self.deviation!r}"
            )
        if not (math.isfinite(self.volatility) and self.volatility > 0.0):
            raise ValueError(f"volatility must be a positive number, not {self.volatility!r}")

    def rounded(self) -> Rating:
        """The storage form: rating and deviation to 2 decimals, volatility to 8.

        Volatility keeps more digits because one game moves it by about a millionth.
        """
        return Rating(round(self.rating, 2), round(self.deviation, 2), round(self.volatility, 8))


DEFAULT = Rating(_BASE, MAX_DEVIATION, 0.06)
"""A new player's rating (the paper's step 1)."""


def is_provisional(rating: Rating) -> bool:
    """Whether ``rating`` is not yet established (its deviation is above 110).

    Pass the rating aged to now: a deviation grows while its player does not play.
    """
    return rating.deviation > PROVISIONAL_DEVIATION


def age(rating: Rating, periods: float) -> Rating:
    """``rating`` after ``periods`` rating periods (a fraction counts) without games.

    Only the deviation grows, by the volatility per period (the paper's step 6 for a player
    who did not compete, over ``periods`` periods), and never beyond 350.
    """
    if not (math.isfinite(periods) and periods >= 0.0):
        raise ValueError(f"periods must be a finite number >= 0, not {periods!r}")
    deviation = _grown(rating.deviation, rating.volatility, periods)
    return Rating(rating.rating, deviation, rating.volatility)


def rate(
    player: Rating,
    results: Sequence[tuple[Rating, float]],
    tau: float = SYSTEM_TAU,
    periods: float = 1.0,
) -> Rating:
    """``player`` after one rating period with ``results``: (opponent, score 1, 0.5 or 0).

    The paper's steps 1 to 8; opponents count with their ratings at the period's start.
    ``periods`` is how long the deviation grows before the results shrink it again (step
    6: phi* = sqrt(phi^2 + periods * sigma'^2), capped at 350): 1, the paper's period, by
    default; ``rate_game`` passes 0 because its caller has aged both players already. With
    no results only the deviation grows (``age``).
    """
    if not (math.isfinite(tau) and tau > 0.0):
        raise ValueError(f"tau must be a positive number, not {tau!r}")
    if not results:
        return age(player, periods)
    if not (math.isfinite(periods) and periods >= 0.0):
        raise ValueError(f"periods must be a finite number >= 0, not {periods!r}")

    # Step 3 and 4: the variance v of the rating from the results alone (kept as its
    # inverse, the results' information) and the improvement sum of g(phi_j) (s_j - E_j).
    information = 0.0
    improvement = 0.0
    for opponent, score in results:
        if score not in _SCORES:
            raise ValueError(f"a score is 1, 0.5 or 0, not {score!r}")
        g = _g(opponent.deviation / _SCALE)
        expected = 1.0 / (1.0 + math.exp(-g * (player.rating - opponent.rating) / _SCALE))
        information += g * g * expected * (1.0 - expected)
        improvement += g * (score - expected)
    if information == 0.0:
        raise ValueError("the ratings are too far apart for a result to say anything")
    variance = 1.0 / information
    delta = variance * improvement

    volatility = _new_volatility(
        player.deviation / _SCALE, player.volatility, variance, delta, tau
    )  # step 5
    deviation_star = _grown(player.deviation, volatility, periods)  # step 6
    # Step 7, phi' = 1 / sqrt(1/phi*^2 + 1/v), written as phi* / sqrt(1 + phi*^2 / v) so that
    # floating point cannot round a deviation above phi*; then mu' = mu + phi'^2 * improvement.
    phi_star = deviation_star / _SCALE
    deviation = deviation_star / math.sqrt(1.0 + phi_star * phi_star * information)
    phi = deviation / _SCALE
    rating = player.rating + _SCALE * phi * phi * improvement  # step 8 folded in
    return Rating(rating, deviation, volatility)


def rate_game(
    a: Rating, b: Rating, score_a: float, tau: float = SYSTEM_TAU
) -> tuple[Rating, Rating]:
    """Both players after one rated game, ``score_a`` being a's (1, 0.5 or 0).

    The game is one rating period for each player, as on lichess; both updates use the
    ratings from before the game. Pass both ratings aged to the game's start (``age``).
    """
    new_a = rate(a, [(b, score_a)], tau, periods=0.0)
    new_b = rate(b, [(a, 1.0 - score_a)], tau, periods=0.0)
    return new_a, new_b


def _g(phi: float) -> float:
    """How much an opponent's uncertainty phi weakens what a result says (step 3)."""
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def _grown(deviation: float, volatility: float, periods: float) -> float:
    """``deviation`` after ``periods`` periods of growth at ``volatility``, capped at 350."""
    spread = _SCALE * volatility
    return min(math.sqrt(deviation * deviation + periods * spread * spread), MAX_DEVIATION)


def _new_volatility(phi: float, sigma: float, variance: float, delta: float, tau: float) -> float:
    """The new volatility sigma' (step 5): the root of f by the Illinois algorithm."""
    a = math.log(sigma * sigma)
    phi2 = phi * phi
    delta2 = delta * delta
    tau2 = tau * tau

    def f(x: float) -> float:
        ex = math.exp(x)
        spread = phi2 + variance + ex
        return ex * (delta2 - spread) / (2.0 * spread * spread) - (x - a) / tau2

    # The paper's names: A and B bracket the root, C is the next guess.
    A = a
    if delta2 > phi2 + variance:
        B = math.log(delta2 - phi2 - variance)
    else:
        k = 1
        while f(a - k * tau) < 0.0:
            k += 1
        B = a - k * tau
    f_A, f_B = f(A), f(B)
    while abs(B - A) > EPSILON:
        C = A + (A - B) * f_A / (f_B - f_A)
        f_C = f(C)
        if f_C * f_B <= 0.0:
            A, f_A = B, f_B
        else:
            f_A /= 2.0
        B, f_B = C, f_C
    return math.exp(A / 2.0)
