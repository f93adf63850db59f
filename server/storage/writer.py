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
How a batch is written (Core on the async engine, or on a SQLite file SQL text in a thread
of its own) is the batch writer's business, chosen when storage opens
(``statements.open_batch_writer``).

If the database refuses the batch for what is in it (a constraint: a duplicate ``(game_id,
ply)``, an unknown game; or data it cannot take), nothing of it was stored; the batch is then
written again item by item, each in its own transaction, so only the offending items fail
(``Conflict``) and the others are stored and acknowledged. Any other failure (the disk, the
connection) fails every item of the batch with ``WriteFailed``: nothing is acknowledged that
is not stored, and the queue carries on with the next batch.

Lifecycle::

    queue = CommitQueue(open_batch_writer(engine))
    queue.start()                         # inside the running event loop
    await queue.submit(MovePlayed(...))   # returns once committed; raises StorageError
    await queue.close()                   # stops accepting, writes what is queued, stops

A caller cancelled while waiting does not withdraw its item: it is still written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any

from sqlalchemy.exc import DataError, IntegrityError

from .db import make_write_lock
from .errors import Conflict, StorageError, WriteFailed, WriterClosed
from .items import ITEM_TYPES, Item
from .records import GameRatings
from .statements import BatchWriter, Outcome, Outcomes

log = logging.getLogger(__name__)


@dataclass(slots=True)
class WriterStats:
    """Counters for monitoring and tests."""

    transactions: int = 0  # committed transactions, batch or single-item retries
    batches: int = 0  # batches taken from the queue
    stored: int = 0  # items committed and acknowledged
    failed: int = 0  # items rejected
    isolated: int = 0  # batches retried item by item after a conflict


Stored = GameRatings | None
"""What awaiting a submitted item gives: None, or for a rated game's end both ratings."""
_Entry = tuple[Item, "asyncio.Future[Stored]"]


class CommitQueue:
    """Commits submitted items in batches from one task; see the module docstring."""

    def __init__(
        self,
        batches: BatchWriter,
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
        self._batches = batches
        self._max_batch = max_batch
        self._linger_s = linger_s
        self._linger_below = linger_below
        self._last_batch = 0  # items in the previous batch
        self._queue: asyncio.Queue[_Entry | None] = asyncio.Queue(maxsize=max_pending)
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._on_commit = on_commit
        self._writing = (write_lock if write_lock is not None
                         else make_write_lock(batches.engine))
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

    def submit(self, item: Item) -> Awaitable[Stored]:
        """Queue an item; awaiting the result returns once it is committed (with, for the
        end of a rated game, the two rating changes made in the same transaction).

        Raises WriterClosed at once if the queue is not running (nothing queued). Awaiting
        raises Conflict (the item breaks a rule; not stored), WriteFailed (the database
        failed; not stored) or WriterClosed (it stopped first). With room in the queue
        the result is the item's own future (a move awaits no coroutine of this class); a
        submitter cancelled while awaiting it cancels only that future: the item stays
        queued and is written, and if it then fails, the failure is logged, as nobody is
        left to hear it.
        """
        if not isinstance(item, ITEM_TYPES):
            raise TypeError(f"cannot store {type(item).__name__}")
        if self._closed or not self.running:
            raise WriterClosed("the commit queue is not running")
        future: asyncio.Future[Stored] = asyncio.get_running_loop().create_future()
        if self._queue.full():
            return self._submit_when_room(item, future)
        self._queue.put_nowait((item, future))
        return future

    async def _submit_when_room(self, item: Item, future: asyncio.Future[Stored]) -> Stored:
        await self._queue.put((item, future))
        if not self.running and not future.done():  # it stopped while we waited for room
            future.set_exception(WriterClosed("the commit queue stopped"))
        return await future

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
            self._batches.close()
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
            log.error("commit queue: batch of %d not stored: %s", len(batch), _summary(exc))
            self.stats.failed += len(batch)
            _fail(batch, partial(_write_failed, exc))
            return
        self._committed(len(batch))
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            self._resolve(future, outcome)

    async def _commit_one_by_one(self, batch: list[_Entry]) -> None:
        for item, future in batch:
            outcome: Outcome
            try:
                [outcome] = await self._transaction([item])
                self._committed(1)
            except IntegrityError as exc:
                outcome = Conflict(f"{item!r} not stored: {exc.orig}")
                outcome.__cause__ = exc
            except Exception as exc:
                outcome = _write_failed(exc)
            self._resolve(future, outcome)

    async def _transaction(self, items: list[Item]) -> Outcomes:
        """Write ``items`` in one transaction, taking turns with the store's writes."""
        async with self._writing:
            return await self._batches.write(items)

    def _committed(self, items: int) -> None:
        self.stats.transactions += 1
        if self._on_commit is not None:
            try:
                self._on_commit(items)
            except Exception:
                log.exception("commit queue: on_commit hook failed")

    def _resolve(self, future: asyncio.Future[Stored], outcome: Outcome) -> None:
        if isinstance(outcome, StorageError):
            self.stats.failed += 1
            _set_failed(future, outcome)
        else:
            self.stats.stored += 1
            if not future.done():
                future.set_result(outcome)


def _summary(exc: BaseException) -> str:
    """The first line of a database error (SQLAlchemy's go on with the statement and its
    parameters), for one-line logs and messages; the whole is kept as ``__cause__``."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _write_failed(exc: BaseException) -> WriteFailed:
    error = WriteFailed(f"not stored: {_summary(exc)}")
    error.__cause__ = exc
    return error


def _fail(batch: list[_Entry], make_error: Callable[[], StorageError]) -> None:
    for _, future in batch:
        _set_failed(future, make_error())


def _set_failed(future: asyncio.Future[Stored], error: StorageError) -> None:
    if future.cancelled():
        log.error("commit queue: an item whose submitter went away was not stored: %s", error)
    elif not future.done():
        future.set_exception(error)
