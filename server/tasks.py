"""Background tasks with an owner: started through one object, stopped with the server.

Work that outlives the request that started it (a flag timer's timeout, a connection's close
handshake, a poll loop) is spawned here, never into a module-level set: on shutdown the
server cancels what is left and waits for it, so nothing runs on after its storage is gone
and no task is garbage-collected while it runs.

A cancellation can be lost inside a library: before Python 3.12, ``asyncio.wait_for``
returns the result of what it awaited when that completes as the cancellation lands
(redis-py wraps every socket write in one), and the task runs on as if never asked to stop.
So a stop never trusts one ``cancel()``: :func:`stop` cancels again until the task ends,
within a bound, and every background loop calls :func:`checkpoint` once a round, which ends
it when a cancellation is pending. Neither ever swallows the caller's own cancellation.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Coroutine, Iterable
from typing import Any

log = logging.getLogger(__name__)

STOP_WITHIN_S = 5.0  # how long a stop waits for background work to end, by default
RECANCEL_S = 0.5  # a task still running this long after its cancellation is cancelled again


def checkpoint() -> None:
    """Raise ``CancelledError`` if the running task has a cancellation pending: a loop
    calls this once a round, so a cancellation lost inside a library still ends it."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def stop(tasks: Iterable[asyncio.Task[Any]], within_s: float = STOP_WITHIN_S,
               ) -> list[asyncio.Task[Any]]:
    """Cancel ``tasks`` and wait until every one has ended, at most ``within_s``; the
    ones still running then, each logged with its stack.

    A task still running ``RECANCEL_S`` after its cancellation is cancelled again (its
    first one may have been lost in a library). A task's failure is its owner's to log
    (``Tasks`` does, as it happens); the caller's own cancellation propagates out of the
    wait.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    tasks = list(tasks)
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        left = deadline - loop.time()
        if left <= 0:
            break
        _, pending = await asyncio.wait(pending, timeout=min(RECANCEL_S, left))
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: its owner logs a failure (a done callback)
    for task in pending:
        stack = io.StringIO()
        task.print_stack(file=stack)
        log.error("task %s did not stop within %g s of its cancellation:\n%s",
                  task.get_name(), within_s, stack.getvalue())
    return list(pending)


class Tasks:
    """The background tasks of one server's lifetime."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether the server is stopping: no new background work is taken."""
        return self._closed

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None
              ) -> asyncio.Task[Any]:
        """Run ``coro`` in the background; a failure is logged (nobody awaits it)."""
        if self._closed:
            coro.close()
            raise RuntimeError("the server is stopping: no new background work")
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(),
                      exc_info=task.exception())

    def __len__(self) -> int:
        return len(self._tasks)

    async def close(self, within_s: float = STOP_WITHIN_S) -> None:
        """Cancel every task still running and wait until they have all stopped (at most
        ``within_s``: one that will not stop is logged and left)."""
        self._closed = True
        await stop(list(self._tasks), within_s)
