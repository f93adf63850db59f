"""Token buckets for per-connection, per-account and per-address rate limits."""

from __future__ import annotations

import time


class TokenBucket:
    """``rate`` tokens per second, at most ``burst`` saved up."""

    __slots__ = ("burst", "rate", "stamp", "tokens")

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp = time.monotonic()

    def take(self, now: float | None = None) -> float:
        """Take one token: 0.0 if allowed, else the seconds until one is available."""
        now = time.monotonic() if now is None else now
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


class BucketTable:
    """One token bucket per key (an account, an address), made on first use.

    A bucket left alone for ``burst / rate`` seconds is full again, the same as a new one,
    so it is dropped: the table holds only keys active lately, however many strangers come
    and go. Sweeps run when the table has doubled since the last one (amortised O(1)).
    """

    __slots__ = ("_buckets", "_next_sweep", "burst", "rate")

    MIN_SWEEP = 1024

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: dict[object, TokenBucket] = {}
        self._next_sweep = self.MIN_SWEEP

    def take(self, key: object, now: float | None = None) -> float:
        """Take a token from ``key``'s bucket: 0.0 if allowed, else seconds to wait."""
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self._next_sweep:
                self.sweep(now)
            bucket = self._buckets[key] = TokenBucket(self.rate, self.burst)
        return bucket.take(now)

    def sweep(self, now: float | None = None) -> int:
        """Drop the buckets that have refilled; how many were dropped."""
        now = time.monotonic() if now is None else now
        full_after = self.burst / self.rate
        idle = [key for key, bucket in self._buckets.items()
                if now - bucket.stamp >= full_after]
        for key in idle:
            del self._buckets[key]
        self._next_sweep = max(self.MIN_SWEEP, 2 * len(self._buckets))
        return len(idle)

    def __len__(self) -> int:
        return len(self._buckets)
