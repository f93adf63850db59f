"""The value types that messages are built from: bounded scalars and small structures.

The scalar aliases are plain ``int``/``str`` to the type checker and carry their wire
bounds for the codec (see :mod:`protocol._schema`). The structures are frozen dataclasses
that validate when built, like the messages that contain them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from protocol._schema import Floats, Free, Ints, Items, Struct, Text
from protocol.errors import InvalidMessage
from protocol.limits import (
    MAX_CELLS,
    MAX_CURSOR_CHARS,
    MAX_INT32,
    MAX_MOVE_CHARS,
    MAX_OPTION_STRING_CHARS,
    MAX_OPTIONS,
    MAX_SAFE_INT,
    MAX_TOKEN_CHARS,
)
from protocol.timecontrol import TimeControl

__all__ = [
    "Ending",
    "Limits",
    "OpenSeek",
    "PlayedMove",
    "PoolRating",
    "RatingPoint",
    "RatingUpdate",
    "RatingUpdates",
    "Record",
    "Result",
    "Snapshot",
    "Standing",
    "Summary",
    "User",
]

if TYPE_CHECKING:
    import engine

# Scalars ------------------------------------------------------------------------------------

RequestId = Annotated[int, Ints(0, MAX_INT32)]
"""Chosen by the client, echoed by the reply."""
GameId = Annotated[str, Text(1, 32, pattern=r"[0-9A-Za-z_-]+")]
"""Chosen by the server when the game is created, e.g. ``"k3v9q2x7ma"``; never reused."""
SeekId = Annotated[int, Ints(1, MAX_INT32)]
ChallengeId = Annotated[int, Ints(1, MAX_INT32)]
Ply = Annotated[int, Ints(0, MAX_INT32)]
"""Number of moves played before this one; the first move of a game is ply 0."""
Seq = Annotated[int, Ints(1, MAX_INT32)]
"""Per-game event number: 1 for game_started, then +1 for every game event."""
SinceSeq = Annotated[int, Ints(0, MAX_INT32)]
Millis = Annotated[int, Ints(0, MAX_SAFE_INT)]
"""A duration in milliseconds."""
EpochMillis = Annotated[int, Ints(0, MAX_SAFE_INT)]
"""A time in milliseconds since 1970-01-01T00:00:00Z."""
Version = Annotated[int, Ints(0, 65535)]
Seat = Literal[0, 1]
"""A player's index: 0 moves first."""

Username = Annotated[str, Text(2, 20, pattern=r"[A-Za-z][A-Za-z0-9_-]*")]
GameKey = Annotated[str, Text(1, 32, pattern=r"[a-z][a-z0-9_]*")]
OptionName = Annotated[str, Text(1, 32, pattern=r"[a-z][a-z0-9_]*")]
OptionValue = (
    Annotated[int, Ints(-MAX_INT32 - 1, MAX_INT32)]
    | Annotated[str, Text(1, MAX_OPTION_STRING_CHARS)]
)
Options = Annotated[Mapping[OptionName, OptionValue], Items(0, MAX_OPTIONS)]
"""A game's options by name, e.g. ``{"size": 9}``; values are ints or choice strings."""
MoveText = Annotated[str, Text(1, MAX_MOVE_CHARS)]
CellName = Annotated[str, Text(2, 3, pattern=r"[a-z][1-9][0-9]?")]
"""A cell: column letter and row number, e.g. ``c3``."""
Cells = Annotated[str, Text(1, MAX_CELLS, pattern=r"[.01]+")]
"""A position's cells in the board's order, one character each: ``.`` empty, ``0`` or ``1``
a piece of that seat's colour."""
Token = Annotated[str, Text(1, MAX_TOKEN_CHARS, pattern=r"[\x21-\x7e]+")]
Cursor = Annotated[str, Text(1, MAX_CURSOR_CHARS, pattern=r"[\x21-\x7e]+")]
FreeMap = Annotated[Mapping[Annotated[str, Text(1, 64)], Annotated[Any, Free()]], Items(0, 64)]
"""A map of plain values whose shape another part of the system defines."""

UserKind = Literal["human", "guest", "bot"]
Status = Literal["waiting", "playing", "over"]
"""waiting: not both players have moved yet (no clock runs, abort allowed)."""
StatusFilter = Literal["playing", "over"]
"""playing: any game not over (waiting or playing)."""
EndReason = Literal["normal", "resign", "timeout", "abandon", "abort"]
Color = Literal["random", 0, 1]
ChallengeEnd = Literal["accepted", "declined", "cancelled"]
ChallengePolicy = Literal["everyone", "registered", "nobody"]
"""Who may challenge a player: anyone, registered players (not guests), or nobody."""
ResultFilter = Literal["win", "loss"]
Flag = Literal[True, False]
"""A bool on the wire."""
EndingHow = Literal["no_move", "passes"]
"""How the rules ended a game: the player to move had no legal move, or both passed."""
Score = Annotated[int, Ints(0, MAX_INT32)]
RematchEnd = Literal["accepted", "declined", "lapsed"]
"""Why a rematch offer ended: taken (a new game), refused, or a player left."""
RatingInt = Annotated[int, Ints(-10_000, 10_000)]
"""A rating as shown: rounded to an integer."""
DeviationInt = Annotated[int, Ints(0, 350)]
RatingFloat = Annotated[float, Floats(-10_000.0, 10_000.0)]
DeviationFloat = Annotated[float, Floats(0.0, 350.0)]
VolatilityFloat = Annotated[float, Floats(0.0, 10.0)]
Count = Annotated[int, Ints(0, MAX_SAFE_INT)]

MAX_MOVES = 65_535
MAX_LISTED = 10_000

# Structures ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class User(Struct):
    """A player or connected user as others see them (``kind`` "bot" marks a bot).

    ``rating``: their rating in the pool of where they appear (a game, a seek, a
    leaderboard); ``ratings``: in every pool they have played rated games in (``authed``,
    the online list, a profile). Absent for someone with no rated game there.
    """

    name: Username
    kind: UserKind
    rating: PoolRating | None = None
    ratings: Annotated[Sequence[PoolRating], Items(0, 64)] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolRating(Struct):
    """A rating in one game's pool as players see it: Glicko-2 rating and deviation,
    rounded; ``provisional`` (deviation above 110) is shown with a ``?``. ``games`` and the
    record are given where a profile or a leaderboard shows them."""

    game: GameKey
    rating: RatingInt
    deviation: DeviationInt
    provisional: Flag
    games: Count | None = None
    wins: Count | None = None
    losses: Count | None = None
    draws: Count | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RatingUpdate(Struct):
    """One player's change in a rated game, exactly as stored: the rating the game started
    from (the deviation grown for the time since their last rated game) and the one it
    left. Seat order, in ``game_over`` and in records."""

    rating_before: RatingFloat
    deviation_before: DeviationFloat
    volatility_before: VolatilityFloat
    rating_after: RatingFloat
    deviation_after: DeviationFloat
    volatility_after: VolatilityFloat


RatingUpdates = tuple[RatingUpdate, RatingUpdate]
"""Seat 0's change, then seat 1's."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RatingPoint(Struct):
    """A point of a rating history: a player's rating after one rated game."""

    game: GameKey
    game_id: GameId
    at_ms: EpochMillis
    rating: RatingInt
    deviation: DeviationInt


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing(Struct):
    """One line of a leaderboard or a ladder's standings: rank, and the player with their
    rating in the pool (``user.rating``)."""

    rank: Annotated[int, Ints(1, MAX_SAFE_INT)]
    user: User


@dataclass(frozen=True, slots=True, kw_only=True)
class Ending(Struct):
    """How the rules decided a game that ended by them (reason ``normal``), as the engine
    says (``State.ending``): ``how``, what the rules compared (``scores``, seat 0's then
    seat 1's; absent where the game keeps no score, as Hadron) and one sentence for people
    (``text``, e.g. "both passed: Black 14 groups, White 11; fewer groups wins")."""

    how: EndingHow
    scores: tuple[Score, Score] | None = None
    text: Annotated[str, Text(1, 200)]

    @classmethod
    def of(cls, ending: engine.Ending | None) -> Ending | None:
        """The protocol's form of the engine's ending (None for None)."""
        if ending is None:
            return None
        return cls(how=cast(Any, ending.how), scores=ending.scores, text=ending.text)


@dataclass(frozen=True, slots=True, kw_only=True)
class Result(Struct):
    """How a game ended: ``winner`` is None exactly when the game was aborted; ``ending``
    (reason ``normal`` only) says how the rules decided it, where the sender knows."""

    winner: Seat | None = None
    reason: EndReason
    ending: Ending | None = None

    def _check(self) -> None:
        check_winner("result", self.winner, self.reason)
        check_ending("result", self.reason, self.ending)

    @classmethod
    def of(cls, ending: engine.Ending) -> Result:
        """The result of a game the rules ended thus."""
        return cls(winner=cast(Any, ending.winner), reason="normal", ending=Ending.of(ending))


def check_winner(path: str, winner: int | None, reason: str) -> None:
    if (winner is None) != (reason == "abort"):
        raise InvalidMessage(f"{path}: winner must be given unless the reason is 'abort'")


def check_ending(path: str, reason: str, ending: Ending | None) -> None:
    if ending is not None and reason != "normal":
        raise InvalidMessage(f"{path}.ending: given only when the reason is 'normal'")


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayedMove(Struct):
    """One move of a game as recorded: canonical text, seat, time used, clock left."""

    ply: Ply
    move: MoveText
    by: Seat
    ms_used: Millis
    clock_ms: Millis | None = None


Players = tuple[User, User]
"""Seat 0, then seat 1."""
ClocksMs = tuple[Millis, Millis]
"""Time left for seat 0, then seat 1."""
Moves = Annotated[Sequence[PlayedMove], Items(0, MAX_MOVES)]


def check_moves(path: str, moves: Sequence[PlayedMove], ply: int | None = None) -> None:
    for index, played in enumerate(moves):
        if played.ply != index:
            raise InvalidMessage(f"{path}.moves[{index}].ply: expected {index}")
    if ply is not None and ply != len(moves):
        raise InvalidMessage(f"{path}.ply: expected the number of moves, {len(moves)}")


def check_result(path: str, status: str, result: Result | None) -> None:
    if (status == "over") != (result is not None):
        raise InvalidMessage(f"{path}.result: given exactly when status is 'over'")


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot(Struct):
    """Everything about a live game a client needs to show and continue it.

    ``seq`` is the number of the last game event the snapshot includes: resume from it.
    ``clocks_ms`` (time left per seat when the snapshot was taken) is None without a clock.
    """

    game_id: GameId
    game: GameKey
    options: Options
    clock: TimeControl
    players: Players
    status: Status
    moves: Moves
    clocks_ms: ClocksMs | None = None
    to_move: Seat
    ply: Ply
    result: Result | None = None
    seq: Seq
    rated: Flag | None = None
    """True for a rated game (absent: casual)."""
    rating_changes: RatingUpdates | None = None
    """Both players' rating changes, once a rated game is over."""

    def _check(self) -> None:
        check_moves("snapshot", self.moves, self.ply)
        check_result("snapshot", self.status, self.result)


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary(Struct):
    """One line of a game list."""

    game_id: GameId
    game: GameKey
    options: Options
    clock: TimeControl
    players: Players
    status: Status
    ply: Ply
    result: Result | None = None
    created_ms: EpochMillis
    rated: Flag | None = None

    def _check(self) -> None:
        check_result("summary", self.status, self.result)


@dataclass(frozen=True, slots=True, kw_only=True)
class Record(Struct):
    """A whole game for history and replay: replaying ``moves`` reproduces it."""

    game_id: GameId
    game: GameKey
    options: Options
    clock: TimeControl
    players: Players
    status: Status
    moves: Moves
    result: Result | None = None
    created_ms: EpochMillis
    ended_ms: EpochMillis | None = None
    rated: Flag | None = None
    rating_changes: RatingUpdates | None = None
    """Both players' rating changes, for a rated game that is over."""

    def _check(self) -> None:
        check_moves("record", self.moves)
        check_result("record", self.status, self.result)


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenSeek(Struct):
    """A seek waiting in the lobby for an opponent."""

    seek_id: SeekId
    user: User
    game: GameKey
    options: Options
    clock: TimeControl
    rated: Flag | None = None
    rating_min: RatingInt | None = None
    rating_max: RatingInt | None = None
    """Only a player rated within [rating_min, rating_max] in the game's pool is paired."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits(Struct):
    """What the server allows on this connection (sent in ``welcome``)."""

    max_frame_bytes: Annotated[int, Ints(1024, MAX_INT32)]
    rate_per_s: Annotated[int, Ints(1, 100_000)]
    burst: Annotated[int, Ints(1, 100_000)]
    max_open_seeks: Annotated[int, Ints(0, 1000)]


GameInfo = FreeMap
"""One game's metadata and option schema, as ``engine.get_game(key).describe()`` gives it."""

Geometry = FreeMap
"""A board's cells, drawing coordinates and neighbours, as the engine's
``game.board(options).describe()`` gives it."""

PositionSummary = FreeMap
"""Per-game facts about a position (group counts, scores), as ``State.summary()`` gives it."""
