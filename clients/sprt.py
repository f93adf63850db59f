"""A sequential probability ratio test (SPRT) on game pairs: the pentanomial model.

The test fishtest runs, as its statistics notes describe it. Games are played in pairs with
the colours swapped; a pair gives bot A 0, 1/2, 1, 3/2 or 2 points (LL, LD, DD or WL, WD, WW),
and the five counts of pairs are the *pentanomial* result. The hypotheses are in logistic
Elo: H0 says A is ``elo0`` stronger than B, H1 says ``elo1``, where a difference ``elo``
means an expected score per game of ``1 / (1 + 10 ** (-elo / 400))``.

The log-likelihood ratio is the generalized one: under each hypothesis, the pentanomial
distribution with that expected score under which the observed pairs are most likely
(maximum likelihood under one linear constraint, found through its Lagrange multiplier),
and ``LLR = log L(H1) - log L(H0)``. An outcome never seen counts as 0.001 pairs, as in
fishtest, so that every LLR is finite. The test accepts H1 once
``LLR >= log((1 - beta) / alpha)`` and H0 once ``LLR <= log(beta / (1 - alpha))`` (Wald's
bounds, without fishtest's overshoot correction).

Pure: no I/O, no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from clients.bots.match import Z95, elo_difference

PAIR_POINTS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""A pair's score per game for bot A, by pentanomial index (LL, LD, DD/WL, WD, WW)."""
Counts = tuple[int, int, int, int, int]
UNSEEN = 1e-3  # the count given to an outcome not seen yet
H0, H1 = "H0", "H1"


def expected_score(elo: float) -> float:
    """The expected score per game of a player ``elo`` logistic Elo stronger."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


@dataclass(frozen=True, slots=True)
class SprtParams:
    """The test: H0 ``elo = elo0`` against H1 ``elo = elo1``, with error rates alpha (a false
    H1) and beta (a false H0). Written ``elo0=0,elo1=20,alpha=0.05,beta=0.05``."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not all(math.isfinite(v) for v in (self.elo0, self.elo1)):
            raise ValueError("elo0 and elo1 must be numbers")
        if not self.elo0 < self.elo1:
            raise ValueError(f"elo0 must be below elo1 (got {self.elo0:g}, {self.elo1:g})")
        if not (0 < self.alpha < 0.5 and 0 < self.beta < 0.5):
            raise ValueError("alpha and beta must be between 0 and 0.5")

    @classmethod
    def parse(cls, text: str) -> SprtParams:
        """``elo0=E0,elo1=E1[,alpha=A][,beta=B]`` (alpha and beta default to 0.05)."""
        fields: dict[str, float] = {}
        for item in text.split(","):
            key, sep, value = item.partition("=")
            key = key.strip().lower()
            if not sep or key not in ("elo0", "elo1", "alpha", "beta") or key in fields:
                raise ValueError(f"--sprt wants elo0=E0,elo1=E1[,alpha=A][,beta=B]; got {text!r}")
            try:
                fields[key] = float(value)
            except ValueError:
                raise ValueError(f"--sprt: {key}={value.strip()!r} is not a number") from None
        if "elo0" not in fields or "elo1" not in fields:
            raise ValueError(f"--sprt needs elo0 and elo1; got {text!r}")
        return cls(**fields)

    def __str__(self) -> str:
        return f"elo0={self.elo0:g},elo1={self.elo1:g},alpha={self.alpha:g},beta={self.beta:g}"

    @property
    def lower(self) -> float:
        """At or below this LLR the test accepts H0."""
        return math.log(self.beta / (1 - self.alpha))

    @property
    def upper(self) -> float:
        """At or above this LLR the test accepts H1."""
        return math.log((1 - self.beta) / self.alpha)

    def verdict(self, llr: float) -> str | None:
        """``"H1"``, ``"H0"``, or None while the LLR is between the bounds."""
        if llr >= self.upper:
            return H1
        if llr <= self.lower:
            return H0
        return None


@dataclass(frozen=True, slots=True)
class Pentanomial:
    """Counts of game pairs by bot A's points: 0, 1/2, 1, 3/2, 2."""

    counts: Counts = (0, 0, 0, 0, 0)

    def add(self, first: float, second: float) -> Pentanomial:
        """With one more pair, whose games scored ``first`` and ``second`` (each 0, 1/2 or 1)
        for bot A."""
        if {first, second} - {0.0, 0.5, 1.0}:
            raise ValueError(f"a game scores 0, 0.5 or 1, not {first!r}, {second!r}")
        counts = list(self.counts)
        counts[round(2 * (first + second))] += 1
        return Pentanomial((counts[0], counts[1], counts[2], counts[3], counts[4]))

    @property
    def pairs(self) -> int:
        return sum(self.counts)

    def score(self) -> float:
        """Bot A's mean score per game (0.5 before any pair)."""
        if not self.pairs:
            return 0.5
        return sum(n * a for n, a in zip(self.counts, PAIR_POINTS, strict=True)) / self.pairs

    def __str__(self) -> str:
        return ", ".join(map(str, self.counts))


def _multiplier(weights: Sequence[float], offsets: Sequence[float]) -> float:
    """The root x of ``sum(w * b / (1 + x * b)) = 0`` with every ``1 + x * b > 0``.

    The left side falls from +inf to -inf on that interval (the offsets ``b`` have both
    signs), so Newton's method kept inside a shrinking bracket finds it.
    """
    low, high = -1.0 / max(offsets), -1.0 / min(offsets)
    x = 0.0
    for _ in range(200):
        value = sum(w * b / (1 + x * b) for w, b in zip(weights, offsets, strict=True))
        slope = -sum(w * b * b / (1 + x * b) ** 2 for w, b in zip(weights, offsets, strict=True))
        if value > 0:
            low = x
        else:
            high = x
        step = x - value / slope
        following = step if low < step < high else (low + high) / 2
        if abs(following - x) <= 1e-15 * max(1.0, abs(x)):
            return following
        x = following
    return x


def _log_likelihood_deficit(weights: Sequence[float], score: float) -> float:
    """``log L(observed) - log L(best with expected score ``score``)``, per pair.

    The best distribution is ``p_i = w_i / (1 + x (a_i - score))`` for the multiplier x,
    so the difference is ``sum(w_i log(1 + x (a_i - score)))`` (weights summing to 1).
    """
    offsets = [a - score for a in PAIR_POINTS]
    x = _multiplier(weights, offsets)
    return sum(w * math.log1p(x * b) for w, b in zip(weights, offsets, strict=True))


def llr(result: Pentanomial, params: SprtParams) -> float:
    """The generalized log-likelihood ratio of H1 against H0 for these pairs."""
    if not result.pairs:
        return 0.0
    counts = [n if n else UNSEEN for n in result.counts]
    total = sum(counts)
    weights = [n / total for n in counts]
    s0, s1 = expected_score(params.elo0), expected_score(params.elo1)
    return total * (_log_likelihood_deficit(weights, s0) - _log_likelihood_deficit(weights, s1))


@dataclass(frozen=True, slots=True)
class EloEstimate:
    """Bot A's Elo advantage from its mean score, with a 95% interval from the pairs' spread
    (None when there is no spread to measure: fewer than two pairs, or all alike)."""

    elo: float
    low: float | None
    high: float | None


def elo_estimate(result: Pentanomial) -> EloEstimate:
    """The Elo difference the mean score implies; the interval is the normal one of the mean
    pair score (``z * sd / sqrt(pairs)``), each end converted to Elo. It does not correct for
    the test stopping early, which favours the hypothesis it stopped on."""
    score = result.score()
    n = result.pairs
    variance = (sum(c * (a - score) ** 2 for c, a in zip(result.counts, PAIR_POINTS, strict=True))
                / n if n else 0.0)
    if n < 2 or variance == 0:
        return EloEstimate(elo_difference(score), None, None)
    half = Z95 * math.sqrt(variance / n)
    return EloEstimate(elo_difference(score), elo_difference(max(0.0, score - half)),
                       elo_difference(min(1.0, score + half)))
