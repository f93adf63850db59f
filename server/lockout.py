"""Failed logins per (account, address), and the locks they earn.

A lock is there to slow down whoever guesses a password, not to keep its owner out. So:

- failures are counted per account *and* address: a stranger's wrong passwords lock that
  stranger's address out of that account, and the owner, from any address that sent no
  wrong password, logs in at once;
- a failure is counted only after its hash said "wrong", and only if the pair is not locked
  by then: of many wrong passwords sent at once, those whose hashes finish after the lock
  was set neither count nor make it longer, and an attempt refused during a lock is not
  hashed and does not count either;
- from ``after`` failures on, each further failure (outside a lock) locks the pair for
  ``base_s``, doubled each time, but never longer than ``max_s`` (at most 15 minutes);
- a success forgets the pair's failures, and so does an hour without one.

The accounts ask a ``LockoutStore``, the topology's (:mod:`server.seam`): a lone server's
is :class:`MemoryLockout`, this module's table in its memory (a restart forgets it); a
cluster's is in Redis (``server.cluster.lockout.RedisLockout``, the same rule in one Lua
script), so that an attacker gets no more attempts by spreading them over the nodes. The
table holds only pairs that failed lately (swept as ``ratelimit.BucketTable`` is), and each
entry cost its sender a password hash, which the hash queue and the per-address login limit
ration.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

LOCKOUT_CEILING_S = 900.0
"""No lock is ever longer than this (15 minutes), whatever the settings say."""

FORGET_AFTER_S = 3600.0
"""A pair with no failure for this long (and no lock left) starts again from zero."""

Key = tuple[int, str]
"""(account id, address key)"""


@dataclass(slots=True)
class _Failures:
    count: int = 0
    locked_until: float = 0.0
    last: float = 0.0


class Lockout:
    """The failures of every (account, address) pair that failed lately."""

    MIN_SWEEP = 1024

    def __init__(self, after: int = 5, base_s: float = 30.0, max_s: float = LOCKOUT_CEILING_S
                 ) -> None:
        if after < 1 or base_s <= 0 or max_s <= 0:
            raise ValueError(f"lockout needs after >= 1, base_s > 0 and max_s > 0, not "
                             f"{after}, {base_s}, {max_s}")
        self.after = after
        self.base_s = base_s
        self.max_s = min(max_s, LOCKOUT_CEILING_S)
        self._pairs: dict[Key, _Failures] = {}
        self._next_sweep = self.MIN_SWEEP

    def locked_for(self, key: Key, now: float | None = None) -> float:
        """Seconds the pair stays locked (0.0 if it is not)."""
        entry = self._pairs.get(key)
        if entry is None:
            return 0.0
        now = time.monotonic() if now is None else now
        return max(0.0, entry.locked_until - now)

    def failed(self, key: Key, now: float | None = None) -> tuple[bool, float]:
        """A wrong password from the pair, known now (its hash finished): count it unless
        the pair is locked already. Returns whether it counted, and the seconds the pair
        is locked for from now (0.0 if it is not)."""
        now = time.monotonic() if now is None else now
        entry = self._pairs.get(key)
        if entry is None:
            if len(self._pairs) >= self._next_sweep:
                self.sweep(now)
            entry = self._pairs[key] = _Failures()
        elif entry.locked_until > now:
            return False, entry.locked_until - now  # decided already: not counted, no longer
        entry.count += 1
        entry.last = now
        if entry.count < self.after:
            return True, 0.0
        doublings = min(entry.count - self.after, 32)
        lock = min(self.max_s, self.base_s * 2.0**doublings)
        entry.locked_until = now + lock
        return True, lock

    def succeeded(self, key: Key) -> None:
        """The right password from the pair: forget its failures."""
        self._pairs.pop(key, None)

    def sweep(self, now: float | None = None) -> int:
        """Forget the pairs with no lock left and no failure for FORGET_AFTER_S; how many."""
        now = time.monotonic() if now is None else now
        before = len(self._pairs)
        self._pairs = {key: entry for key, entry in self._pairs.items()  # a new, smaller dict
                       if entry.locked_until > now or now - entry.last < FORGET_AFTER_S}
        self._next_sweep = max(self.MIN_SWEEP, 2 * len(self._pairs))
        return before - len(self._pairs)

    def __len__(self) -> int:
        return len(self._pairs)


class LockoutStore(Protocol):
    """The failures and locks of (account, address) pairs (see the module docstring)."""

    async def locked_for(self, key: Key) -> float:
        """Seconds the pair stays locked (0.0 if it is not)."""

    async def failed(self, key: Key) -> tuple[bool, float]:
        """A wrong password from the pair, known now: whether it counted, and the seconds
        the pair is locked for from now (0.0 if it is not)."""

    async def succeeded(self, key: Key) -> None:
        """The right password from the pair: forget its failures."""

    def sweep(self, now: float | None = None) -> int:
        """Forget what this process holds of pairs long quiet; how many."""

    def __len__(self) -> int: ...


class MemoryLockout:
    """``LockoutStore`` in this process's memory (a lone server): a :class:`Lockout`."""

    def __init__(self, after: int = 5, base_s: float = 30.0,
                 max_s: float = LOCKOUT_CEILING_S) -> None:
        self.table = Lockout(after, base_s, max_s)

    async def locked_for(self, key: Key) -> float:
        return self.table.locked_for(key)

    async def failed(self, key: Key) -> tuple[bool, float]:
        return self.table.failed(key)

    async def succeeded(self, key: Key) -> None:
        self.table.succeeded(key)

    def sweep(self, now: float | None = None) -> int:
        return self.table.sweep(now)

    def __len__(self) -> int:
        return len(self.table)


class KnownPairs:
    """(account, address) pairs that gave the right password lately, the latest last.

    A login from such a pair may use the hash queue's reserve (``accounts.Passwords``), so
    strangers who fill the queue from other addresses do not keep the owner out. Only the
    right password adds a pair; at most ``limit`` are kept, the least recent forgotten
    first (a dict keeps insertion order).
    """

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self._pairs: dict[Key, None] = {}

    def add(self, key: Key) -> None:
        self._pairs.pop(key, None)
        self._pairs[key] = None
        if len(self._pairs) > self.limit:
            del self._pairs[next(iter(self._pairs))]

    def __contains__(self, key: object) -> bool:
        return key in self._pairs

    def __len__(self) -> int:
        return len(self._pairs)
