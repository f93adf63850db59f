"""Game clocks kept by the server, under any time control (``protocol.timecontrol``).

A clock is pure arithmetic over times the caller passes in (milliseconds on a monotonic
or wall clock, the caller's choice), so it is easy to test and to restore after a restart:
the server restores each player's remaining time and starts the turn afresh, which means
clocks do not run while the server is down.

A turn can start without the clock running (``start_turn(now, running=False)``): that is
how a game waits for both players' first moves. Such a turn's time is measured (``ms_used``)
but not charged, and nobody can lose on time.
"""

from __future__ import annotations

from protocol import TimeControl


class GameClock:
    """Both players' remaining time under a time control, and when the current turn started."""

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
            rem = self.control.after_move(rem, used)
            self.remaining[player] = rem
        self.turn_started = now_ms
        return used, rem

    def snapshot(self, now_ms: int, to_move: int) -> list[int | None]:
        return [self.left(0, now_ms, to_move), self.left(1, now_ms, to_move)]
