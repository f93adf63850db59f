"""How a batch of items reaches the database: one interface, two writers, chosen at open.

The commit queue hands a batch to a :class:`BatchWriter`, which writes it in ONE
transaction and says, per item, whether it was applied. There are two:

``CoreWriter``
    Core statements (``executemany`` per table) on the async engine. The reference: it is
    what PostgreSQL uses, and what the SQLite writer is tested against, row for row.
``SqliteThreadWriter``
    For a SQLite file: the whole transaction in one call to a thread of its own, on a
    blocking twin of the engine, with the rows and updates sent as SQL text made once
    (:class:`SqliteTextStatements`). Through aiosqlite every statement, BEGIN and COMMIT is
    a round trip between the event loop and the driver's thread, each waiting a loop turn on
    a busy server; and building, caching and compiling Core statements per batch keeps the
    writing thread in Python, holding the GIL the event loop needs.

:func:`open_batch_writer` picks one for an engine, with the settings the engine was opened
with passed in by whoever opened it (``runtime.open_storage``); nothing is looked up on the
side. Both write through the same :class:`Statements` interface: ``insert`` rows, ``finish``
a game still playing, ``advance_seq``, and for a rated game's end ``read_rating`` and
``write_rating`` (``rating_writes``); :func:`write_batch` is the one loop over a batch.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, cast

from sqlalchemy import Connection, Engine, Table, bindparam, case, insert, select, text, update
from sqlalchemy.exc import DataError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .db import DEFAULT_BUSY_TIMEOUT_MS, SqliteSynchronous, make_blocking_engine
from .errors import GameNotPlaying, StaleEpoch, StorageError
from .items import ChatSent, GameCreated, GameFinished, Item, MovePlayed, SeqAdvanced
from .models import ChatRow, GameRatingRow, GameRow, MoveRow, RatingRow
from .rating_writes import StoredRating, rate_finished_game
from .records import GameRatings

MOVES = cast(Table, MoveRow.__table__)
CHAT = cast(Table, ChatRow.__table__)
GAMES = cast(Table, GameRow.__table__)
RATINGS = cast(Table, RatingRow.__table__)
GAME_RATINGS = cast(Table, GameRatingRow.__table__)
_RATING_FIELDS = ("rating", "deviation", "volatility", "rated_at", "games", "wins", "losses",
                  "draws")

Outcome = StorageError | GameRatings | None
"""Per item of a batch: None (or, for a rated game's end, both rating changes) if it was
applied, else why not (it was not stored)."""
Outcomes = list[Outcome]


class Statements(Protocol):
    """The three statements every batch is made of, on a blocking connection."""

    def insert(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        """Insert rows that all have the same keys (column names), in order."""

    def finish(self, conn: Connection, item: GameFinished) -> int:
        """Finish a game still playing; the number of rows changed (1, or 0 if it was not)."""

    def advance_seq(self, conn: Connection, item: SeqAdvanced) -> None:
        """Raise a game's stored event number to ``item.seq`` (never lower it)."""

    def read_rating(self, conn: Connection, user_id: int, pool: str) -> StoredRating | None:
        """A player's rating row in a pool, locked until the commit where the database
        locks rows; None if there is none."""

    def write_rating(self, conn: Connection, row: dict[str, Any], *, exists: bool) -> None:
        """Insert (``exists`` False) or update a player's rating row."""


def write_batch(conn: Connection, items: Sequence[Item], statements: Statements) -> Outcomes:
    """Write items inside the caller's transaction; per item, None or why it was not applied.

    Raises IntegrityError if any item breaks a constraint: the caller rolls back. New games
    are written first, so a batch may also hold their first events.
    """
    games = [game_row(item) for item in items if isinstance(item, GameCreated)]
    moves = [move_row(item) for item in items if isinstance(item, MovePlayed)]
    chat = [chat_row(item) for item in items if isinstance(item, ChatSent)]
    for table, rows in ((GAMES, games), (MOVES, moves), (CHAT, chat)):  # games first
        if rows:
            statements.insert(conn, table, rows)
    outcomes: Outcomes = [None] * len(items)
    for index, item in enumerate(items):
        if isinstance(item, SeqAdvanced):
            statements.advance_seq(conn, item)
        elif isinstance(item, GameFinished):
            if statements.finish(conn, item) != 1:
                outcomes[index] = GameNotPlaying(f"game {item.game_id!r} is unknown or over")
            elif item.rated is not None and item.status == "over":
                outcomes[index] = rate_finished_game(conn, item, statements, GAME_RATINGS)
    return outcomes


# -- fenced writes (a cluster node's; docs/SCALING.md section 4) -------------------------------
@dataclass(frozen=True, slots=True)
class Fenced:
    """A commit queue item written under the epoch its owner holds the game at."""

    item: Item
    epoch: int

    def __post_init__(self) -> None:
        if self.epoch < 0:
            raise ValueError(f"an epoch is >= 0, not {self.epoch}")


async def write_fenced(conn: AsyncConnection, batch: Sequence[Fenced]
                       ) -> Outcomes:
    """``write_fenced_blocking`` on an async connection, inside the caller's transaction."""
    return await conn.run_sync(write_fenced_blocking, batch)


def write_fenced_blocking(conn: Connection, batch: Sequence[Fenced]
                          ) -> Outcomes:
    """Write a batch inside the caller's transaction; per item, None (stored) or why not.

    New games are inserted first (under their epoch, normally 0), then every other game
    written to is *fenced*, one statement per game in game id order (two transactions
    never lock two rows in opposite orders)::

        UPDATE games SET last_seq = max(last_seq, :seq)
        WHERE id = :id AND epoch = :epoch AND status = 'playing'

    with ``:seq`` the highest event number the batch holds for the game. One row: the
    writer still owns the game, and the row stays locked until the commit. No row: none of
    that game's items is written, each gets ``StaleEpoch`` (``GameNotPlaying`` if the game
    is over or unknown). Then moves and chat are inserted and game ends written (``AND
    epoch = :epoch``); a seq advance is the fence alone. An UPDATE, not a check: a check
    does not lock, so under READ COMMITTED a takeover (``Store.take_over_game``) could bump
    the epoch and load the game while this transaction, having checked the old epoch, is
    still open; the fence's row lock makes the takeover wait for it (docs/SCALING.md
    section 4). Raises IntegrityError as the commit
    queue's ``write_batch`` does (a duplicate ply, an unknown user): the caller rolls back.
    """
    created = [entry for entry in batch if isinstance(entry.item, GameCreated)]
    if created:
        conn.execute(insert(GAMES), [
            {**game_row(cast(GameCreated, entry.item)), "epoch": entry.epoch}
            for entry in created])
    highest: dict[tuple[str, int], int] = defaultdict(int)
    for entry in batch:
        if not isinstance(entry.item, GameCreated):
            key = (entry.item.game_id, entry.epoch)
            highest[key] = max(highest[key], entry.item.seq)
    passed = _fence_all(conn, highest)
    refused = {key: _why_refused(conn, *key) for key in sorted(highest) if key not in passed}
    outcomes: Outcomes = [None] * len(batch)
    moves: list[dict[str, Any]] = []
    chat: list[dict[str, Any]] = []
    for index, entry in enumerate(batch):
        item = entry.item
        if isinstance(item, GameCreated):
            continue
        why = refused.get((item.game_id, entry.epoch))
        if why is not None:
            outcomes[index] = why
        elif isinstance(item, MovePlayed):
            moves.append(move_row(item))
        elif isinstance(item, ChatSent):
            chat.append(chat_row(item))
    if moves:
        conn.execute(insert(MOVES), moves)
    if chat:
        conn.execute(insert(CHAT), chat)
    for index, entry in enumerate(batch):
        item = entry.item
        if not isinstance(item, GameFinished) or outcomes[index] is not None:
            continue
        if not _finish(conn, item, entry.epoch):
            outcomes[index] = GameNotPlaying(f"game {item.game_id!r} is over")
        elif item.rated is not None and item.status == "over":  # in the same transaction
            outcomes[index] = rate_finished_game(conn, item, CoreStatements(), GAME_RATINGS)
    return outcomes


# One statement fences every game of a batch on PostgreSQL; the rows are locked in id order
# (the ORDER BY of the locking subquery), as the one-by-one statements below lock them.
_PG_FENCE = text("""
UPDATE games AS g SET last_seq = GREATEST(g.last_seq, v.seq)
FROM (SELECT f.id, f.epoch, f.seq FROM unnest(CAST(:ids AS varchar[]), CAST(:epochs AS int[]),
                                               CAST(:seqs AS int[])) AS f(id, epoch, seq)
      JOIN games AS l ON l.id = f.id AND l.epoch = f.epoch AND l.status = 'playing'
      ORDER BY f.id FOR UPDATE OF l) AS v
WHERE g.id = v.id
RETURNING g.id, g.epoch
""")


def _fence_all(conn: Connection, highest: dict[tuple[str, int], int]) -> set[tuple[str, int]]:
    """Fence each (game, epoch) at its highest seq; the ones that passed."""
    keys = sorted(highest)
    if conn.dialect.name == "postgresql" and len(keys) > 1:
        rows = conn.execute(_PG_FENCE, {"ids": [key[0] for key in keys],
                                        "epochs": [key[1] for key in keys],
                                        "seqs": [highest[key] for key in keys]}).all()
        return {(row[0], row[1]) for row in rows}
    return {key for key in keys if _fence(conn, *key, highest[key])}


def _fence(conn: Connection, game_id: str, epoch: int, seq: int) -> bool:
    """Lock a live game's row if it is at ``epoch``, advancing its last_seq to ``seq``."""
    return conn.execute(
        update(GAMES)
        .where(GAMES.c.id == game_id, GAMES.c.epoch == epoch, GAMES.c.status == "playing")
        .values(last_seq=case((GAMES.c.last_seq < seq, seq), else_=GAMES.c.last_seq))
    ).rowcount == 1


def _why_refused(conn: Connection, game_id: str, epoch: int) -> StorageError:
    found = conn.execute(select(GAMES.c.epoch, GAMES.c.status)
                         .where(GAMES.c.id == game_id)).one_or_none()
    if found is None or found.status != "playing":
        return GameNotPlaying(f"game {game_id!r} is unknown or over")
    return StaleEpoch(f"game {game_id!r} was taken over: epoch {epoch} is stale "
                      f"(the game is at {found.epoch})")


_FENCED_FINISH = (update(GAMES)
                  .where(GAMES.c.id == bindparam("g"), GAMES.c.status == "playing",
                         GAMES.c.epoch == bindparam("e"))
                  .values(status=bindparam("to_status"), winner=bindparam("to_winner"),
                          reason=bindparam("to_reason"), last_seq=bindparam("to_seq"),
                          ended_at=bindparam("to_ended_at")))


def _finish(conn: Connection, item: GameFinished, epoch: int) -> bool:
    return conn.execute(_FENCED_FINISH, {
        "g": item.game_id, "e": epoch, "to_status": item.status, "to_winner": item.winner,
        "to_reason": item.reason, "to_seq": item.seq, "to_ended_at": item.ended_at}
    ).rowcount == 1


_PG_FENCED_MOVES = text("""
WITH v AS (
  SELECT * FROM unnest(CAST(:game_ids AS varchar[]), CAST(:epochs AS int[]),
                       CAST(:plies AS int[]), CAST(:seqs AS int[]), CAST(:moves AS varchar[]),
                       CAST(:players AS smallint[]), CAST(:ms_used AS bigint[]),
                       CAST(:clocks AS bigint[]), CAST(:played AS timestamptz[]))
    AS v(game_id, epoch, ply, seq, move, player, ms_used, clock_ms, played_at)),
f AS (
  UPDATE games AS g SET last_seq = GREATEST(g.last_seq, y.seq)
  FROM (SELECT x.game_id, x.epoch, x.seq
        FROM (SELECT game_id, epoch, max(seq) AS seq FROM v GROUP BY game_id, epoch) AS x
        JOIN games AS l ON l.id = x.game_id AND l.epoch = x.epoch AND l.status = 'playing'
        ORDER BY x.game_id FOR UPDATE OF l) AS y
  WHERE g.id = y.game_id
  RETURNING g.id, g.epoch),
i AS (
  INSERT INTO moves (game_id, ply, seq, move, player, ms_used, clock_ms, played_at)
  SELECT v.game_id, v.ply, v.seq, v.move, v.player, v.ms_used, v.clock_ms, v.played_at
  FROM v JOIN f ON f.id = v.game_id AND f.epoch = v.epoch
  RETURNING 1)
SELECT f.id, f.epoch, (SELECT count(*) FROM i) FROM f
""")


def write_fenced_moves(conn: Connection, items: Sequence[Item]) -> Outcomes:
    """Fenced moves alone, on PostgreSQL: the fence and the INSERT in one statement, which
    is its own transaction on ``conn`` (autocommit). Raises IntegrityError as
    ``write_batch`` does (nothing of it was stored)."""
    moves = cast(Sequence[MovePlayed], items)
    passed = {(row[0], row[1]) for row in conn.execute(_PG_FENCED_MOVES, {
        "game_ids": [m.game_id for m in moves], "epochs": [m.epoch for m in moves],
        "plies": [m.ply for m in moves], "seqs": [m.seq for m in moves],
        "moves": [m.move for m in moves], "players": [m.player for m in moves],
        "ms_used": [m.ms_used for m in moves], "clocks": [m.clock_ms for m in moves],
        "played": [m.played_at for m in moves]})}
    outcomes: Outcomes = [None] * len(moves)
    refused: dict[tuple[str, int], StorageError] = {}
    for index, move in enumerate(moves):
        key = (move.game_id, cast(int, move.epoch))
        if key not in passed:
            if key not in refused:
                refused[key] = _why_refused(conn, *key)
            outcomes[index] = refused[key]
    return outcomes


def write_any_batch(conn: Connection, items: Sequence[Item], statements: Statements
                    ) -> Outcomes:
    """``write_batch`` for the items without an epoch, ``write_fenced_blocking`` for those
    with one, in the caller's transaction (a cluster node's items all carry one)."""
    fenced = [index for index, item in enumerate(items) if item.epoch is not None]
    if not fenced:
        return write_batch(conn, items, statements)
    outcomes: Outcomes = [None] * len(items)
    done = write_fenced_blocking(conn, [Fenced(items[i], cast(int, items[i].epoch))
                                        for i in fenced])
    for index, outcome in zip(fenced, done, strict=True):
        outcomes[index] = outcome
    if len(fenced) < len(items):
        plain = [index for index, item in enumerate(items) if item.epoch is None]
        for index, outcome in zip(plain, write_batch(conn, [items[i] for i in plain],
                                                     statements), strict=True):
            outcomes[index] = outcome
    return outcomes


class CoreStatements:
    """The statements as Core builds them: PostgreSQL's, and the reference for SQLite's."""

    def insert(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        conn.execute(insert(table), rows)

    def finish(self, conn: Connection, item: GameFinished) -> int:
        return conn.execute(
            update(GAMES)
            .where(GAMES.c.id == item.game_id, GAMES.c.status == "playing")
            .values(status=item.status, winner=item.winner, reason=item.reason,
                    last_seq=item.seq, ended_at=item.ended_at)).rowcount

    def advance_seq(self, conn: Connection, item: SeqAdvanced) -> None:
        conn.execute(update(GAMES)
                     .where(GAMES.c.id == item.game_id, GAMES.c.last_seq < item.seq)
                     .values(last_seq=item.seq))

    def read_rating(self, conn: Connection, user_id: int, pool: str) -> StoredRating | None:
        found: StoredRating | None = conn.execute(
            select(*(RATINGS.c[name] for name in _RATING_FIELDS))
            .where(RATINGS.c.user_id == user_id, RATINGS.c.pool == pool)
            .with_for_update()).one_or_none()
        return found

    def write_rating(self, conn: Connection, row: dict[str, Any], *, exists: bool) -> None:
        if not exists:
            conn.execute(insert(RATINGS), [row])
            return
        conn.execute(update(RATINGS)
                     .where(RATINGS.c.user_id == row["user_id"], RATINGS.c.pool == row["pool"])
                     .values({name: row[name] for name in _RATING_FIELDS}))


class SqliteTextStatements:
    """The statements on SQLite as SQL text made once, from the tables' own metadata.

    Each value goes through its column's own bind processor, so a datetime or a JSON value
    is stored exactly as Core stores it (a value met twice in a batch, such as the time of
    moves of the same millisecond, is processed once); rows go as multi-row INSERTs of up
    to 999 parameters (SQLite's oldest limit). Errors are SQLAlchemy's, as with Core
    (``exec_driver_sql``).
    """

    MAX_PARAMETERS = 999

    def __init__(self, dialect: Any) -> None:
        self._dialect = dialect
        self._quote = quote = dialect.identifier_preparer.quote
        # (table, column names) -> (INSERT head, one row's placeholders, processors)
        self._inserts: dict[tuple[str, tuple[str, ...]], tuple[str, str, list[Any]]] = {}
        games, c = quote(GAMES.name), {col.name: quote(col.name) for col in GAMES.c}
        self._ended_at = _processor(GAMES.c.ended_at, dialect)
        self._finish = (f"UPDATE {games} SET {c['status']} = ?, {c['winner']} = ?, "
                        f"{c['reason']} = ?, {c['last_seq']} = ?, {c['ended_at']} = ? "
                        f"WHERE {c['id']} = ? AND {c['status']} = 'playing'")
        self._advance = (f"UPDATE {games} SET {c['last_seq']} = ? "
                         f"WHERE {c['id']} = ? AND {c['last_seq']} < ?")
        ratings, r = quote(RATINGS.name), {col.name: quote(col.name) for col in RATINGS.c}
        self._read_rating = (f"SELECT {', '.join(r[name] for name in _RATING_FIELDS)} "
                             f"FROM {ratings} WHERE {r['user_id']} = ? AND {r['pool']} = ?")
        self._update_rating = (
            f"UPDATE {ratings} SET {', '.join(f'{r[name]} = ?' for name in _RATING_FIELDS)} "
            f"WHERE {r['user_id']} = ? AND {r['pool']} = ?")
        self._rated_at_in = _processor(RATINGS.c.rated_at, dialect)
        self._rated_at_out = RATINGS.c.rated_at.type.dialect_impl(dialect).result_processor(
            dialect, None)

    def insert(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        names = tuple(rows[0])
        made = self._inserts.get((table.name, names))
        if made is None:
            quote = self._quote
            made = self._inserts[table.name, names] = (
                f"INSERT INTO {quote(table.name)} ({', '.join(map(quote, names))}) VALUES ",
                "(" + ", ".join("?" * len(names)) + ")",
                [(index, processor) for index, processor in enumerate(
                    _processor(table.c[name], self._dialect) for name in names)
                 if processor is not None])
        head, placeholders, processors = made
        memo: dict[tuple[int, type, Any], Any] = {}
        per_insert = self.MAX_PARAMETERS // len(names)
        for start in range(0, len(rows), per_insert):
            chunk = rows[start:start + per_insert]
            values: list[Any] = []
            for params in chunk:
                row = list(params.values())
                for index, process in processors:
                    value = row[index]
                    if value is not None:
                        key = (index, type(value),  # 1, 1.0 and True are equal keys
                               value if isinstance(value, Hashable) else id(value))
                        if key not in memo:
                            memo[key] = process(value)
                        row[index] = memo[key]
                values += row
            conn.exec_driver_sql(head + ", ".join([placeholders] * len(chunk)),
                                 tuple(values))

    def finish(self, conn: Connection, item: GameFinished) -> int:
        ended_at = item.ended_at if self._ended_at is None else self._ended_at(item.ended_at)
        return conn.exec_driver_sql(self._finish, (
            item.status, item.winner, item.reason, item.seq, ended_at, item.game_id)).rowcount

    def advance_seq(self, conn: Connection, item: SeqAdvanced) -> None:
        conn.exec_driver_sql(self._advance, (item.seq, item.game_id, item.seq))

    def read_rating(self, conn: Connection, user_id: int, pool: str) -> StoredRating | None:
        found = conn.exec_driver_sql(self._read_rating, (user_id, pool)).one_or_none()
        if found is None:
            return None
        values = found._asdict()
        if self._rated_at_out is not None:
            values["rated_at"] = self._rated_at_out(values["rated_at"])
        return _StoredRating(**values)

    def write_rating(self, conn: Connection, row: dict[str, Any], *, exists: bool) -> None:
        if not exists:
            self.insert(conn, RATINGS, [row])
            return
        rated_at = (row["rated_at"] if self._rated_at_in is None
                    else self._rated_at_in(row["rated_at"]))
        conn.exec_driver_sql(self._update_rating, (
            *(rated_at if name == "rated_at" else row[name] for name in _RATING_FIELDS),
            row["user_id"], row["pool"]))


@dataclass(slots=True)
class _StoredRating:
    rating: float
    deviation: float
    volatility: float
    rated_at: datetime
    games: int
    wins: int
    losses: int
    draws: int


def _processor(column: Any, dialect: Any) -> Callable[[Any], Any] | None:
    """The column's bind processor on this dialect, as Core applies it (None: as is)."""
    processor: Callable[[Any], Any] | None = column.type.dialect_impl(dialect).bind_processor(
        dialect)
    return processor


# -- the writers --------------------------------------------------------------------------------
class BatchWriter(Protocol):
    """Writes one batch in one transaction (see the module docstring)."""

    engine: AsyncEngine
    """The async engine of the database written to (for its write lock)."""

    async def write(self, items: list[Item]) -> Outcomes:
        """Write ``items`` in one transaction; IntegrityError/DataError if the data is
        refused (nothing of it was stored), any other exception if the database failed."""

    def close(self) -> None:
        """Release what the writer holds once no batch is being written."""


class CoreWriter:
    """Core statements on the async engine, one transaction a batch (PostgreSQL); items
    that carry an epoch are fenced (``write_any_batch``).

    On PostgreSQL a batch of fenced moves alone (what a cluster node's queue holds most
    of the time) is one statement in its own transaction (``write_fenced_moves``): one
    round trip to the server instead of four (BEGIN, the fence, the INSERT, COMMIT).
    """

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._statements = CoreStatements()
        self._postgres = engine.dialect.name == "postgresql"
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")

    async def write(self, items: list[Item]) -> Outcomes:
        if self._postgres and all(type(item) is MovePlayed and item.epoch is not None
                                  for item in items):
            async with self._autocommit.connect() as conn:
                return await conn.run_sync(write_fenced_moves, items)
        async with self.engine.begin() as conn:
            return await conn.run_sync(write_any_batch, items, self._statements)

    def close(self) -> None:
        pass


class SqliteThreadWriter:
    """A SQLite file's batches, each in one call to a thread of its own (module docstring)."""

    def __init__(self, engine: AsyncEngine, blocking: Engine) -> None:
        self.engine = engine
        self._blocking = blocking
        self._statements = SqliteTextStatements(blocking.dialect)
        self._held: Connection | None = None  # the thread's connection, kept between batches
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="tessera-commit")

    async def write(self, items: list[Item]) -> Outcomes:
        return await asyncio.get_running_loop().run_in_executor(
            self._thread, self.write_blocking, items)

    def write_blocking(self, items: list[Item]) -> Outcomes:
        """In the writer's thread, on the connection it keeps (no pool round per batch)."""
        if self._held is None:
            self._held = self._blocking.connect()
        try:
            with self._held.begin():
                return write_batch(self._held, items, self._statements)
        except (IntegrityError, DataError):
            raise  # the data's fault: the connection is fine
        except Exception:
            self._close_held()  # a new connection for the next transaction
            raise

    def _close_held(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            with contextlib.suppress(Exception):
                held.close()

    def close(self) -> None:
        self._thread.submit(self._close_held)  # after what the thread is doing
        self._thread.submit(self._blocking.dispose)
        self._thread.shutdown(wait=False)


def open_batch_writer(
    engine: AsyncEngine,
    *,
    sqlite_synchronous: SqliteSynchronous = "FULL",
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    connect_args: Mapping[str, Any] | None = None,
) -> BatchWriter:
    """The writer for ``engine``: a thread of its own for a SQLite file (opened with the
    same settings as ``engine``, which the caller passes), Core otherwise (PostgreSQL, and
    an in-memory SQLite database that another connection would not see)."""
    blocking = make_blocking_engine(engine.url, sqlite_synchronous=sqlite_synchronous,
                                    busy_timeout_ms=busy_timeout_ms, connect_args=connect_args)
    if blocking is None:
        return CoreWriter(engine)
    return SqliteThreadWriter(engine, blocking)


def game_row(item: GameCreated) -> dict[str, Any]:
    return {
        "id": item.game_id,
        "game_key": item.game_key,
        "options": item.options,
        "clock": item.clock,
        "rules_version": item.rules_version,
        "player0_id": item.player_ids[0],
        "player1_id": item.player_ids[1],
        "status": "playing",
        "created_at": item.created_at,
        "started_at": item.started_at,
        "last_seq": item.seq,
        "rated": item.rated,
    }


def move_row(item: MovePlayed) -> dict[str, Any]:
    return {
        "game_id": item.game_id,
        "ply": item.ply,
        "seq": item.seq,
        "move": item.move,
        "player": item.player,
        "ms_used": item.ms_used,
        "clock_ms": item.clock_ms,
        "played_at": item.played_at,
    }


def chat_row(item: ChatSent) -> dict[str, Any]:
    return {
        "game_id": item.game_id,
        "seq": item.seq,
        "user_id": item.user_id,
        "text": item.text,
        "sent_at": item.sent_at,
    }
