"""What the commit queue stores: one frozen value per kind of write, checked when built.

A game's life in the database is a handful of kinds of write: its start (``GameCreated``),
its moves (``MovePlayed``), chat (``ChatSent``), event numbers with no row of their own
(``SeqAdvanced``) and its end (``GameFinished``). Each is validated when it is made, so a
value that reaches the database is one the schema can take. The end of a rated game
carries its players (``RatedPlayers``): both rating updates are made and stored in the
transaction that stores the end (``rating_writes``), so they happen exactly once.

Each item may carry the ``epoch`` its writer holds the game at (a cluster node,
docs/SCALING.md section 4; a new game is created at epoch 0): the write is then *fenced*
(``statements.write_fenced_blocking``) and refused with ``StaleEpoch`` if the game was
taken over meanwhile. A single server leaves it None: unfenced, as always.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .models import GameRow, MoveRow, RatingRow, check_fits
from .records import FinishedStatus


@dataclass(frozen=True, slots=True)
class MovePlayed:
    """A move accepted by the engine. ``clock_ms``: the mover's time left after it."""

    game_id: str
    ply: int
    seq: int
    move: str
    player: int
    ms_used: int
    clock_ms: int | None
    played_at: datetime
    epoch: int | None = None

    def __post_init__(self) -> None:
        _check_seat("player", self.player)
        _check_at_least("ply", self.ply, 0)
        _check_at_least("seq", self.seq, 0)
        _check_at_least("ms_used", self.ms_used, 0)
        if not self.move:
            raise ValueError("a move cannot be empty")
        check_fits(MoveRow, "move", self.move)
        check_fits(MoveRow, "game_id", self.game_id)
        _check_aware("played_at", self.played_at)


@dataclass(frozen=True, slots=True)
class GameCreated:
    """A new game in progress, under an id its creator chose (``repo.new_game_id()``).

    ``seq`` is the game's event number at creation; ``started_at`` when the first player's
    clock starts. Starting games through the commit queue batches them with the moves of
    the games already running, instead of a transaction (and an fsync) each.
    """

    game_id: str
    game_key: str
    options: dict[str, Any]
    clock: dict[str, Any]
    rules_version: str
    player_ids: tuple[int, int]
    seq: int
    created_at: datetime
    started_at: datetime
    epoch: int | None = None
    rated: bool = False

    def __post_init__(self) -> None:
        check_fits(GameRow, "id", self.game_id)
        check_fits(GameRow, "game_key", self.game_key)
        check_fits(GameRow, "rules_version", self.rules_version)
        _check_at_least("seq", self.seq, 0)
        _check_aware("created_at", self.created_at)
        _check_aware("started_at", self.started_at)


@dataclass(frozen=True, slots=True)
class ChatSent:
    """A chat line said in a game."""

    game_id: str
    seq: int
    user_id: int
    text: str
    sent_at: datetime
    epoch: int | None = None

    def __post_init__(self) -> None:
        _check_at_least("seq", self.seq, 0)
        _check_aware("sent_at", self.sent_at)


@dataclass(frozen=True, slots=True)
class RatedPlayers:
    """Who a rated game's end rates: the pool (its game key), the players by seat, and the
    rating period's length (the deviation grows by one period's worth each ``period_s``)."""

    pool: str
    player_ids: tuple[int, int]
    period_s: float

    def __post_init__(self) -> None:
        check_fits(RatingRow, "pool", self.pool)
        if self.player_ids[0] == self.player_ids[1]:
            raise ValueError("a rated game has two different players")
        if not self.period_s > 0:
            raise ValueError(f"a rating period lasts more than 0 s, not {self.period_s!r}")


@dataclass(frozen=True, slots=True)
class GameFinished:
    """The end of a game: ``winner`` is a seat or None; ``status`` over or aborted.

    ``rated``: the players to rate if the game ends ``over`` (an aborted game rates no one).
    """

    game_id: str
    winner: int | None
    reason: str
    seq: int
    ended_at: datetime
    status: FinishedStatus = "over"
    epoch: int | None = None
    rated: RatedPlayers | None = None

    def __post_init__(self) -> None:
        if self.status not in ("over", "aborted"):
            raise ValueError(f"a game ends as over or aborted, not {self.status!r}")
        if self.winner is not None:
            _check_seat("winner", self.winner)
            if self.status != "over":
                raise ValueError("an aborted game has no winner")
        _check_at_least("seq", self.seq, 0)
        _check_aware("ended_at", self.ended_at)
        check_fits(GameRow, "reason", self.reason)


@dataclass(frozen=True, slots=True)
class SeqAdvanced:
    """An event that is numbered but has no row of its own (a player left or came back).

    Storing the number keeps a game's event numbering gap-free across restarts: after a
    crash the next event gets the next number, never one already sent.
    """

    game_id: str
    seq: int
    epoch: int | None = None

    def __post_init__(self) -> None:
        _check_at_least("seq", self.seq, 1)


def _check_seat(name: str, value: int) -> None:
    if value not in (0, 1):
        raise ValueError(f"{name} must be a seat, 0 or 1, not {value!r}")


def _check_at_least(name: str, value: int, minimum: int) -> None:
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, not {value!r}")


def _check_aware(name: str, value: datetime) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime, not {value!r}")


Item = GameCreated | MovePlayed | ChatSent | GameFinished | SeqAdvanced


ITEM_TYPES = (GameCreated, MovePlayed, ChatSent, GameFinished, SeqAdvanced)
