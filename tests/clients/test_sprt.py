"""clients/sprt.py: the pentanomial SPRT's log-likelihood ratio against computations made
another way, its bounds, and its error rates over simulated matches (no server)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

import pytest

from clients.sprt import (
    H0,
    H1,
    PAIR_POINTS,
    UNSEEN,
    Counts,
    Pentanomial,
    SprtParams,
    elo_estimate,
    expected_score,
    llr,
)

GOLDEN = (math.sqrt(5) - 1) / 2


def golden_max(f: Callable[[float], float], low: float, high: float) -> float:
    """The maximum of a unimodal ``f`` on [low, high], by golden-section search."""
    a, b = low, high
    for _ in range(200):
        c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
        if f(c) >= f(d):
            b = d
        else:
            a = c
    return f((a + b) / 2)


def log_likelihood_no_draws(wins_losses: Sequence[float], score: float) -> float:
    """The greatest log-likelihood of (LL, WL, WW) counts among distributions whose mean
    per-game score is ``score``: with ``p(WW) = t``, ``p(WL) = 2 (score - t)`` and
    ``p(LL) = 1 - 2 score + t``, one free parameter, maximised directly."""
    ll, wl, ww = wins_losses

    def log_l(t: float) -> float:
        probs = (1 - 2 * score + t, 2 * (score - t), t)
        return sum(n * math.log(p) for n, p in zip((ll, wl, ww), probs, strict=True))

    low, high = max(0.0, 2 * score - 1), score  # where all three probabilities are >= 0
    return golden_max(log_l, low + 1e-12, high - 1e-12)


def log_likelihood_dual(counts: Sequence[float], score: float) -> float:
    """The same for five outcomes, through the dual problem: the best log-likelihood is
    ``sum(n log(n / N)) - N max_x sum(n / N log(1 + x (a - score)))``, a concave maximum
    over the multiplier x."""
    total = sum(counts)
    offsets = [a - score for a in PAIR_POINTS]

    def dual(x: float) -> float:
        return sum(n / total * math.log(1 + x * b) for n, b in zip(counts, offsets, strict=True))

    low, high = -1 / max(offsets), -1 / min(offsets)
    inset = 1e-9 * (high - low)
    entropy = sum(n * math.log(n / total) for n in counts)
    return entropy - total * golden_max(dual, low + inset, high - inset)


def regularized(counts: Sequence[int]) -> list[float]:
    return [n if n else UNSEEN for n in counts]


# -- parameters and bounds -----------------------------------------------------------------------
def test_parameters_parse_round_trip_and_give_walds_bounds() -> None:
    params = SprtParams.parse("elo0=0,elo1=20,alpha=0.05,beta=0.05")
    assert params == SprtParams(0, 20) and SprtParams.parse(str(params)) == params
    assert str(params) == "elo0=0,elo1=20,alpha=0.05,beta=0.05"
    assert params.upper == pytest.approx(math.log(19)) == pytest.approx(2.944439)
    assert params.lower == pytest.approx(-math.log(19))
    skewed = SprtParams.parse(" ELO0=-5, elo1=5, alpha=0.1, beta=0.02")
    assert skewed.upper == pytest.approx(math.log(0.98 / 0.1))
    assert skewed.lower == pytest.approx(math.log(0.02 / 0.9))
    assert params.verdict(2.95) == H1 and params.verdict(-2.95) == H0
    assert params.verdict(2.9) is None and params.verdict(-2.9) is None
    for bad in ("elo0=0", "elo0=20,elo1=0", "elo0=0,elo1=20,alpha=0.6", "elo0=0,elo1=x",
                "elo0=0,elo1=20,gamma=1", "elo0=0,elo0=1,elo1=2", "elo0=0,elo1=nan", ""):
        with pytest.raises(ValueError):
            SprtParams.parse(bad)


def test_pairs_are_counted_by_bot_as_points() -> None:
    result = Pentanomial().add(1, 1).add(1, 0).add(0, 1).add(0.5, 1).add(0, 0.5).add(0, 0)
    assert result.counts == (1, 1, 2, 1, 1) and result.pairs == 6
    assert str(result) == "1, 1, 2, 1, 1"
    assert result.score() == pytest.approx(0.5)
    assert Pentanomial().score() == 0.5
    with pytest.raises(ValueError):
        Pentanomial().add(1, 0.3)


# -- the log-likelihood ratio ----------------------------------------------------------------------
@pytest.mark.parametrize("counts", [(3, 0, 10, 0, 7), (1, 0, 5, 0, 0), (0, 0, 0, 0, 6),
                                    (40, 0, 95, 0, 65)])
def test_llr_without_draws_matches_a_direct_maximisation(counts: Counts) -> None:
    params = SprtParams(0, 100)
    ll, _, wl, _, ww = regularized(counts)
    # the module also gives the two draw outcomes, never seen, UNSEEN pairs each: they
    # move the LLR by less than 0.001 here
    direct = (log_likelihood_no_draws((ll, wl, ww), expected_score(params.elo1))
              - log_likelihood_no_draws((ll, wl, ww), expected_score(params.elo0)))
    assert llr(Pentanomial(counts), params) == pytest.approx(direct, abs=0.002)


@pytest.mark.parametrize(("counts", "elo0", "elo1"), [
    ((10789, 19328, 33806, 19402, 10543), -3, 1),
    ((3, 5, 10, 6, 2), 0, 20),
    ((0, 1, 4, 9, 12), 0, 50),
    ((2, 0, 0, 0, 0), -100, 100),
])
def test_llr_matches_the_dual_maximisation(counts: Counts, elo0: float,
                                           elo1: float) -> None:
    params = SprtParams(elo0, elo1)
    weights = regularized(counts)
    dual = (log_likelihood_dual(weights, expected_score(elo1))
            - log_likelihood_dual(weights, expected_score(elo0)))
    assert llr(Pentanomial(counts), params) == pytest.approx(dual, rel=1e-6, abs=1e-6)


def test_llr_hand_checked_cases() -> None:
    params = SprtParams(0, 20)
    assert llr(Pentanomial(), params) == 0.0
    # pairs whose mean is exactly 1/2 and symmetric: H0's best fit is what was seen, so the
    # LLR is minus H1's deficit, negative; mirrored results mirror the test around elo 0
    even = Pentanomial((4, 7, 10, 7, 4))
    assert llr(even, params) < 0
    ahead, behind = Pentanomial((1, 2, 5, 6, 4)), Pentanomial((4, 6, 5, 2, 1))
    assert llr(ahead, SprtParams(-30, 30)) == pytest.approx(-llr(behind, SprtParams(-30, 30)))
    # one kind of pair only (every pair WW): the best fit under a mean s keeps the WW mass
    # near s and puts the rest on LL, so each pair adds about log(s1 / s0)
    sweep = Pentanomial((0, 0, 0, 0, 10))
    s0, s1 = expected_score(0), expected_score(200)
    assert llr(sweep, SprtParams(0, 200)) == pytest.approx(10 * math.log(s1 / s0), rel=0.01)


def test_elo_estimate_and_its_interval() -> None:
    estimate = elo_estimate(Pentanomial((0, 1, 2, 0, 1)))  # pair scores 1/4, 1/2, 1/2, 1
    score, sd = 0.5625, math.sqrt((0.3125 ** 2 + 2 * 0.0625 ** 2 + 0.4375 ** 2) / 4)
    half = 1.959964 * sd / 2
    for elo, at in ((estimate.elo, score), (estimate.low, score - half),
                    (estimate.high, score + half)):
        assert elo == pytest.approx(-400 * math.log10(1 / at - 1))
    assert elo_estimate(Pentanomial((0, 0, 1, 0, 3))).high == math.inf  # reaches a score of 1
    alike = elo_estimate(Pentanomial((0, 0, 0, 0, 5)))
    assert alike.elo == math.inf and alike.low is None and alike.high is None


# -- simulated matches ---------------------------------------------------------------------------
def pair_distribution(elo: float, draw_rate: float = 0.0) -> list[float]:
    """Pentanomial probabilities of two independent games with expected score of ``elo``."""
    score = expected_score(elo)
    win = score - draw_rate / 2
    game = (1 - win - draw_rate, draw_rate, win)  # L, D, W
    probs = [0.0] * 5
    for i, p in enumerate(game):
        for j, q in enumerate(game):
            probs[i + j] += p * q
    return probs


def run_test(params: SprtParams, probs: Sequence[float], seed: int,
             max_pairs: int = 2000) -> tuple[str | None, int]:
    """One simulated test: pairs drawn from ``probs`` until a verdict (or ``max_pairs``)."""
    rng = random.Random(seed)
    result = Pentanomial()
    for pairs in range(1, max_pairs + 1):
        points = rng.choices(range(5), probs)[0]  # the pair's points, in halves
        result = result.add(points // 2 / 2, (points + 1) // 2 / 2)
        verdict = params.verdict(llr(result, params))
        if verdict:
            return verdict, pairs
    return None, max_pairs


def test_simulated_error_rates_are_about_alpha_and_beta() -> None:
    """At elo0 the test should accept H1 about alpha of the time, at elo1 accept H0 about
    beta of the time (checked loosely: 120 runs each, at most twice the rate and a margin)."""
    params = SprtParams(0, 150, alpha=0.1, beta=0.1)
    runs = 120
    at_h0 = [run_test(params, pair_distribution(0, 0.2), seed)[0] for seed in range(runs)]
    at_h1 = [run_test(params, pair_distribution(150), 1000 + seed)[0] for seed in range(runs)]
    false_h1, false_h0 = at_h0.count(H1) / runs, at_h1.count(H0) / runs
    assert None not in at_h0 and None not in at_h1
    assert false_h1 <= 2 * params.alpha + 0.05, false_h1
    assert false_h0 <= 2 * params.beta + 0.05, false_h0


def test_zero_elo_accepts_h0_in_most_runs_and_a_large_elo_h1_quickly() -> None:
    params = SprtParams(0, 100)
    even = [run_test(params, pair_distribution(0), seed) for seed in range(60)]
    assert sum(v == H0 for v, _ in even) >= 50, even
    strong = [run_test(params, pair_distribution(600), seed) for seed in range(60)]
    assert all(v == H1 for v, _ in strong), strong
    # a sweeping pair adds about log(s1 / s0) = 0.25: 12 of them reach the bound
    assert max(n for _, n in strong) <= 20, strong
