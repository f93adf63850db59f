"""Group commit: moves, chat lines and game ends of every game, written together.

A move is acknowledged to the players only once it is durable, and a durable commit costs
an fsync. Committing each move on its own would cap the whole server at one move per fsync,
so ``CommitQueue`` runs one asyncio task that takes everything queued since its last commit
(up to ``max_batch`` items), writes it in ONE transaction with bulk inserts (Core
``executemany`` per table; on SQLite multi-row INSERTs of SQL text made once, see
``_SqliteStatements``; no ORM objects), commits, and only then resolves each caller's
``await queue.submit(item)``. While one commit is in flight the next batch gathers, so the
batch size adapts to the load by itself (a small batch, while several games are writing,
lingers 2 ms for company, so that a lightly loaded server does not pay an fsync per move).
On SQLite the whole transaction runs in one call to a thread of the queue's own
(``db.make_blocking_twin``), not as a round trip between the event loop and the driver's
thread per statement.

If the database refuses the batch for what is in it (a constraint: a duplicate ``(game_id,
ply)``, an unknown game; or data it cannot take), nothing of it was stored; the batch is then
written again item by item, each in its own transaction, so only the offending items fail
(``Conflict``) and the others are stored and acknowledged. Any other failure (the disk, the
connection) fails every item of the batch with ``WriteFailed``: nothing is acknowledged that
is not stored, and the queue carries on with the next batch.

Lifecycle::

    queue = CommitQueue(engine)
    queue.start()                         # inside the running event loop
    await queue.submit(MovePlayed(...))   # returns once committed; raises StorageError
    await queue.close()                   # stops accepting, writes what is queued, stops

A caller cancelled while waiting does not withdraw its item: it is still written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from types import TracebackType
from typing import Any, cast

from sqlalchemy import Connection, Table, insert, update
from sqlalchemy.exc import DataError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .db import make_blocking_twin, make_write_lock
from .errors import Conflict, GameNotPlaying, StorageError, WriteFailed, WriterClosed
from .models import ChatRow, GameRow, MoveRow, check_fits
from .records import FinishedStatus

log = logging.getLogger(__name__)

_MOVES = cast(Table, MoveRow.__table__)
_CHAT = cast(Table, ChatRow.__table__)
_GAMES = cast(Table, GameRow.__table__)


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

    def __post_init__(self) -> None:
        _check_at_least("seq", self.seq, 0)
        _check_aware("sent_at", self.sent_at)


@dataclass(frozen=True, slots=True)
class GameFinished:
    """The end of a game: ``winner`` is a seat or None; ``status`` over or aborted."""

    game_id: str
    winner: int | None
    reason: str
    seq: int
    ended_at: datetime
    status: FinishedStatus = "over"

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


@dataclass(slots=True)
class WriterStats:
    """Counters for monitoring and tests."""

    transactions: int = 0  # committed transactions, batch or single-item retries
    batches: int = 0  # batches taken from the queue
    stored: int = 0  # items committed and acknowledged
    failed: int = 0  # items rejected
    isolated: int = 0  # batches retried item by item after a conflict


async def write_items(conn: AsyncConnection, items: Sequence[Item]) -> list[StorageError | None]:
    """Write items inside the caller's transaction; per item, None or why it was not applied.

    Raises IntegrityError if any item breaks a constraint: the caller rolls back. New games
    are written first, so a batch may also hold their first events.
    """
    return await conn.run_sync(write_items_blocking, items)


def write_items_blocking(conn: Connection, items: Sequence[Item], *, core: bool = False
                         ) -> list[StorageError | None]:
    """``write_items`` on a blocking connection (the commit queue's thread on SQLite).

    On SQLite the rows and the updates go as SQL text made once (``_SqliteStatements``);
    ``core=True`` writes everything through Core statements instead, the reference that
    text is tested against.
    """
    statements: _CoreStatements | _SqliteStatements = (
        _SqliteStatements.of(conn) if conn.dialect.name == "sqlite" and not core
        else _CORE_STATEMENTS)
    games = [_game_params(item) for item in items if isinstance(item, GameCreated)]
    moves = [_move_params(item) for item in items if isinstance(item, MovePlayed)]
    chat = [_chat_params(item) for item in items if isinstance(item, ChatSent)]
    for table, rows in ((_GAMES, games), (_MOVES, moves), (_CHAT, chat)):  # games first
        if rows:
            statements.insert(conn, table, rows)
    outcomes: list[StorageError | None] = [None] * len(items)
    for index, item in enumerate(items):
        if isinstance(item, SeqAdvanced):
            statements.advance_seq(conn, item)
        elif isinstance(item, GameFinished) and statements.finish(conn, item) != 1:
            outcomes[index] = GameNotPlaying(f"game {item.game_id!r} is unknown or over")
    return outcomes


class _CoreStatements:
    """The statements of every batch as Core builds them (PostgreSQL, and the reference)."""

    def insert(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        conn.execute(insert(table), rows)

    def finish(self, conn: Connection, item: GameFinished) -> int:
        """Finish a game still playing; the number of rows changed (1, or 0 if it was not)."""
        return conn.execute(
            update(_GAMES)
            .where(_GAMES.c.id == item.game_id, _GAMES.c.status == "playing")
            .values(status=item.status, winner=item.winner, reason=item.reason,
                    last_seq=item.seq, ended_at=item.ended_at)).rowcount

    def advance_seq(self, conn: Connection, item: SeqAdvanced) -> None:
        conn.execute(update(_GAMES)
                     .where(_GAMES.c.id == item.game_id, _GAMES.c.last_seq < item.seq)
                     .values(last_seq=item.seq))


_CORE_STATEMENTS = _CoreStatements()


class _SqliteStatements:
    """The statements of every batch on SQLite, as SQL text made once per dialect.

    Building, caching and compiling Core statements and processing their parameters row by
    row cost the commit queue's thread about 55 µs a move, nearly all of it Python holding
    the GIL that the event loop's thread was waiting for. Here the SQL is made once, from
    the tables' own metadata, and each value goes through its column's own bind processor
    (a datetime or a JSON value is stored exactly as Core stores it; a value met twice in a
    batch, such as the time of moves of the same millisecond, is processed once); rows go
    as multi-row INSERTs of up to 999 parameters (SQLite's oldest limit). Errors are
    SQLAlchemy's, as with Core (``exec_driver_sql``).
    """

    MAX_PARAMETERS = 999

    _made: weakref.WeakKeyDictionary[Any, _SqliteStatements] = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, conn: Connection) -> _SqliteStatements:
        made = cls._made.get(conn.dialect)
        if made is None:
            made = cls._made[conn.dialect] = cls(conn.dialect)
        return made

    def __init__(self, dialect: Any) -> None:
        self._dialect = dialect
        self._quote = quote = dialect.identifier_preparer.quote
        # (table, column names) -> (INSERT head, one row's placeholders, processors)
        self._inserts: dict[tuple[str, tuple[str, ...]], tuple[str, str, list[Any]]] = {}
        games, c = quote(_GAMES.name), {col.name: quote(col.name) for col in _GAMES.c}
        self._ended_at = _processor(_GAMES.c.ended_at, dialect)
        self._finish = (f"UPDATE {games} SET {c['status']} = ?, {c['winner']} = ?, "
                        f"{c['reason']} = ?, {c['last_seq']} = ?, {c['ended_at']} = ? "
                        f"WHERE {c['id']} = ? AND {c['status']} = 'playing'")
        self._advance = (f"UPDATE {games} SET {c['last_seq']} = ? "
                         f"WHERE {c['id']} = ? AND {c['last_seq']} < ?")

    def insert(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        """Insert rows that all have the same keys (column names), in order."""
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
        """Finish a game still playing; the number of rows changed (1, or 0 if it was not)."""
        ended_at = item.ended_at if self._ended_at is None else self._ended_at(item.ended_at)
        return conn.exec_driver_sql(self._finish, (
            item.status, item.winner, item.reason, item.seq, ended_at, item.game_id)).rowcount

    def advance_seq(self, conn: Connection, item: SeqAdvanced) -> None:
        conn.exec_driver_sql(self._advance, (item.seq, item.game_id, item.seq))


def _processor(column: Any, dialect: Any) -> Callable[[Any], Any] | None:
    """The column's bind processor on this dialect, as Core applies it (None: as is)."""
    processor: Callable[[Any], Any] | None = column.type.dialect_impl(dialect).bind_processor(
        dialect)
    return processor


def _game_params(item: GameCreated) -> dict[str, Any]:
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
    }


def _move_params(item: MovePlayed) -> dict[str, Any]:
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


def _chat_params(item: ChatSent) -> dict[str, Any]:
    return {
        "game_id": item.game_id,
        "seq": item.seq,
        "user_id": item.user_id,
        "text": item.text,
        "sent_at": item.sent_at,
    }


_Entry = tuple[Item, "asyncio.Future[None]"]


class CommitQueue:
    """Commits submitted items in batches from one task; see the module docstring."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        max_batch: int = 256,
        linger_s: float = 0.002,
        linger_below: int = 16,
        max_pending: int = 10_000,
        on_commit: Callable[[int], None] | None = None,
        write_lock: AbstractAsyncContextManager[Any] | None = None,
    ) -> None:
        """``on_commit(n)`` is called after each committed transaction of ``n`` items
        (e.g. to feed a batch-size histogram); ``max_pending`` bounds the queue, so
        submitters wait when the database falls that far behind; ``write_lock`` is held
        by each transaction (share the Store's, see ``db.make_write_lock``). A batch of
        fewer than ``linger_below`` items, after one of two items or more, waits
        ``linger_s`` for more before it is committed (0 to commit at once): under light load
        that is a commit per few moves instead of one per move, for a couple of
        milliseconds more latency (like PostgreSQL's ``commit_delay`` and
        ``commit_siblings``)."""
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, not {max_batch}")
        self._engine = engine
        self._max_batch = max_batch
        self._linger_s = linger_s
        self._linger_below = linger_below
        self._last_batch = 0  # items in the previous batch
        self._queue: asyncio.Queue[_Entry | None] = asyncio.Queue(maxsize=max_pending)
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._on_commit = on_commit
        self._writing = write_lock if write_lock is not None else make_write_lock(engine)
        # SQLite: each transaction runs whole in one thread of this queue's own
        self._blocking = make_blocking_twin(engine)
        self._held: Connection | None = None  # the thread's connection
        self._thread = None if self._blocking is None else ThreadPoolExecutor(
            1, thread_name_prefix="tessera-commit")
        self.stats = WriterStats()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start the writing task in the running event loop."""
        if self._closed:
            raise WriterClosed("the commit queue is closed")
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="tessera-commit-queue"
            )

    def submit(self, item: Item) -> Awaitable[None]:
        """Queue an item; awaiting the result returns once it is committed.

        Raises WriterClosed at once if the queue is not running (nothing queued). Awaiting
        raises Conflict (the item breaks a rule; not stored), WriteFailed (the database
        failed; not stored) or WriterClosed (it stopped first). With room in the queue
        the result is the item's own future (a move awaits no coroutine of this class); a
        submitter cancelled while awaiting it cancels only that future: the item stays
        queued and is written, and if it then fails, the failure is logged, as nobody is
        left to hear it.
        """
        if not isinstance(item, GameCreated | MovePlayed | ChatSent | GameFinished
                          | SeqAdvanced):
            raise TypeError(f"cannot store {type(item).__name__}")
        if self._closed or not self.running:
            raise WriterClosed("the commit queue is not running")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._queue.full():
            return self._submit_when_room(item, future)
        self._queue.put_nowait((item, future))
        return future

    async def _submit_when_room(self, item: Item, future: asyncio.Future[None]) -> None:
        await self._queue.put((item, future))
        if not self.running and not future.done():  # it stopped while we waited for room
            future.set_exception(WriterClosed("the commit queue stopped"))
        await future

    async def close(self) -> None:
        """Stop accepting items, write everything already queued, and stop the task."""
        if self._closed:
            if self._task is not None:
                await asyncio.shield(self._task)
            return
        self._closed = True
        task = self._task
        if task is None or task.done():
            return
        await self._queue.put(None)
        await asyncio.shield(task)

    async def __aenter__(self) -> CommitQueue:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def _run(self) -> None:
        try:
            stopping = False
            while not stopping:
                entry = await self._queue.get()
                if entry is None:
                    break
                batch = [entry]
                stopping = self._take_queued(batch)
                if (not stopping and self._linger_s > 0 and len(batch) < self._linger_below
                        and self._last_batch > 1):
                    # A small batch while several games are writing: wait a moment for
                    # more, so that a lightly loaded server does not pay a commit (an
                    # fsync) for every move or two. A lone writer is not kept waiting.
                    await asyncio.sleep(self._linger_s)
                    stopping = self._take_queued(batch)
                self._last_batch = len(batch)
                try:
                    await self._commit(batch)
                except asyncio.CancelledError:
                    _fail(batch, lambda: WriteFailed("the commit queue was cancelled mid-commit"))
                    raise
                except Exception as exc:  # a bug here must not hang every caller
                    log.exception("commit queue: unexpected failure")
                    _fail(batch, partial(_write_failed, exc))
        finally:
            # Cancelled rather than closed (the loop is going away): fail what is left, so
            # no submitter waits forever.
            self._closed = True
            self._stop_thread()
            while not self._queue.empty():
                left = self._queue.get_nowait()
                if left is not None:
                    _fail([left], lambda: WriterClosed("the commit queue stopped"))

    def _take_queued(self, batch: list[_Entry]) -> bool:
        """Add what is queued to ``batch`` (up to max_batch); True if close() is among it."""
        while len(batch) < self._max_batch:
            try:
                entry = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                return False
            if entry is None:
                return True
            batch.append(entry)
        return False

    async def _commit(self, batch: list[_Entry]) -> None:
        self.stats.batches += 1
        items = [item for item, _ in batch]
        try:
            outcomes = await self._transaction(items)
        except (IntegrityError, DataError):
            self.stats.isolated += 1
            log.warning("commit queue: batch of %d refused; retrying item by item", len(batch))
            await self._commit_one_by_one(batch)
            return
        except Exception as exc:
            log.error("commit queue: batch of %d not stored: %s", len(batch), exc)
            self.stats.failed += len(batch)
            _fail(batch, partial(_write_failed, exc))
            return
        self._committed(len(batch))
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            self._resolve(future, outcome)

    async def _commit_one_by_one(self, batch: list[_Entry]) -> None:
        for item, future in batch:
            outcome: StorageError | None
            try:
                [outcome] = await self._transaction([item])
                self._committed(1)
            except IntegrityError as exc:
                outcome = Conflict(f"{item!r} not stored: {exc.orig}")
                outcome.__cause__ = exc
            except Exception as exc:
                outcome = _write_failed(exc)
            self._resolve(future, outcome)

    async def _transaction(self, items: list[Item]) -> list[StorageError | None]:
        """Write ``items`` in one transaction: on SQLite, in one call to this queue's thread."""
        async with self._writing:
            if self._thread is not None:
                return await asyncio.get_running_loop().run_in_executor(
                    self._thread, self._transaction_blocking, items)
            async with self._engine.begin() as conn:
                return await write_items(conn, items)

    def _transaction_blocking(self, items: list[Item]) -> list[StorageError | None]:
        """In the queue's thread, on the connection it keeps (no pool round per batch)."""
        assert self._blocking is not None
        if self._held is None:
            self._held = self._blocking.connect()
        try:
            with self._held.begin():
                return write_items_blocking(self._held, items)
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

    def _stop_thread(self) -> None:
        if self._thread is not None and self._blocking is not None:
            self._thread.submit(self._close_held)  # after what the thread is doing
            self._thread.submit(self._blocking.dispose)
            self._thread.shutdown(wait=False)

    def _committed(self, items: int) -> None:
        self.stats.transactions += 1
        if self._on_commit is not None:
            try:
                self._on_commit(items)
            except Exception:
                log.exception("commit queue: on_commit hook failed")

    def _resolve(self, future: asyncio.Future[None], outcome: StorageError | None) -> None:
        if outcome is None:
            self.stats.stored += 1
            if not future.done():
                future.set_result(None)
        else:
            self.stats.failed += 1
            _set_failed(future, outcome)


def _write_failed(exc: BaseException) -> WriteFailed:
    error = WriteFailed(f"not stored: {exc}")
    error.__cause__ = exc
    return error


def _fail(batch: list[_Entry], make_error: Callable[[], StorageError]) -> None:
    for _, future in batch:
        _set_failed(future, make_error())


def _set_failed(future: asyncio.Future[None], error: StorageError) -> None:
    if future.cancelled():
        log.error("commit queue: an item whose submitter went away was not stored: %s", error)
    elif not future.done():
        future.set_exception(error)
