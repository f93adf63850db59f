"""Game clocks kept by the server: Fischer, fixed time per move, correspondence, unlimited.

A clock is pure arithmetic over times the caller passes in (milliseconds on a monotonic
or wall clock, the caller's choice), so it is easy to test and to restore after a restart:
the server restores each player's remaining time and starts the turn afresh, which means
clocks do not run while the server is down.

A turn can start without the clock running (``start_turn(now, running=False)``): that is
how a game waits for both players' first moves. Such a turn's time is measured (``ms_used``)
but not charged, and nobody can lose on time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from protocol import Correspondence, Fischer, PerMove, Unlimited

DAY_MS = 86_400_000

KINDS = ("fischer", "per_move", "correspondence", "unlimited")


@dataclass(frozen=True, slots=True)
class TimeControl:
    """A time control as sent on the wire: kind plus its parameters in milliseconds/days."""

    kind: str
    base_ms: int = 0
    increment_ms: int = 0
    per_move_ms: int = 0
    days_per_move: int = 0

    @classmethod
    def from_wire(cls, spec: Mapping[str, Any]) -> TimeControl:
        kind = spec.get("kind")
        if kind == "fischer":
            return cls("fischer", base_ms=int(spec["base_ms"]),
                       increment_ms=int(spec.get("increment_ms", 0)))
        if kind == "per_move":
            return cls("per_move", per_move_ms=int(spec["per_move_ms"]))
        if kind == "correspondence":
            return cls("correspondence", days_per_move=int(spec["days_per_move"]))
        if kind == "unlimited":
            return cls("unlimited")
        raise ValueError(f"unknown time control kind {kind!r} (known: {', '.join(KINDS)})")

    def to_wire(self) -> dict[str, Any]:
        if self.kind == "fischer":
            return {"kind": "fischer", "base_ms": self.base_ms, "increment_ms": self.increment_ms}
        if self.kind == "per_move":
            return {"kind": "per_move", "per_move_ms": self.per_move_ms}
        if self.kind == "correspondence":
            return {"kind": "correspondence", "days_per_move": self.days_per_move}
        return {"kind": "unlimited"}

    @property
    def realtime(self) -> bool:
        """Fischer and per-move games are played in one sitting; the others are not."""
        return self.kind in ("fischer", "per_move")

    def initial_ms(self) -> int | None:
        """Each player's time at the start of a turn sequence (None: no clock)."""
        if self.kind == "fischer":
            return self.base_ms
        if self.kind == "per_move":
            return self.per_move_ms
        if self.kind == "correspondence":
            return self.days_per_move * DAY_MS
        return None


class Clock:
    """Both players' remaining time and when the current turn started."""

    __slots__ = ("control", "remaining", "running", "turn_started")

    def __init__(self, control: TimeControl, remaining: list[int | None] | None = None) -> None:
        self.control = control
        start = control.initial_ms()
        self.remaining: list[int | None] = list(remaining) if remaining else [start, start]
        self.turn_started: int | None = None  # ms; None until the clock is started
        self.running = False  # whether the current turn's time is charged

    def start_turn(self, now_ms: int, *, running: bool = True) -> None:
        """A turn begins at ``now_ms``; its time is charged only if ``running``."""
        self.turn_started = now_ms
        self.running = running

    def left(self, player: int, now_ms: int, to_move: int) -> int | None:
        """Time ``player`` has left right now (their clock runs only on their turn)."""
        rem = self.remaining[player]
        if rem is None:
            return None
        if player == to_move and self.running and self.turn_started is not None:
            rem -= now_ms - self.turn_started
        return rem

    def flag_at(self, player: int) -> int | None:
        """The time (ms) at which ``player``, to move, runs out; None if never."""
        rem = self.remaining[player]
        if rem is None or self.turn_started is None or not self.running:
            return None
        return self.turn_started + rem

    def finish_turn(self, player: int, now_ms: int) -> tuple[int, int | None]:
        """Charge the turn to ``player``; return (ms used, their clock after the move).

        The caller checks ``flag_at`` first: a player whose time is out has lost already.
        A turn taken while the clock was not running costs nothing. The next turn starts
        at ``now_ms``, running or not as this one was (``start_turn`` changes that).
        """
        used = max(0, now_ms - (self.turn_started if self.turn_started is not None else now_ms))
        rem = self.remaining[player]
        if rem is not None and self.running:
            c = self.control
            # Fischer adds the increment; per move and correspondence start afresh each turn.
            rem = rem - used + c.increment_ms if c.kind == "fischer" else c.initial_ms()
            self.remaining[player] = rem
        self.turn_started = now_ms
        return used, rem

    def snapshot(self, now_ms: int, to_move: int) -> list[int | None]:
        return [self.left(0, now_ms, to_move), self.left(1, now_ms, to_move)]


def clock_from_wire(spec: Mapping[str, Any]) -> Fischer | PerMove | Correspondence | Unlimited:
    """The protocol value of a time control stored or sent as a plain map."""
    kind = spec.get("kind")
    fields = {k: v for k, v in spec.items() if k != "kind"}
    if kind == "fischer":
        return Fischer(**fields)
    if kind == "per_move":
        return PerMove(**fields)
    if kind == "correspondence":
        return Correspondence(**fields)
    return Unlimited()
