"""The database schema: one DeclarativeBase and eight tables.

    users         accounts: humans, guests and bots; names unique case-insensitively;
                  who may challenge each (``challenge_policy``); a deleted account keeps
                  its row under an anonymous name (``deleted_at`` set, no password)
    held_names    the former names of deleted accounts, kept from registration a while
    api_tokens    login sessions and bot tokens, stored only as sha256 digests
    games         one row per game: who, what, options, clock settings, result, rated
    moves         the move list, the source of truth for positions and clocks
    chat          chat lines said in a game
    ratings       a player's Glicko-2 rating in one pool (a game key), with their record
    game_ratings  per rated game and seat: the rating before and after it (the history)

A rating row is derived data kept for speed: it always equals the fold of its player's
``game_ratings`` rows, which are written with the rating in the transaction that finishes
the game (``tessera ratings verify`` recomputes every pool from the stored games).

Positions are never stored: they are a fold of the move list. Clocks are not stored on the
game either: each move records the time its player used and that player's remaining time
afterwards, so the clocks of a game in progress are read off its last moves.

Every moment is a timezone-aware UTC ``datetime`` in Python (``UTCDateTime``), stored as
``TIMESTAMP WITH TIME ZONE`` on PostgreSQL and as a fixed-width text timestamp on SQLite,
where text order is time order, so keyset pagination works the same on both.

Rows are plain mapped classes with no relationships, so nothing can lazy-load: queries join
what they need explicitly. Constraint and index names follow ``NAMING_CONVENTION`` so that
migrations can refer to them on every backend (SQLite batch mode needs names).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Double,
    ForeignKey,
    Index,
    MetaData,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

NAMING_CONVENTION: dict[str, str] = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

USER_KINDS = ("human", "guest", "bot")
CHALLENGE_POLICIES = ("everyone", "registered", "nobody")  # who may challenge a user
TOKEN_KINDS = ("session", "bot")
GAME_STATUSES = ("playing", "over", "aborted")


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend.

    Naive datetimes are refused on the way in (they are always a bug here); values read back
    are aware and in UTC, also on SQLite, which stores no offset.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value!r}: pass an aware datetime (UTC)")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    """The one declarative base; its metadata carries the naming convention."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: JSON()}


def check_fits(row_class: type[Base], field: str, value: str | None) -> None:
    """ValueError if a text is longer than its column allows.

    PostgreSQL enforces VARCHAR lengths and SQLite does not; checking before writing makes
    both refuse the same values, with a clear message instead of a driver error.
    """
    if value is None:
        return
    length = _column_length(row_class, field)
    if length is not None and len(value) > length:
        raise ValueError(
            f"{row_class.__tablename__}.{field} holds at most {length} characters: {value!r}"
        )


@functools.cache
def _column_length(row_class: type[Base], field: str) -> int | None:
    length: int | None = getattr(row_class.__table__.c[field].type, "length", None)
    return length


class UserRow(Base):
    """An account. ``name_key`` is the case-folded name and carries the uniqueness."""

    __tablename__ = "users"
    __table_args__ = (
        CheckConstraint(_one_of("kind", USER_KINDS), name="kind"),
        CheckConstraint(_one_of("challenge_policy", CHALLENGE_POLICIES),
                        name="challenge_policy"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64))
    name_key: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(8))
    password_hash: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime]
    failed_logins: Mapped[int] = mapped_column(default=0, server_default=text("0"))
    locked_until: Mapped[datetime | None]
    challenge_policy: Mapped[str] = mapped_column(String(16), default="everyone",
                                                  server_default=text("'everyone'"))
    # set when its owner deleted it: renamed ``deleted-...``, no password, no live token;
    # its games and ratings stay (under that name), out of leaderboards and profiles
    deleted_at: Mapped[datetime | None]


class HeldNameRow(Base):
    """The former name of a deleted account (as ``UserRow.name_key``), which nobody may
    register before ``held_until``: whoever knew the player by it is not met by someone
    else under it at once. Nothing links it to the account it was."""

    __tablename__ = "held_names"

    name_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    held_until: Mapped[datetime]


class ApiTokenRow(Base):
    """A bearer token. Only the sha256 hex digest of the random token is kept."""

    __tablename__ = "api_tokens"
    __table_args__ = (CheckConstraint(_one_of("kind", TOKEN_KINDS), name="kind"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(8))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    label: Mapped[str] = mapped_column(String(64), default="", server_default=text("''"))
    created_at: Mapped[datetime]
    last_used_at: Mapped[datetime | None]
    expires_at: Mapped[datetime | None]
    # indexed: the server asks every second for the tokens revoked lately
    revoked_at: Mapped[datetime | None] = mapped_column(index=True)


class GameRow(Base):
    """One game. ``winner`` is a seat (0 or 1); ``ended_at`` is set exactly when it is over.

    ``last_seq`` is the sequence number of the last event written to this row (creation,
    then the finish); events in between live in ``moves`` and ``chat``. ``epoch`` is the
    fencing token of the game's owner in a cluster (``server/cluster/fencing.py``).
    """

    __tablename__ = "games"
    __table_args__ = (
        CheckConstraint(_one_of("status", GAME_STATUSES), name="status"),
        CheckConstraint("winner IS NULL OR (winner IN (0, 1) AND status = 'over')", name="winner"),
        CheckConstraint(
            "(status = 'playing' AND ended_at IS NULL)"
            " OR (status <> 'playing' AND ended_at IS NOT NULL)",
            name="ended_at",
        ),
        Index("ix_games_ended_at_id", "ended_at", "id"),
        Index("ix_games_player0_id_ended_at_id", "player0_id", "ended_at", "id"),
        Index("ix_games_player1_id_ended_at_id", "player1_id", "ended_at", "id"),
        Index("ix_games_game_key_ended_at_id", "game_key", "ended_at", "id"),
        Index("ix_games_status_ended_at_id", "status", "ended_at", "id"),
    )

    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    game_key: Mapped[str] = mapped_column(String(32))
    options: Mapped[dict[str, Any]]
    clock: Mapped[dict[str, Any]]
    rules_version: Mapped[str] = mapped_column(String(32))
    player0_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    player1_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    status: Mapped[str] = mapped_column(String(8))
    winner: Mapped[int | None] = mapped_column(SmallInteger)
    reason: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime]
    started_at: Mapped[datetime]
    ended_at: Mapped[datetime | None]
    last_seq: Mapped[int] = mapped_column(default=0, server_default=text("0"))
    # the fencing token of the game's owner in a cluster: bumped by each takeover
    epoch: Mapped[int] = mapped_column(default=0, server_default=text("0"))
    # a rated game changes both players' ratings when it ends (not when aborted)
    rated: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))


class MoveRow(Base):
    """One move. ``clock_ms`` is the mover's remaining time after it (None if untimed)."""

    __tablename__ = "moves"
    __table_args__ = (
        UniqueConstraint("game_id", "seq"),
        CheckConstraint("player IN (0, 1)", name="player"),
        CheckConstraint("ply >= 0", name="ply"),
        CheckConstraint("ms_used >= 0", name="ms_used"),
    )

    game_id: Mapped[str] = mapped_column(
        ForeignKey("games.id", ondelete="CASCADE"), primary_key=True
    )
    ply: Mapped[int] = mapped_column(primary_key=True)
    seq: Mapped[int]
    move: Mapped[str] = mapped_column(String(256))
    player: Mapped[int] = mapped_column(SmallInteger)
    ms_used: Mapped[int] = mapped_column(BigInteger)
    clock_ms: Mapped[int | None] = mapped_column(BigInteger)
    played_at: Mapped[datetime]


class ChatRow(Base):
    """A chat line said in a game, numbered in the game's event sequence."""

    __tablename__ = "chat"

    game_id: Mapped[str] = mapped_column(
        ForeignKey("games.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(primary_key=True)
    # indexed: deleting a user (the guest sweep) checks the chat lines that name it
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    text: Mapped[str] = mapped_column(Text)
    sent_at: Mapped[datetime]


class RatingRow(Base):
    """A player's rating in one pool (a game key): Glicko-2, on the Glicko scale.

    ``rated_at`` is when their last rated game in the pool ended: the deviation grows with
    the time since (``server.ratings.glicko2.age``). ``games`` counts their rated games.
    """

    __tablename__ = "ratings"
    __table_args__ = (
        CheckConstraint("deviation > 0", name="deviation"),
        CheckConstraint("volatility > 0", name="volatility"),
        Index("ix_ratings_pool_rating", "pool", "rating"),
    )

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    pool: Mapped[str] = mapped_column(String(32), primary_key=True)
    rating: Mapped[float] = mapped_column(Double)
    deviation: Mapped[float] = mapped_column(Double)
    volatility: Mapped[float] = mapped_column(Double)
    rated_at: Mapped[datetime]
    games: Mapped[int] = mapped_column(default=0, server_default=text("0"))
    wins: Mapped[int] = mapped_column(default=0, server_default=text("0"))
    losses: Mapped[int] = mapped_column(default=0, server_default=text("0"))
    draws: Mapped[int] = mapped_column(default=0, server_default=text("0"))


class GameRatingRow(Base):
    """One seat of a rated game: its player's rating before and after the game.

    ``id`` numbers the rating updates in the order they were made (a player's two updates
    are never made out of order: the second waits for the first's row lock), so
    ``tessera ratings verify`` replays them in that order. "Before" is the rating the game
    started from: the stored one with its deviation grown for the time since.
    """

    __tablename__ = "game_ratings"
    __table_args__ = (
        UniqueConstraint("game_id", "seat"),
        CheckConstraint("seat IN (0, 1)", name="seat"),
        Index("ix_game_ratings_user_id_pool_id", "user_id", "pool", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    game_id: Mapped[str] = mapped_column(ForeignKey("games.id", ondelete="CASCADE"))
    seat: Mapped[int] = mapped_column(SmallInteger)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    pool: Mapped[str] = mapped_column(String(32))
    rated_at: Mapped[datetime]
    rating_before: Mapped[float] = mapped_column(Double)
    deviation_before: Mapped[float] = mapped_column(Double)
    volatility_before: Mapped[float] = mapped_column(Double)
    rating_after: Mapped[float] = mapped_column(Double)
    deviation_after: Mapped[float] = mapped_column(Double)
    volatility_after: Mapped[float] = mapped_column(Double)
