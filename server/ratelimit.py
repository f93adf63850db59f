"""Token buckets for per-connection, per-account and per-address rate limits.

A bucket is taken from before a request (``take``: one token, or how long until there is
one) and may be charged after it, for what the request turned out to cost (``charge``: a
reply's size); a charge may leave it in debt, bounded by ``burst``, which the next
``take`` (or ``wait``) waits out.
"""

from __future__ import annotations

import functools
import ipaddress
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .config import Settings


class TokenBucket:
    """``rate`` tokens per second, at most ``burst`` saved up."""

    __slots__ = ("burst", "rate", "stamp", "tokens")

    def __init__(self, rate: float, burst: float, now: float | None = None) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp = time.monotonic() if now is None else now

    def take(self, now: float | None = None) -> float:
        """Take one token: 0.0 if allowed, else the seconds until one is available."""
        now = time.monotonic() if now is None else now
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate

    def charge(self, amount: float, now: float | None = None) -> None:
        """Take ``amount`` more after the fact, into debt if need be (at most ``burst``
        owed): what a request cost beyond the token it was let in with."""
        now = time.monotonic() if now is None else now
        self.tokens = max(-self.burst, min(self.burst, self.tokens
                                           + (now - self.stamp) * self.rate) - amount)
        self.stamp = now

    def wait(self, need: float = 1.0, now: float | None = None) -> float:
        """Seconds until ``need`` tokens are there (0.0: now); nothing is taken."""
        now = time.monotonic() if now is None else now
        tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        return 0.0 if tokens >= need else (need - tokens) / self.rate


class BucketTable:
    """One token bucket per key (an account, an address), made on first use.

    A bucket left alone until it is full again is the same as a new one, so it is dropped:
    the table holds only keys active lately, however many strangers come and go. A bucket
    that gave one token is full again after ``1 / rate`` seconds, one emptied after
    ``burst / rate``. Sweeps run when the table has doubled since the last one (amortised
    O(1)) and whenever the owner calls :meth:`sweep` (the server does every minute); a sweep
    copies the survivors into a new dict, since a dict never shrinks by itself.
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
        return self._bucket(key, now).take(now)

    def _bucket(self, key: object, now: float | None) -> TokenBucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self._next_sweep:
                self.sweep(now)
            bucket = self._buckets[key] = TokenBucket(self.rate, self.burst, now)
        return bucket

    def charge(self, key: object, amount: float, now: float | None = None) -> None:
        """Charge ``key``'s bucket ``amount`` after the fact (``TokenBucket.charge``)."""
        self._bucket(key, now).charge(amount, now)

    def wait(self, key: object, need: float = 1.0, now: float | None = None) -> float:
        """Seconds until ``key``'s bucket holds ``need`` (a key not held has ``burst``)."""
        bucket = self._buckets.get(key)
        return 0.0 if bucket is None else bucket.wait(need, now)

    def sweep(self, now: float | None = None) -> int:
        """Drop the buckets that have refilled; how many were dropped."""
        now = time.monotonic() if now is None else now
        rate, burst = self.rate, self.burst
        before = len(self._buckets)
        self._buckets = {key: bucket for key, bucket in self._buckets.items()
                         if bucket.tokens + (now - bucket.stamp) * rate < burst}
        self._next_sweep = max(self.MIN_SWEEP, 2 * len(self._buckets))
        return before - len(self._buckets)

    def __len__(self) -> int:
        return len(self._buckets)


@functools.lru_cache(maxsize=4096)  # a wave of connections comes from few addresses
def address_key(peer: str) -> str:
    """What a client address is limited by: an IPv4 address as it is, an IPv6 address by its
    /64 (one host is usually given a whole /64), an IPv4-mapped IPv6 address as IPv4; text
    that is no address (a Unix socket, "?") as it is."""
    try:
        address = ipaddress.ip_address(peer.split("%", 1)[0])
    except ValueError:
        return peer
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class AccountLimits(Protocol):
    """A budget per subject (an account over all its connections, a client address over
    all its logins): ``MemoryTokenBuckets`` in one process,
    ``server.cluster.limits.RedisTokenBuckets`` over a cluster's nodes."""

    async def take(self, subject: str | int) -> float:
        """Take a token for ``subject``: 0.0, or the seconds until one is available."""

    def sweep(self, now: float | None = None) -> int:
        """Forget what is idle (a server does every minute); how many entries went."""

    def __len__(self) -> int:
        """Subjects held in memory."""


class MemoryTokenBuckets:
    """Token buckets of one process: a ``BucketTable``, which forgets idle subjects."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets = BucketTable(rate, burst)

    async def take(self, subject: str | int) -> float:
        return self._buckets.take(subject)

    def sweep(self, now: float | None = None) -> int:
        return self._buckets.sweep(now)

    def __len__(self) -> int:
        return len(self._buckets)


def address_budgets(settings: Settings, make: Callable[[str, float, float], AccountLimits]
                    ) -> tuple[AccountLimits | None, AccountLimits | None]:
    """The per-address budgets of logins (and registrations: each is a password hash) and
    of new guests, made by ``make(scope, rate per second, burst)``; None where the setting
    switches one off (a rate or burst of 0)."""
    wanted = (("logins", settings.address_logins_per_minute / 60,
               settings.address_login_burst),
              ("guests", settings.address_guests_per_hour / 3600,
               settings.address_guest_burst))
    logins, guests = (None if rate <= 0 or burst < 1 else make(scope, rate, burst)
                      for scope, rate, burst in wanted)
    return logins, guests
