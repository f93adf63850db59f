"""Giving memory back to the system once a flood has passed.

What strangers leave in the server's tables is dropped by the sweeps (idle rate-limit
buckets, quiet failed-login pairs, guests that never played), and Python frees the objects;
but glibc's malloc keeps most freed memory in its arenas for reuse, so the process's RSS
stays where the flood took it. ``malloc_trim(0)`` hands the free pages back. It exists in
glibc only: elsewhere (musl, macOS) this does nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
import os
import sys
from collections.abc import Awaitable, Callable

ALLOCATOR_ENV = "PYTHONMALLOC"
TRIM_AGAIN_S = 3.0  # a hand-back trims again this much later


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    trim: Callable[[int], int] | None = getattr(libc, "malloc_trim", None)
    return trim


def use_system_allocator(argv: list[str]) -> None:
    """``serve`` runs on the system's malloc rather than Python's own (``PYTHONMALLOC=
    malloc``): this process is executed again with it set, unless the variable is set
    already (``PYTHONMALLOC=pymalloc`` keeps Python's). Python's allocator carves small
    objects out of 1 MiB arenas and returns an arena only when every object in it is gone;
    after a flood the few objects that outlive it (a bucket, a cache entry) are scattered
    over the arenas the flood filled, and hold them, so the RSS stays near the flood's peak.
    glibc's ``malloc_trim`` (:func:`give_back`) releases every free page wherever it is.
    glibc only."""
    if argv[1:2] != ["serve"] or ALLOCATOR_ENV in os.environ or _malloc_trim() is None:
        return
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]],
              {**os.environ, ALLOCATOR_ENV: "malloc"})


def give_back() -> bool:
    """Return the free memory at the top of malloc's heaps to the system (blocking, a few
    milliseconds; ctypes lets go of the GIL meanwhile). True if some was returned."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False


class DropWatch:
    """Hand memory back as soon as a crowd has gone, not only at the next minute's sweep.

    A flood of connections or seeks leaves its freed memory to the allocators (and what
    it made in reference cycles, if anything, to the cyclic garbage collector; a closed
    connection is freed at once: ``server.wsio.release``). :meth:`check`, called every
    second, compares ``load()`` (open connections, connections waiting for their request,
    lobby members and seeks) with the highest it has been since the last hand-back
    (``peak()``): once it has fallen to half of that or less, by ``min_drop`` at least, it
    calls ``hand_back`` and starts over.
    A few hand-backs a flood, each a full collection (tens of milliseconds) and a
    ``malloc_trim``; a server whose crowd only grows, or which stays busy, does not pay.
    """

    __slots__ = ("hand_back", "high", "load", "min_drop", "peak")

    def __init__(self, load: Callable[[], int], hand_back: Callable[[], Awaitable[object]],
                 min_drop: int = 200, peak: Callable[[], int] | None = None) -> None:
        self.load = load
        self.hand_back = hand_back
        self.min_drop = min_drop
        # the highest load since the last call, so that a crowd that came and went between
        # two checks counts too (default: the load now)
        self.peak = peak or load
        self.high = load()

    async def check(self) -> bool:
        """Hand back if the load has fallen enough since its peak; True if it did."""
        self.high = max(self.high, self.peak())
        now = self.load()
        if self.high - now < self.min_drop or now > self.high // 2:
            return False
        await self.hand_back()
        self.high = self.load()
        return True

    async def run(self, period_s: float = 1.0) -> None:
        while True:
            await asyncio.sleep(period_s)
            await self.check()


class Churn:
    """How many connections closed between two looks, from a running count.

    A flood of short connections (the guest flood: connect, ask, hang up) never raises the
    crowd that :class:`DropWatch` watches, so the memory its connections touched was handed
    back only by the next minute's sweep. A second watch looks at this rate instead
    (``DropWatch(churn.last, ..., peak=churn.take)``): it rises with such a flood and falls
    when the flood has passed, and a rate that stays up (steady traffic) does not fall."""

    __slots__ = ("closed", "rate", "seen")

    def __init__(self, closed: Callable[[], int]) -> None:
        self.closed = closed
        self.seen = closed()
        self.rate = 0

    def take(self) -> int:
        """The connections closed since the last call (and :meth:`last` from now on)."""
        now = self.closed()
        self.rate, self.seen = now - self.seen, now
        return self.rate

    def last(self) -> int:
        """What :meth:`take` returned last."""
        return self.rate
