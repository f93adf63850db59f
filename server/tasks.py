"""Background tasks with an owner: started through one object, stopped with the server.

Work that outlives the request that started it (a flag timer's timeout, a connection's close
handshake, a poll loop) is spawned here, never into a module-level set: on shutdown the
server cancels what is left and waits for it, so nothing runs on after its storage is gone
and no task is garbage-collected while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class Tasks:
    """The background tasks of one server's lifetime."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

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

    async def close(self) -> None:
        """Cancel every task still running and wait until they have all stopped."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
