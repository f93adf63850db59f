"""Guest accounts: made in batches off the move path, swept when they never played.

Every guest is a row in ``users`` (games and chat name their players by id) with a session
token. Written one by one, a flood of guests cost two commits (two fsyncs) each, under the
write lock the commit queue of moves takes turns with, and moves waited behind them.
:class:`GuestMaker` writes the guests asked for meanwhile in one short transaction of their
own (users and tokens), never in the move commit queue, and pauses ``pause_s`` between
batches, so however many guests are asked for, they hold the write lock for one commit at
a time and at most a few times a second.

:func:`sweep_guests` deletes the guests that never played (no game in progress or over
names them, no chat line of theirs is in one) and were last seen (made, or a token of theirs
made or used) more than ``guest_ttl_s`` ago, except those connected now, with their tokens
and the aborted games they sat in: a stranger's guests do not stay.
The server runs it every ``guest_sweep_interval_s``; ``python -m server admin
sweep-guests`` runs it from the command line.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Collection
from datetime import UTC, datetime, timedelta

from protocol import ErrorCode, ProtocolError

from .storage import NameTaken, Store, User
from .tasks import checkpoint

log = logging.getLogger(__name__)

SWEEP_CHUNK = 500  # guests deleted per transaction


def guest_name() -> str:
    return f"guest-{secrets.token_hex(4)}"


class GuestMaker:
    """Makes guest accounts in batches, from one task of its own (module docstring)."""

    def __init__(self, store: Store, *, max_batch: int = 200, pause_s: float = 0.05) -> None:
        self.store = store
        self.max_batch = max_batch
        self.pause_s = pause_s
        self.batches = 0  # transactions written (for tests and figures)
        self._waiting: list[asyncio.Future[tuple[User, str]]] = []
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    async def make(self) -> tuple[User, str]:
        """A new guest and its session token, once its batch is committed."""
        if self._closed:
            raise ProtocolError("the server is stopping", code=ErrorCode.INTERNAL_ERROR)
        future: asyncio.Future[tuple[User, str]] = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="tessera-guests")
        return await future

    async def _run(self) -> None:
        while self._waiting:
            batch, self._waiting = (self._waiting[:self.max_batch],
                                    self._waiting[self.max_batch:])
            try:
                made = await self._write(len(batch))
            except Exception as exc:
                log.error("guests: a batch of %d not stored: %s", len(batch), exc)
                for future in batch:
                    if not future.done():
                        future.set_exception(ProtocolError(
                            "could not make a guest account", code=ErrorCode.INTERNAL_ERROR))
                continue
            for future, guest in zip(batch, made, strict=True):
                if not future.done():  # a caller that went away leaves a row to sweep
                    future.set_result(guest)
            await asyncio.sleep(self.pause_s)  # the write lock is for the moves meanwhile

    async def _write(self, count: int) -> list[tuple[User, str]]:
        for attempt in range(5):
            try:
                self.batches += 1
                return await self.store.create_guests([guest_name() for _ in range(count)])
            except NameTaken:  # 32 random bits: a name met twice now and then, draw again
                if attempt == 4:
                    raise
        raise AssertionError("unreachable")

    async def close(self) -> None:
        """Finish the batches asked for, then stop."""
        self._closed = True
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)


async def sweep_guests(store: Store, ttl_s: float, keep: Collection[int] = (),
                       now: datetime | None = None) -> int:
    """Delete the guests that never played and were not seen for ``ttl_s``, but those in
    ``keep`` (connected now); how many were deleted."""
    seen_before = (now or datetime.now(UTC)) - timedelta(seconds=ttl_s)
    deleted = after = 0
    while found := await store.idle_guests(seen_before, after_id=after):
        after = found[-1]
        ids = [i for i in found if i not in keep]
        for start in range(0, len(ids), SWEEP_CHUNK):
            deleted += await store.delete_guests(ids[start:start + SWEEP_CHUNK], seen_before)
            await asyncio.sleep(0)  # other writers take their turn between chunks
    return deleted


async def sweep_guests_forever(store: Store, ttl_s: float, interval_s: float,
                               online: Callable[[], Awaitable[Collection[int]]]) -> None:
    """Run :func:`sweep_guests` every ``interval_s`` (a server's background task), sparing
    ``await online()`` (the users connected anywhere: a cluster's other nodes too)."""
    while True:
        checkpoint()
        await asyncio.sleep(interval_s)
        try:
            deleted = await sweep_guests(store, ttl_s, await online())
        except Exception:
            log.exception("guests: the sweep failed; trying again later")
            continue
        if deleted:
            log.info("guests swept", extra={"deleted": deleted})
