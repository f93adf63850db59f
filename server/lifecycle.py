"""A game's lifecycle, as one table: its statuses and the only changes between them.

    waiting --both players have moved--> playing
    waiting --the game ends (a final move, resign, claim_win)--> over
    playing --the game ends (a final move, resign, timeout, claim_win)--> over
    waiting --abort--> aborted

A game is ``waiting`` until both players have made their first move
(:data:`CLOCK_STARTS_AT_PLY`): until then no clock runs and either player may abort. The
database keeps ``playing`` for both live statuses (waiting is derived from the number of
moves) and ``over`` or ``aborted`` for the ends; clients see ``waiting``, ``playing`` or
``over``. A change the table does not allow raises :class:`LifecycleError` naming the status.
"""

from __future__ import annotations

import enum

CLOCK_STARTS_AT_PLY = 2  # before this ply the game is waiting: no clock runs, abort allowed


class GameStatus(enum.StrEnum):
    WAITING = "waiting"
    PLAYING = "playing"
    OVER = "over"
    ABORTED = "aborted"

    @property
    def live(self) -> bool:
        """Still being played: moves, resignations and claims are accepted."""
        return self in (GameStatus.WAITING, GameStatus.PLAYING)

    @property
    def stored(self) -> str:
        """The status kept in the database: playing, over or aborted."""
        return "playing" if self.live else self.value

    @property
    def wire(self) -> str:
        """The status clients see: waiting, playing or over."""
        return "over" if self is GameStatus.ABORTED else self.value

    @classmethod
    def of(cls, stored: str, ply: int) -> GameStatus:
        """The status of a stored game with ``ply`` moves."""
        if stored != "playing":
            return cls(stored)
        return cls.WAITING if ply < CLOCK_STARTS_AT_PLY else cls.PLAYING


LIVE = frozenset({GameStatus.WAITING, GameStatus.PLAYING})
"""The live statuses, for ``status in LIVE`` where a property call would cost (every move)."""


class Change(enum.Enum):
    BOTH_MOVED = "both players have moved"
    END = "end"
    ABORT = "be aborted"


TRANSITIONS: dict[tuple[GameStatus, Change], GameStatus] = {
    (GameStatus.WAITING, Change.BOTH_MOVED): GameStatus.PLAYING,
    (GameStatus.WAITING, Change.END): GameStatus.OVER,
    (GameStatus.PLAYING, Change.END): GameStatus.OVER,
    (GameStatus.WAITING, Change.ABORT): GameStatus.ABORTED,
}


class LifecycleError(Exception):
    """A change the lifecycle does not allow from the game's status."""

    def __init__(self, status: GameStatus, change: Change) -> None:
        super().__init__(f"a game that is {status.value} cannot {change.value}")
        self.status = status
        self.change = change


def after(status: GameStatus, change: Change) -> GameStatus:
    """The status a change leads to; LifecycleError if it is not allowed from ``status``."""
    try:
        return TRANSITIONS[status, change]
    except KeyError:
        raise LifecycleError(status, change) from None


def allows(status: GameStatus, change: Change) -> bool:
    return (status, change) in TRANSITIONS
