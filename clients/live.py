"""A live game as a client sees it: a snapshot with the later events folded in.

The engine state is derived from the move list (replayed from the snapshot, then one
``play`` per ``moved`` event), so every hint the client shows comes from the engine. Clocks
are the last readings the server sent less the mover's time since, counted on a monotonic
clock while the connection is up: they stop with it (:meth:`GameView.freeze`), and the next
snapshot brings the server's readings back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import engine
import protocol as p
from clients import render

Now = Callable[[], float]


@dataclass
class GameView:
    """One game being played or watched; ``me`` is our seat, None when watching."""

    game_id: str
    game: str
    options: dict[str, int | str]
    clock: p.TimeControl
    players: tuple[p.User, p.User]
    status: str
    state: engine.State
    me: int | None = None
    result: p.Result | None = None
    clocks_ms: tuple[int, int] | None = None
    clock_at: float = 0.0
    running: bool = True  # the clocks count on; False while the connection is down
    ms_used: list[int] = field(default_factory=list)
    chat_seqs: set[int] = field(default_factory=set)  # chat lines shown, by seq
    now: Now = time.monotonic

    @classmethod
    def from_snapshot(cls, snap: p.Snapshot, my_name: str | None,
                      now: Now = time.monotonic) -> GameView:
        """Build the view; IllegalMove if the engine rejects a stored move (a bug)."""
        state = engine.replay(snap.game, snap.options, (m.move for m in snap.moves))
        names = [u.name.lower() for u in snap.players]
        me = names.index(my_name.lower()) if my_name and my_name.lower() in names else None
        return cls(game_id=snap.game_id, game=snap.game, options=dict(snap.options),
                   clock=snap.clock, players=(snap.players[0], snap.players[1]),
                   status=snap.status, state=state, me=me, result=snap.result,
                   clocks_ms=_pair(snap.clocks_ms), clock_at=now(),
                   ms_used=[m.ms_used for m in snap.moves], now=now)

    # -- events -------------------------------------------------------------------------------
    def apply_moved(self, ev: p.Moved) -> None:
        """Play a ``moved`` event; IllegalMove if it does not fit (then resynchronise)."""
        if ev.ply != self.state.ply:
            raise engine.IllegalMove(f"event for ply {ev.ply}, the game is at {self.state.ply}")
        self.state = self.state.play(ev.move)
        self.ms_used.append(ev.ms_used)
        self.clocks_ms = _pair(ev.clocks_ms)
        self.clock_at = self.now()
        self.running = True
        if self.status == "waiting" and self.state.ply >= 2:
            self.status = "playing"

    def apply_over(self, ev: p.GameOver) -> None:
        self.freeze()  # the clocks as they stood when the game ended
        self.status = "over"
        self.result = p.Result(winner=ev.winner, reason=ev.reason, ending=ev.ending)

    def freeze(self) -> None:
        """Stop the clocks where they stand (the connection dropped, or the game ended)."""
        self.clocks_ms = self.clocks_now()
        self.clock_at = self.now()
        self.running = False

    # -- questions ----------------------------------------------------------------------------
    @property
    def over(self) -> bool:
        return self.status == "over"

    @property
    def colours(self) -> tuple[str, str]:
        return self.state.game.players

    @property
    def my_turn(self) -> bool:
        return (self.me is not None and not self.over and not self.state.is_over
                and self.state.to_move == self.me)

    def clocks_now(self) -> tuple[int, int] | None:
        """Time left per seat now: the mover's clock runs while the game is playing."""
        if self.clocks_ms is None:
            return None
        clocks = list(self.clocks_ms)
        if self.running and self.status == "playing" and not self.state.is_over:
            seat = self.state.to_move
            clocks[seat] = max(0, clocks[seat] - int((self.now() - self.clock_at) * 1000))
        return clocks[0], clocks[1]

    def result_text(self) -> str:
        """How the game ended, in words (why, when the rules ended it)."""
        return render.result_text(self.game, [(u.name, u.kind) for u in self.players],
                                  self.result, self.state)

    def who(self, seat: int) -> str:
        """``Red (alice)``."""
        return f"{self.colours[seat]} ({self.players[seat].name})"

    def title(self) -> str:
        name = self.state.game.name
        opts = render.format_options(self.options)
        watching = "" if self.me is not None else " | watching"
        return (f"{name} {opts} | game {self.game_id} | {p.format_time_control(self.clock)} | "
                f"ply {self.state.ply}{watching}")

    def turn_text(self) -> str:
        if self.over:
            return "Game over: " + self.result_text()
        if self.state.is_over:  # game_over follows at once
            winner = self.state.winner
            return f"The rules end the game: {render.ending_text(self.state)}" + (
                f"; {self.who(winner)} wins." if winner is not None else ".")
        mover = self.state.to_move
        if self.my_turn and self.me is not None:
            notes = [f"Your move ({self.colours[mover]})."]
            if render.only_pass(self.state):
                notes.append("Your only legal move is to pass: type 'pass'.")
            consequence = render.pass_consequence(self.state, self.me)
            if consequence is not None:
                notes.append(consequence)
            return " ".join(notes)
        return f"{self.who(mover)} to move."

    def panel(self, *, color: bool = False) -> str:
        """The board with the last move marked, both clocks, the engine's hints, whose turn."""
        last = render.last_move_text(self.state)
        if last and self.ms_used:
            last += f", {self.ms_used[-1] / 1000:.1f}s"
        text = render.position_panel(
            self.state, title=self.title(),
            players=[(_with_rating(u), u.kind) for u in self.players],
            clocks=self.clocks_now(), me=self.me, last=last, color=color)
        return f"{text}\n{self.turn_text()}"

    def status_line(self) -> str:
        """One line for the toolbar: both clocks (running) and whose turn."""
        clocks = self.clocks_now()
        parts = []
        for seat in (0, 1):
            arrow = ">" if seat == self.state.to_move and not self.over else " "
            reading = f" {render.short_clock_reading(clocks[seat])}" if clocks is not None else ""
            parts.append(f"{arrow}{self.colours[seat]} {self.players[seat].name}{reading}")
        turn = "over" if self.over else ("your move" if self.my_turn else "")
        return f"{self.game_id} | {' | '.join(parts)} | ply {self.state.ply} {turn}".rstrip()


def _pair(values: Sequence[int] | None) -> tuple[int, int] | None:
    return None if values is None else (values[0], values[1])


def _with_rating(user: p.User) -> str:
    """A player's name with their rating in the game's pool, as the game started."""
    label = render.rating_label(user.rating)
    return f"{user.name} ({label})" if label else user.name
