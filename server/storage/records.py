"""The immutable values the storage API returns.

They are detached from any session, so holding on to one can never trigger a query.
``winner`` and ``player`` are seats: 0 is the player who moved first, 1 the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from server.ratings.glicko2 import Rating

UserKind = Literal["human", "guest", "bot"]
TokenKind = Literal["session", "bot"]
GameStatus = Literal["playing", "over", "aborted"]
FinishedStatus = Literal["over", "aborted"]
ChallengePolicy = Literal["everyone", "registered", "nobody"]


@dataclass(frozen=True, slots=True)
class User:
    id: int
    name: str
    kind: UserKind
    password_hash: str | None
    created_at: datetime
    failed_logins: int
    locked_until: datetime | None
    challenge_policy: ChallengePolicy = "everyone"
    deleted_at: datetime | None = None
    """When its owner deleted it (``Store.delete_account``); None while it is live."""

    def is_locked(self, now: datetime) -> bool:
        """Whether logins are refused at ``now`` after too many failures."""
        return self.locked_until is not None and now < self.locked_until


@dataclass(frozen=True, slots=True)
class ChallengeTerms:
    """What decides a challenge to a user: who they take challenges from, and whether the
    challenger has played them before (a challenge from a stranger lapses)."""

    policy: ChallengePolicy
    acquainted: bool


@dataclass(frozen=True, slots=True)
class Token:
    """What is known about a token; the token itself is never stored."""

    id: int
    user_id: int
    kind: TokenKind
    label: str
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True, slots=True)
class GameInfo:
    """A game without its moves: what a history listing shows."""

    id: str
    game_key: str
    options: dict[str, Any]
    clock: dict[str, Any]
    rules_version: str
    player_ids: tuple[int, int]
    players: tuple[str, str]
    status: GameStatus
    winner: int | None
    reason: str | None
    created_at: datetime
    started_at: datetime
    ended_at: datetime | None
    last_seq: int
    plies: int
    player_kinds: tuple[UserKind, UserKind]
    rated: bool = False


@dataclass(frozen=True, slots=True)
class MoveRecord:
    ply: int
    seq: int
    move: str
    player: int
    ms_used: int
    clock_ms: int | None
    played_at: datetime


@dataclass(frozen=True, slots=True)
class ChatRecord:
    seq: int
    user_id: int
    user_name: str
    text: str
    sent_at: datetime


@dataclass(frozen=True, slots=True)
class RatingChange:
    """One seat of a rated game: the rating it started from (the stored one, its deviation
    grown for the time since its player's last rated game) and the one it left."""

    seat: int
    user_id: int
    before: Rating
    after: Rating


GameRatings = tuple[RatingChange, RatingChange]
"""Both seats' changes of one rated game, seat 0 first."""


@dataclass(frozen=True, slots=True)
class StoredGame:
    """A whole game: enough to replay it, resume it after a restart, or show its record."""

    info: GameInfo
    moves: tuple[MoveRecord, ...]
    chat: tuple[ChatRecord, ...]
    ratings: GameRatings | None = None
    """Both players' rating changes, if the game is rated and over."""

    @property
    def last_seq(self) -> int:
        """The highest event sequence number written for this game."""
        return max(
            self.info.last_seq,
            self.moves[-1].seq if self.moves else 0,
            self.chat[-1].seq if self.chat else 0,
        )

    def remaining_ms(self, player: int) -> int | None:
        """A seat's remaining time after its last move; None if it has not moved or untimed.

        A seat that has not moved yet still has the initial time of the clock settings.
        """
        for move in reversed(self.moves):
            if move.player == player:
                return move.clock_ms
        return None


@dataclass(frozen=True, slots=True)
class GamePage:
    """One page of a history listing, newest first; pass ``next_cursor`` for the next."""

    games: tuple[GameInfo, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class PlayingGame:
    """A game in progress as a listing shows it: each seat's rating in the game's pool as
    the game started (None: no rated game there yet)."""

    info: GameInfo
    ratings: tuple[RatingPoint | None, RatingPoint | None]


@dataclass(frozen=True, slots=True)
class PlayingPage:
    """One page of the games in progress, newest first; pass ``next_cursor`` for the next."""

    games: tuple[PlayingGame, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class PoolRating:
    """A player's stored rating in one pool, with their record there.

    ``rating`` is as stored after their last rated game, at ``rated_at``: age it to now
    (``glicko2.age``) before showing whether it is provisional.
    """

    user_id: int
    name: str
    kind: UserKind
    pool: str
    rating: Rating
    rated_at: datetime
    games: int
    wins: int
    losses: int
    draws: int


@dataclass(frozen=True, slots=True)
class RatingPoint:
    """One point of a player's rating history: after the rated game ``game_id``."""

    game_id: str
    pool: str
    rated_at: datetime
    rating: Rating
