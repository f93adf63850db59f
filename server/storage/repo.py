"""The repository: every query the server makes, behind one ``Store`` object.

Reads go through ORM sessions and come back as the frozen records of ``records``. Writes
are short transactions whose first statement is a write. Games, moves, chat and game
ends do not come through here: they are written by ``writer.CommitQueue``.

Every method that records a moment takes ``now`` (aware, UTC) so tests and the server's
clock decide time; it defaults to the current time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import secrets
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    Table,
    and_,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    union,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import aliased

from server.ratings.glicko2 import Rating

from .db import is_sqlite, make_session_factory, make_write_lock, read_engine
from .errors import Conflict, InvalidCursor, NameTaken, StillPlaying
from .models import (
    CHALLENGE_POLICIES,
    TOKEN_KINDS,
    USER_KINDS,
    ApiTokenRow,
    ChatRow,
    GameRatingRow,
    GameRow,
    HeldNameRow,
    MoveRow,
    UserRow,
    check_fits,
)
from .rating_reads import RatingReads, of_rows
from .records import (
    ChallengePolicy,
    ChallengeTerms,
    ChatRecord,
    FinishedStatus,
    GameInfo,
    GamePage,
    GameStatus,
    MoveRecord,
    PlayingGame,
    PlayingPage,
    RatingPoint,
    StoredGame,
    Token,
    TokenKind,
    User,
    UserKind,
)

MAX_PAGE = 200
GAME_ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford's base 32, lower case
GAME_ID_LENGTH = 10  # 50 random bits
TOKEN_TOUCH_INTERVAL = timedelta(minutes=10)  # last_used_at is this coarse, to save writes
DELETED_PREFIX = "deleted-"
"""A deleted account's name begins so (``anonymous_name``); no one may register such a name."""
NAME_ATTEMPTS = 3  # an anonymous name already taken is drawn again, at most this often

_USERS = cast(Table, UserRow.__table__)
_TOKENS = cast(Table, ApiTokenRow.__table__)
_GAMES = cast(Table, GameRow.__table__)
_HELD = cast(Table, HeldNameRow.__table__)


def _challenge_terms() -> Select[Any]:
    """A target's challenge policy and whether a game of the two exists: built once (a
    challenge runs it, and a flood runs many)."""
    games = _GAMES.c
    target = bindparam("target", type_=Integer)
    challenger = bindparam("challenger", type_=Integer)
    together = select(games.id).where(or_(
        and_(games.player0_id == challenger, games.player1_id == target),
        and_(games.player0_id == target, games.player1_id == challenger))).exists()
    return select(_USERS.c.challenge_policy, together).where(_USERS.c.id == target)


_CHALLENGE_TERMS = _challenge_terms()


def name_key(name: str) -> str:
    """The case-insensitive form of a user name, which carries its uniqueness."""
    return name.casefold()


def new_token() -> str:
    """A fresh secret token (256 random bits, URL-safe) that never starts with ``-``: a
    token is given on command lines (``tessera bridge --token T``), where a leading dash
    reads as an option (one token in 64 did: its bot could not log in)."""
    while True:
        token = secrets.token_urlsafe(32)
        if not token.startswith("-"):
            return token


def anonymous_name() -> str:
    """A deleted account's new name: ``deleted-`` and 32 random bits, which say nothing of
    who it was or when it was made."""
    return f"{DELETED_PREFIX}{secrets.token_hex(4)}"


def token_digest(token: str) -> str:
    """The sha256 hex digest under which a token is stored and looked up."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_game_id() -> str:
    """A short random game id, safe in URLs and easy to read aloud."""
    bits = secrets.randbits(5 * GAME_ID_LENGTH)  # one draw; 32 symbols = 5 bits each
    return "".join(GAME_ID_ALPHABET[(bits >> (5 * k)) & 31] for k in range(GAME_ID_LENGTH))


def _now(now: datetime | None) -> datetime:
    return datetime.now(UTC) if now is None else now


def _playing_ids(user_id: int | None = None) -> Select[Any]:
    """The ids of the games in progress (of one user if given), oldest first."""
    statement = select(_GAMES.c.id).where(_GAMES.c.status == "playing")
    if user_id is not None:
        statement = statement.where(or_(_GAMES.c.player0_id == user_id,
                                        _GAMES.c.player1_id == user_id))
    return statement.order_by(_GAMES.c.created_at, _GAMES.c.id)


# built once: a statement made anew per call costs more to build and key than to run
_PLAYING_PLAYERS = select(_GAMES.c.player0_id, _GAMES.c.player1_id).where(
    _GAMES.c.status == "playing",
    or_(_GAMES.c.player0_id.in_(bindparam("ids", expanding=True)),
        _GAMES.c.player1_id.in_(bindparam("ids", expanding=True))))


class Store:
    """Queries and small writes over one engine; cheap to build, holds no connection."""

    def __init__(
        self,
        engine: AsyncEngine,
        sessions: async_sessionmaker[AsyncSession] | None = None,
        *,
        write_lock: AbstractAsyncContextManager[Any] | None = None,
    ) -> None:
        """``write_lock`` is held by every write transaction (``db.make_write_lock``); share
        it with the CommitQueue of the same engine."""
        self.engine = engine
        self.sessions = sessions if sessions is not None else make_session_factory(engine)
        self.reader = read_engine(engine)
        self.reads = make_session_factory(self.reader)  # one statement each (db.read_engine)
        self.writing = write_lock if write_lock is not None else make_write_lock(engine)
        self.ratings = RatingReads(self.reads)

    # -- users ---------------------------------------------------------------------------

    async def create_user(
        self,
        name: str,
        kind: UserKind,
        *,
        password_hash: str | None = None,
        now: datetime | None = None,
    ) -> User:
        """Add an account; NameTaken if the name is in use in any letter case, held (the
        former name of an account deleted lately) or one of deleted accounts' names."""
        if kind not in USER_KINDS:
            raise ValueError(f"user kind must be one of {USER_KINDS}, not {kind!r}")
        if not name.strip():
            raise ValueError("a user name cannot be blank")
        check_fits(UserRow, "name", name)
        check_fits(UserRow, "password_hash", password_hash)
        key = name_key(name)
        if key.startswith(DELETED_PREFIX):
            raise NameTaken(f"names beginning {DELETED_PREFIX!r} are kept for deleted accounts")
        moment = _now(now)
        row = UserRow(
            name=name,
            name_key=key,
            kind=kind,
            password_hash=password_hash,
            created_at=moment,
            failed_logins=0,
            challenge_policy="everyone",
        )
        try:
            async with self.writing, self.sessions() as session, session.begin():
                session.add(row)
                # Looked at after the row is in: on PostgreSQL the insert waits for a
                # deletion that frees this name, so this read sees the hold it made.
                await session.flush()
                if await session.scalar(select(_HELD.c.name_key).where(
                        _HELD.c.name_key == key, _HELD.c.held_until > moment)) is not None:
                    raise NameTaken(f"the name {name!r} is taken")  # rolled back
        except IntegrityError as exc:
            raise NameTaken(f"the name {name!r} is taken") from exc
        return _user(row)

    async def get_user_by_name(self, name: str) -> User | None:
        """The account with this name in any letter case (None for a deleted one)."""
        async with self.reads() as session:
            row = await session.scalar(select(UserRow).where(
                UserRow.name_key == name_key(name), UserRow.deleted_at.is_(None)))
        return None if row is None else _user(row)

    async def get_user(self, user_id: int) -> User | None:
        """The account with this id (None for a deleted one)."""
        async with self.reads() as session:
            row = await session.scalar(select(UserRow).where(
                UserRow.id == user_id, UserRow.deleted_at.is_(None)))
        return None if row is None else _user(row)

    async def set_challenge_policy(self, user_id: int, policy: ChallengePolicy) -> None:
        """Store who may challenge a user (``CHALLENGE_POLICIES``)."""
        if policy not in CHALLENGE_POLICIES:
            raise ValueError(f"a challenge policy is one of {CHALLENGE_POLICIES}, not {policy!r}")
        async with self.writing, self.engine.begin() as conn:
            await conn.execute(
                update(_USERS).where(_USERS.c.id == user_id).values(challenge_policy=policy))

    async def challenge_terms(self, target_id: int, challenger_id: int) -> ChallengeTerms:
        """Who may challenge ``target_id``, and whether ``challenger_id`` has a game with
        them (any stored game, in progress or over): one read. An unknown target takes
        nobody's."""
        async with self.reader.connect() as conn:
            row = (await conn.execute(_CHALLENGE_TERMS, {"target": target_id,
                                                         "challenger": challenger_id})
                   ).one_or_none()
        if row is None:
            return ChallengeTerms("nobody", acquainted=False)
        return ChallengeTerms(row[0], acquainted=bool(row[1]))

    async def set_password_hash(self, user_id: int, password_hash: str | None) -> None:
        """Replace a stored password hash (a new password, or a rehash with new parameters)."""
        check_fits(UserRow, "password_hash", password_hash)
        async with self.writing, self.engine.begin() as conn:
            await conn.execute(
                update(_USERS).where(_USERS.c.id == user_id).values(password_hash=password_hash)
            )

    async def replace_password(self, user_id: int, password_hash: str, *,
                               keep: str | None = None, now: datetime | None = None
                               ) -> list[str]:
        """A new password, and every live token of the account revoked but the one whose
        digest is ``keep`` (the connection that changed it), in one transaction: the
        digests of the tokens revoked."""
        check_fits(UserRow, "password_hash", password_hash)
        tokens = _TOKENS.c
        async with self.writing, self.engine.begin() as conn:
            await conn.execute(
                update(_USERS).where(_USERS.c.id == user_id).values(password_hash=password_hash))
            revoked = await conn.execute(
                update(_TOKENS)
                .where(tokens.user_id == user_id, tokens.revoked_at.is_(None),
                       tokens.token_hash != (keep or ""))
                .values(revoked_at=_now(now))
                .returning(tokens.token_hash))
            return [row[0] for row in revoked]

    async def delete_account(self, user_id: int, *, hold_for: timedelta,
                             now: datetime | None = None) -> tuple[str, list[str]]:
        """Delete a live account in one transaction, keeping its row for the games and
        ratings that name it: renamed to an ``anonymous_name``, its password cleared, every
        live token revoked, and its former name held from registration until ``now +
        hold_for``. Returns the new name and the digests of the tokens revoked.

        StillPlaying (nothing changed) while it has a game in progress; Conflict if there
        is no such live account.
        """
        moment = _now(now)
        users, tokens = _USERS.c, _TOKENS.c
        for _ in range(NAME_ATTEMPTS):
            anonymous = anonymous_name()
            try:
                async with self.writing, self.engine.begin() as conn:
                    former = (await conn.execute(
                        select(users.name_key)
                        .where(users.id == user_id, users.deleted_at.is_(None))
                        .with_for_update())).scalar()
                    if former is None:
                        raise Conflict(f"no account {user_id} to delete")
                    playing = (await conn.execute(_playing_ids(user_id).limit(1))).scalar()
                    if playing is not None:
                        raise StillPlaying(playing)
                    await conn.execute(update(_USERS).where(users.id == user_id).values(
                        name=anonymous, name_key=name_key(anonymous), password_hash=None,
                        deleted_at=moment, failed_logins=0, locked_until=None))
                    await conn.execute(delete(_HELD).where(_HELD.c.name_key == former))
                    if hold_for > timedelta(0):
                        await conn.execute(insert(_HELD).values(
                            name_key=former, held_until=moment + hold_for))
                    revoked = await conn.execute(
                        update(_TOKENS)
                        .where(tokens.user_id == user_id, tokens.revoked_at.is_(None))
                        .values(revoked_at=moment)
                        .returning(tokens.token_hash))
                    return anonymous, [row[0] for row in revoked]
            except IntegrityError:
                continue  # the anonymous name drawn is taken: draw again
        raise Conflict(f"no free anonymous name for account {user_id}")

    async def record_login_failure(
        self,
        user_id: int,
        *,
        now: datetime | None = None,
        max_failures: int = 5,
        lock_for: timedelta | Callable[[int], timedelta] = timedelta(minutes=15),
    ) -> User | None:
        """Count a failed login, atomically; from ``max_failures`` on, lock the account.

        Each failure at or past the limit locks it until ``now + lock_for``, where
        ``lock_for`` may be a function of the failure count (for a lock that grows), until a
        successful login calls ``reset_failures``. None if there is no such user.
        """
        moment = _now(now)
        by_id = update(_USERS).where(_USERS.c.id == user_id).returning(*_USERS.c)
        async with self.writing, self.engine.begin() as conn:
            row = (
                await conn.execute(by_id.values(failed_logins=_USERS.c.failed_logins + 1))
            ).one_or_none()
            if row is None:
                return None
            if row.failed_logins >= max_failures:
                duration = lock_for(row.failed_logins) if callable(lock_for) else lock_for
                row = (await conn.execute(by_id.values(locked_until=moment + duration))).one()
        return _user(row)

    async def reset_failures(self, user_id: int) -> None:
        """Forget failed logins and lift the lock (after a successful login)."""
        async with self.writing, self.engine.begin() as conn:
            await conn.execute(
                update(_USERS)
                .where(_USERS.c.id == user_id)
                .values(failed_logins=0, locked_until=None)
            )

    async def create_guests(
        self, names: Sequence[str], *, now: datetime | None = None
    ) -> list[tuple[User, str]]:
        """Add guest accounts, each with a session token, in ONE short transaction.

        A flood of guests then costs one commit per batch rather than two per guest; the
        batches are made by ``server.guests.GuestMaker``. NameTaken (and nothing stored) if
        any of the names is in use.
        """
        moment = _now(now)
        for name in names:
            check_fits(UserRow, "name", name)
        tokens = [new_token() for _ in names]
        users = [{"name": name, "name_key": name_key(name), "kind": "guest",
                  "password_hash": None, "created_at": moment, "failed_logins": 0}
                 for name in names]
        try:
            async with self.writing, self.engine.begin() as conn:
                rows = (await conn.execute(
                    insert(_USERS).returning(*_USERS.c, sort_by_parameter_order=True),
                    users)).all()
                await conn.execute(insert(_TOKENS), [
                    {"user_id": row.id, "kind": "session", "token_hash": token_digest(token),
                     "label": "login", "created_at": moment}
                    for row, token in zip(rows, tokens, strict=True)])
        except IntegrityError as exc:
            raise NameTaken(f"a guest name of {list(names)} is taken") from exc
        return [(_user(row), token) for row, token in zip(rows, tokens, strict=True)]

    async def idle_guests(self, seen_before: datetime, *, after_id: int = 0,
                          limit: int = 10_000) -> list[int]:
        """Guests that never played (no game in progress or over names them, no chat line
        of theirs outside aborted games) and were last seen (made, or a token of theirs
        made or used) before ``seen_before``: at most ``limit`` ids above ``after_id``, in
        order."""
        tokens = _TOKENS.c
        fresh_token = select(tokens.user_id).where(
            tokens.user_id == _USERS.c.id,
            or_(tokens.created_at >= seen_before, tokens.last_used_at >= seen_before))
        async with self.reader.connect() as conn:
            rows = await conn.execute(
                select(_USERS.c.id)
                .where(_USERS.c.id > after_id, _USERS.c.kind == "guest",
                       _USERS.c.created_at < seen_before,
                       ~fresh_token.exists(), *_never_played(_USERS.c.id))
                .order_by(_USERS.c.id)
                .limit(limit))
            return [row[0] for row in rows]

    async def delete_guests(self, user_ids: Sequence[int], seen_before: datetime) -> int:
        """Delete these guests, with their tokens and the aborted games they sat in (their
        moves and chat go with them), if they still never played and were not seen since
        ``seen_before`` (checked again in each deleting statement); how many."""
        if not user_ids:
            return 0
        tokens = _TOKENS.c
        fresh_token = select(tokens.user_id).where(
            tokens.user_id == _USERS.c.id,
            or_(tokens.created_at >= seen_before, tokens.last_used_at >= seen_before))
        conditions = [_USERS.c.id.in_(user_ids), _USERS.c.kind == "guest",
                      ~fresh_token.exists(), *_never_played(_USERS.c.id)]
        eligible = select(_USERS.c.id).where(*conditions)
        games = _GAMES.c
        async with self.writing, self.engine.begin() as conn:
            await conn.execute(delete(_GAMES).where(
                games.status == "aborted",
                or_(games.player0_id.in_(eligible), games.player1_id.in_(eligible))))
            await conn.execute(delete(_TOKENS).where(tokens.user_id.in_(eligible)))
            result = await conn.execute(delete(_USERS).where(*conditions))
        return int(result.rowcount)

    async def count_users(self, kind: UserKind | None = None) -> int:
        """How many accounts there are (of one kind)."""
        statement = select(func.count()).select_from(_USERS)
        if kind is not None:
            statement = statement.where(_USERS.c.kind == kind)
        async with self.reader.connect() as conn:
            return int((await conn.execute(statement)).scalar_one())

    # -- tokens --------------------------------------------------------------------------

    async def create_token(
        self,
        user_id: int,
        kind: TokenKind,
        label: str = "",
        *,
        expires_at: datetime | None = None,
        now: datetime | None = None,
    ) -> tuple[str, int]:
        """Issue a token: returns (the token, its row id). Only its sha256 is stored.

        The token is shown to its owner once; it cannot be recovered later.
        """
        if kind not in TOKEN_KINDS:
            raise ValueError(f"token kind must be one of {TOKEN_KINDS}, not {kind!r}")
        check_fits(ApiTokenRow, "label", label)
        token = new_token()
        row = ApiTokenRow(
            user_id=user_id,
            kind=kind,
            token_hash=token_digest(token),
            label=label,
            created_at=_now(now),
            expires_at=expires_at,
        )
        try:
            async with self.writing, self.sessions() as session, session.begin():
                session.add(row)
        except IntegrityError as exc:
            raise Conflict(f"no user {user_id} to issue a token to") from exc
        return token, row.id

    async def user_for_token(self, token: str, *, now: datetime | None = None) -> User | None:
        """The owner of a live token (not revoked, not expired); None otherwise.

        The lookup is by digest, so no comparison involves the token itself. The token's
        ``last_used_at`` is refreshed at most every TOKEN_TOUCH_INTERVAL.
        """
        moment = _now(now)
        async with self.reads() as session:
            found = (
                await session.execute(
                    select(UserRow, ApiTokenRow.id, ApiTokenRow.last_used_at)
                    .join(ApiTokenRow, ApiTokenRow.user_id == UserRow.id)
                    .where(
                        ApiTokenRow.token_hash == token_digest(token),
                        ApiTokenRow.revoked_at.is_(None),
                        or_(ApiTokenRow.expires_at.is_(None), ApiTokenRow.expires_at > moment),
                    )
                )
            ).one_or_none()
        if found is None:
            return None
        user_row, token_id, last_used_at = found
        if last_used_at is None or moment - last_used_at >= TOKEN_TOUCH_INTERVAL:
            async with self.writing, self.engine.begin() as conn:
                await conn.execute(
                    update(_TOKENS).where(_TOKENS.c.id == token_id).values(last_used_at=moment)
                )
        return _user(user_row)

    async def revoked_since(self, since: datetime) -> list[str]:
        """Digests of the tokens revoked at or after ``since`` (the server polls this so a
        revocation made from another process, e.g. the admin CLI, takes effect at once)."""
        async with self.reader.connect() as conn:
            rows = await conn.execute(
                select(_TOKENS.c.token_hash).where(_TOKENS.c.revoked_at >= since))
            return [row[0] for row in rows]

    async def revoke_token(
        self, token_id: int, *, user_id: int | None = None, now: datetime | None = None
    ) -> bool:
        """Revoke a token by id (only among ``user_id``'s if given); False if none was live."""
        condition = [_TOKENS.c.id == token_id, _TOKENS.c.revoked_at.is_(None)]
        if user_id is not None:
            condition.append(_TOKENS.c.user_id == user_id)
        return await self._revoke(condition, _now(now))

    async def revoke_token_value(self, token: str, *, now: datetime | None = None) -> bool:
        """Revoke the token presented (a logout); False if it was not live."""
        condition = [_TOKENS.c.token_hash == token_digest(token), _TOKENS.c.revoked_at.is_(None)]
        return await self._revoke(condition, _now(now))

    async def _revoke(self, condition: list[ColumnElement[bool]], now: datetime) -> bool:
        async with self.writing, self.engine.begin() as conn:
            result = await conn.execute(update(_TOKENS).where(*condition).values(revoked_at=now))
        return result.rowcount > 0

    async def list_tokens(self, user_id: int, *, include_revoked: bool = False) -> list[Token]:
        """A user's tokens, oldest first."""
        statement = select(ApiTokenRow).where(ApiTokenRow.user_id == user_id)
        if not include_revoked:
            statement = statement.where(ApiTokenRow.revoked_at.is_(None))
        async with self.reads() as session:
            rows = (await session.scalars(statement.order_by(ApiTokenRow.id))).all()
        return [_token(row) for row in rows]

    # -- games ---------------------------------------------------------------------------

    async def take_over_game(self, game_id: str) -> int | None:
        """Bump a live game's epoch and return the new one; None if the game is unknown or
        no longer playing.

        A cluster node calls this after it acquired the game's lease and before it loads
        the game: from the commit on, a write made under an older epoch is refused by the
        database (``server/cluster/fencing.py``). On PostgreSQL the update waits for a
        transaction of the old owner that holds the game's row, so the record loaded
        afterwards includes everything the old owner stored.
        """
        async with self.writing, self.engine.begin() as conn:
            row = (await conn.execute(
                update(_GAMES)
                .where(_GAMES.c.id == game_id, _GAMES.c.status == "playing")
                .values(epoch=_GAMES.c.epoch + 1)
                .returning(_GAMES.c.epoch))).one_or_none()
        return None if row is None else int(row[0])

    async def get_game(self, game_id: str) -> StoredGame | None:
        """Everything about one game: players, settings, moves with clocks, chat, result."""
        async with self._snapshot() as session:
            records = await self._game_records(session, GameRow.id == game_id)
        return records[0] if records else None

    async def playing_game_ids(self, user_id: int | None = None) -> list[str]:
        """The ids of the games in progress (of one user if given), oldest first: what a
        cluster node sweeps for games with no owner, and names to a player logging in."""
        async with self.reader.connect() as conn:
            return list((await conn.execute(_playing_ids(user_id))).scalars())

    async def playing_counts(self, user_ids: Sequence[int]) -> dict[int, int]:
        """How many games in progress each of these users sits in (0 included): one
        query for the cap a cluster node checks before a game starts."""
        counts = dict.fromkeys(user_ids, 0)
        if not counts:
            return counts
        async with self.reader.connect() as conn:
            rows = await conn.execute(_PLAYING_PLAYERS, {"ids": list(counts)})
            for row in rows:
                for user_id in {row[0], row[1]}:
                    if user_id in counts:
                        counts[user_id] += 1
        return counts

    async def load_active_games(self) -> list[StoredGame]:
        """Every game in progress with its moves and chat, oldest game first (for restarts)."""
        async with self._snapshot() as session:
            return await self._game_records(session, GameRow.status == "playing")

    async def list_games(
        self,
        *,
        player: str | None = None,
        winner: str | None = None,
        loser: str | None = None,
        game_key: str | None = None,
        status: FinishedStatus | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> GamePage:
        """Finished games, newest first, one page at a time (keyset on ended_at, id).

        Filters, by user name in any case: a player who took part, the player who won, the
        player who lost; and the game, and how it ended (``over`` or ``aborted``; both by
        default). Games in progress are not listed: the server has them in memory.
        ``cursor`` is the ``next_cursor`` of the previous page (with the same filters).
        """
        if not 1 <= limit <= MAX_PAGE:
            raise ValueError(f"limit must be 1..{MAX_PAGE}, not {limit}")
        if status not in (None, "over", "aborted"):
            raise ValueError(f"status must be over or aborted, not {status!r}")
        conditions: list[ColumnElement[bool]] = [
            GameRow.status.in_(("over", "aborted")) if status is None else GameRow.status == status
        ]
        if game_key is not None:
            conditions.append(GameRow.game_key == game_key)
        if cursor is not None:
            ended_at, last_id = _decode_cursor(cursor)
            conditions.append(
                or_(
                    GameRow.ended_at < ended_at,
                    and_(GameRow.ended_at == ended_at, GameRow.id < last_id),
                )
            )
        named = {
            role: name
            for role, name in (("player", player), ("winner", winner), ("loser", loser))
            if name is not None
        }
        async with self.reads() as session:
            ids = await self._user_ids(session, list(named.values()))
            if ids is None:
                return GamePage((), None)
            roles = [(role, ids[name_key(name)]) for role, name in named.items()]
            if roles:
                conditions.append(GameRow.id.in_(_ids_by_seat(conditions, roles, limit + 1)))
            statement = (
                _info_query()
                .where(*conditions)
                .order_by(GameRow.ended_at.desc(), GameRow.id.desc())
                .limit(limit + 1)
            )
            infos = [_info(*row) for row in (await session.execute(statement)).all()]
        more = len(infos) > limit
        infos = infos[:limit]
        if not more:
            return GamePage(tuple(infos), None)
        last = infos[-1]
        assert last.ended_at is not None
        return GamePage(tuple(infos), _encode_cursor(last.ended_at, last.id))

    async def list_playing(
        self,
        *,
        player: str | None = None,
        game_key: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> PlayingPage:
        """Games in progress, newest first, one page at a time (keyset on created_at, id).

        The stored truth, whichever process runs a game: every server (and every node of a
        cluster) lists the same. Filters as ``list_games``: a player who takes part (by
        name in any case), the game. Each seat comes with its player's rating in the game's
        pool as the game started: their last rating update before it.
        """
        if not 1 <= limit <= MAX_PAGE:
            raise ValueError(f"limit must be 1..{MAX_PAGE}, not {limit}")
        conditions: list[ColumnElement[bool]] = [GameRow.status == "playing"]
        if game_key is not None:
            conditions.append(GameRow.game_key == game_key)
        if cursor is not None:
            created_at, last_id = _decode_cursor(cursor)
            conditions.append(or_(GameRow.created_at < created_at,
                                  and_(GameRow.created_at == created_at, GameRow.id < last_id)))
        async with self._snapshot() as session:
            if player is not None:
                ids = await self._user_ids(session, [player])
                if ids is None:
                    return PlayingPage((), None)
                user_id = ids[name_key(player)]
                conditions.append(or_(GameRow.player0_id == user_id,
                                      GameRow.player1_id == user_id))
            statement = (
                _info_query()
                .add_columns(_rated_before(GameRow.player0_id), _rated_before(GameRow.player1_id))
                .where(*conditions)
                .order_by(GameRow.created_at.desc(), GameRow.id.desc())
                .limit(limit + 1)
            )
            rows = (await session.execute(statement)).all()
            more = len(rows) > limit
            rows = rows[:limit]
            update_ids = {row[i] for row in rows for i in (-2, -1) if row[i] is not None}
            points: dict[int, RatingPoint] = {}
            if update_ids:
                for change in await session.scalars(
                        select(GameRatingRow).where(GameRatingRow.id.in_(update_ids))):
                    points[change.id] = RatingPoint(
                        game_id=change.game_id, pool=change.pool, rated_at=change.rated_at,
                        rating=Rating(change.rating_after, change.deviation_after,
                                      change.volatility_after))
        games = tuple(
            PlayingGame(_info(*row[:-2]), (points.get(row[-2]), points.get(row[-1])))
            for row in rows)
        next_cursor = None
        if more:
            last = games[-1].info
            next_cursor = _encode_cursor(last.created_at, last.id)
        return PlayingPage(games, next_cursor)

    async def list_game_ids(self) -> list[str]:
        """Every game's id, oldest first (for exporting everything)."""
        async with self.reads() as session:
            ids = await session.scalars(
                select(GameRow.id).order_by(GameRow.created_at, GameRow.id)
            )
            return list(ids)

    async def _user_ids(self, session: AsyncSession, names: Sequence[str]) -> dict[str, int] | None:
        """Ids by name key; None if any of the names is unknown."""
        if not names:
            return {}
        keys = {name_key(name) for name in names}
        rows = (
            await session.execute(
                select(UserRow.name_key, UserRow.id).where(UserRow.name_key.in_(keys))
            )
        ).all()
        found = {key: user_id for key, user_id in rows}
        return found if len(found) == len(keys) else None

    @asynccontextmanager
    async def _snapshot(self) -> AsyncIterator[AsyncSession]:
        """A session whose queries all see one consistent state of the database."""
        async with self.sessions() as session:
            if not is_sqlite(self.engine):  # SQLite: one BEGIN already reads one snapshot
                await session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            yield session

    async def _game_records(
        self, session: AsyncSession, condition: ColumnElement[bool]
    ) -> list[StoredGame]:
        statement = _info_query().where(condition).order_by(GameRow.created_at, GameRow.id)
        infos = [_info(*row) for row in (await session.execute(statement)).all()]
        if not infos:
            return []
        chosen = select(GameRow.id).where(condition)
        moves: dict[str, list[MoveRecord]] = {info.id: [] for info in infos}
        chat: dict[str, list[ChatRecord]] = {info.id: [] for info in infos}
        move_rows = await session.scalars(
            select(MoveRow)
            .where(MoveRow.game_id.in_(chosen))
            .order_by(MoveRow.game_id, MoveRow.ply)
        )
        for move in move_rows:
            if move.game_id in moves:
                moves[move.game_id].append(_move(move))
        chat_rows = await session.execute(
            select(ChatRow, UserRow.name)
            .join(UserRow, UserRow.id == ChatRow.user_id)
            .where(ChatRow.game_id.in_(chosen))
            .order_by(ChatRow.game_id, ChatRow.seq)
        )
        for line, user_name in chat_rows:
            if line.game_id in chat:
                chat[line.game_id].append(_chat(line, user_name))
        rated: dict[str, list[GameRatingRow]] = {info.id: [] for info in infos}
        for change in await session.scalars(
                select(GameRatingRow).where(GameRatingRow.game_id.in_(chosen))):
            if change.game_id in rated:
                rated[change.game_id].append(change)
        return [StoredGame(info, tuple(moves[info.id]), tuple(chat[info.id]),
                           of_rows(rated.get(info.id, []))) for info in infos]


# -- queries and conversions -----------------------------------------------------------------


def _info_query() -> Select[Any]:
    first, second = aliased(UserRow), aliased(UserRow)
    plies = (
        select(func.count())
        .select_from(MoveRow)
        .where(MoveRow.game_id == GameRow.id)
        .correlate(GameRow)
        .scalar_subquery()
    )
    return (
        select(GameRow, first.name, second.name, plies, first.kind, second.kind)
        .join(first, first.id == GameRow.player0_id)
        .join(second, second.id == GameRow.player1_id)
    )


def _ids_by_seat(
    conditions: Sequence[ColumnElement[bool]], roles: Sequence[tuple[str, int]], limit: int
) -> Select[Any]:
    """The newest ``limit`` matching game ids from each seat of the first named user.

    ``roles`` pairs "player", "winner" or "loser" with a user id. One indexed range scan
    per seat, (playerN_id, ended_at, id), instead of an OR that would read all of a
    prolific player's games to sort them.
    """
    (anchor_role, anchor), others = roles[0], roles[1:]
    branches = []
    for seat, column in enumerate((GameRow.player0_id, GameRow.player1_id)):
        where = [*conditions, column == anchor]
        if anchor_role == "winner":
            where.append(GameRow.winner == seat)
        elif anchor_role == "loser":
            where.append(GameRow.winner == 1 - seat)
        for role, user_id in others:
            where.append(_won_by(user_id) if role == "winner" else _lost_by(user_id))
        branch = (
            select(GameRow.id)
            .where(*where)
            .order_by(GameRow.ended_at.desc(), GameRow.id.desc())
            .limit(limit)
            .subquery()
        )
        branches.append(select(branch.c.id))
    return select(union(*branches).subquery().c.id)


def _won_by(user_id: int) -> ColumnElement[bool]:
    return or_(
        and_(GameRow.player0_id == user_id, GameRow.winner == 0),
        and_(GameRow.player1_id == user_id, GameRow.winner == 1),
    )


def _lost_by(user_id: int) -> ColumnElement[bool]:
    return or_(
        and_(GameRow.player0_id == user_id, GameRow.winner == 1),
        and_(GameRow.player1_id == user_id, GameRow.winner == 0),
    )


def _never_played(user_id: Any) -> list[ColumnElement[bool]]:
    """Conditions: no game in progress or over names ``user_id`` (an aborted game may: it
    goes with the guest), and no chat line of theirs is in such a game. The games are
    aliased so that inside a DELETE FROM games they are not correlated with its rows."""
    first, second, chatted = aliased(GameRow), aliased(GameRow), aliased(GameRow)
    return [~select(first.id).where(first.player0_id == user_id,
                                    first.status != "aborted").exists(),
            ~select(second.id).where(second.player1_id == user_id,
                                     second.status != "aborted").exists(),
            ~select(ChatRow.seq).join(chatted, chatted.id == ChatRow.game_id).where(
                ChatRow.user_id == user_id, chatted.status != "aborted").exists()]


def _rated_before(player: Any) -> Any:
    """The id of the player's last rating update in the game's pool before the game began
    (a player's updates are numbered in the order they were made)."""
    return (select(func.max(GameRatingRow.id))
            .where(GameRatingRow.user_id == player, GameRatingRow.pool == GameRow.game_key,
                   GameRatingRow.rated_at <= GameRow.created_at)
            .correlate(GameRow)
            .scalar_subquery())


def _encode_cursor(at: datetime, game_id: str) -> str:
    """A keyset cursor: the sort time and the id of the last game on a page."""
    raw = json.dumps([at.isoformat(), game_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at_text, game_id = json.loads(raw)
        at = datetime.fromisoformat(at_text)
    except (ValueError, TypeError, binascii.Error) as exc:
        raise InvalidCursor(f"not a listing cursor: {cursor!r}") from exc
    if at.tzinfo is None or not isinstance(game_id, str):
        raise InvalidCursor(f"not a listing cursor: {cursor!r}")
    return at, game_id


def _user(row: Any) -> User:
    return User(
        id=row.id,
        name=row.name,
        kind=row.kind,
        password_hash=row.password_hash,
        created_at=row.created_at,
        failed_logins=row.failed_logins,
        locked_until=row.locked_until,
        challenge_policy=row.challenge_policy,
        deleted_at=row.deleted_at,
    )


def _token(row: ApiTokenRow) -> Token:
    return Token(
        id=row.id,
        user_id=row.user_id,
        kind=cast(TokenKind, row.kind),
        label=row.label,
        created_at=row.created_at,
        last_used_at=row.last_used_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
    )


def _info(
    row: GameRow, name0: str, name1: str, plies: int, kind0: str, kind1: str
) -> GameInfo:
    return GameInfo(
        id=row.id,
        game_key=row.game_key,
        options=row.options,
        clock=row.clock,
        rules_version=row.rules_version,
        player_ids=(row.player0_id, row.player1_id),
        players=(name0, name1),
        status=cast(GameStatus, row.status),
        winner=row.winner,
        reason=row.reason,
        created_at=row.created_at,
        started_at=row.started_at,
        ended_at=row.ended_at,
        last_seq=row.last_seq,
        plies=plies,
        player_kinds=(cast(UserKind, kind0), cast(UserKind, kind1)),
        rated=row.rated,
    )


def _move(row: MoveRow) -> MoveRecord:
    return MoveRecord(
        ply=row.ply,
        seq=row.seq,
        move=row.move,
        player=row.player,
        ms_used=row.ms_used,
        clock_ms=row.clock_ms,
        played_at=row.played_at,
    )


def _chat(row: ChatRow, user_name: str) -> ChatRecord:
    return ChatRecord(
        seq=row.seq,
        user_id=row.user_id,
        user_name=user_name,
        text=row.text,
        sent_at=row.sent_at,
    )
