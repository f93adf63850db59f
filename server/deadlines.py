"""Connections' deadlines (say hello, log in) on one timer wheel.

A deadline goes into the slot of the wheel's tick it falls in (``TICK_S``), and one task
per server wakes every tick and runs what is due. Setting and cancelling a deadline cost a
dict operation each. A ``call_later`` per connection would be a push on the event loop's
heap of timers, which a wave of connections fills with thousands (every other timer then
pays its log n, and a cancelled handle stays in the heap until it comes due). A deadline
runs up to one tick late, never early; those of one tick run in the order they were set.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Hashable

log = logging.getLogger(__name__)

TICK_S = 0.1


class Wheel:
    """Deadlines by key (a connection): at most one each; setting one replaces the last."""

    def __init__(self, tick_s: float = TICK_S) -> None:
        self.tick_s = tick_s
        self._slots: dict[int, dict[Hashable, Callable[[], object]]] = {}
        self._slot_of: dict[Hashable, int] = {}

    def set(self, key: Hashable, delay_s: float, call: Callable[[], object],
            now: float | None = None) -> None:
        """Run ``call`` once ``delay_s`` has passed (at the first tick after), unless
        :meth:`cancel` or another ``set`` for ``key`` comes first."""
        self.cancel(key)
        now = asyncio.get_running_loop().time() if now is None else now
        slot = math.ceil((now + delay_s) / self.tick_s)
        self._slots.setdefault(slot, {})[key] = call
        self._slot_of[key] = slot

    def cancel(self, key: Hashable) -> None:
        slot = self._slot_of.pop(key, None)
        if slot is None:
            return
        calls = self._slots[slot]
        del calls[key]
        if not calls:
            del self._slots[slot]

    def due(self, now: float) -> list[Callable[[], object]]:
        """Take out what is due at ``now``, the earliest first."""
        last = math.floor(now / self.tick_s + 1e-9)  # 11.1 / 0.1 is 110.99999999999999
        calls: list[Callable[[], object]] = []
        for slot in sorted(s for s in self._slots if s <= last):
            for key, call in self._slots.pop(slot).items():
                del self._slot_of[key]
                calls.append(call)
        return calls

    def run_due(self, now: float) -> int:
        """Run what is due at ``now`` (a failure is logged); how many ran."""
        calls = self.due(now)
        for call in calls:
            try:
                call()
            except Exception:
                log.exception("a connection's deadline failed")
        return len(calls)

    async def run(self) -> None:
        """Until cancelled: every tick, run what is due."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.tick_s)
            self.run_due(loop.time())

    def compact(self) -> None:
        """Rebuild the tables at their present size (a dict never shrinks)."""
        self._slots = dict(self._slots)
        self._slot_of = dict(self._slot_of)

    def __len__(self) -> int:
        return len(self._slot_of)


__all__ = ["TICK_S", "Wheel"]
