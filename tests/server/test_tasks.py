"""Stopping background work: a cancellation lost inside a library still ends the task.

``asyncio.wait_for`` before Python 3.12 returns what it awaited when that completes in the
same loop turn as the cancellation (redis-py wraps every socket write in one): the task
runs on. ``stop`` cancels again until the task ends; ``checkpoint`` ends a loop at its next
round. Neither swallows the cancellation of the task that calls it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys

import pytest

from server.tasks import Tasks, checkpoint, stop


async def lost_cancel_in_wait_for() -> bool:
    """Cancel the running task in the loop turn in which its ``wait_for`` completes;
    whether the cancellation was lost (the ``wait_for`` returned)."""
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    me = asyncio.current_task()
    assert me is not None

    async def write() -> int:
        return await done

    def complete_and_cancel() -> None:
        done.set_result(1)
        me.cancel()

    asyncio.get_running_loop().call_soon(complete_and_cancel)
    try:
        await asyncio.wait_for(write(), 10)
    except asyncio.CancelledError:
        return False
    return True


async def beating(*, checked: bool, until: asyncio.Event | None = None) -> None:
    """A background loop whose every round loses a cancellation, as a heartbeat's Redis
    write can (with ``checked``: a ``checkpoint`` each round); it returns once ``until``
    is set."""
    while until is None or not until.is_set():
        if checked:
            checkpoint()
        with contextlib.suppress(asyncio.CancelledError):  # lost, as inside wait_for
            await asyncio.sleep(60)


async def loses_one(lost: asyncio.Event) -> None:
    """Loses its first cancellation, then runs on (no checkpoint)."""
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        lost.set()
    while True:
        await asyncio.sleep(0.01)


async def ended(task: asyncio.Task[None], until: asyncio.Event) -> None:
    """End a task that loses its cancellations (its loop returns once ``until`` is set)."""
    until.set()
    task.cancel()
    await asyncio.wait([task])


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="wait_for keeps the cancel since 3.12")
async def test_wait_for_loses_a_cancellation_here() -> None:
    """The library behaviour the rest guards against (so the tests below can fail)."""
    task = asyncio.create_task(lost_cancel_in_wait_for())
    assert await task is True
    assert task.cancelling() == 1  # asked to stop, and running on


async def test_a_loop_with_checkpoints_ends_at_its_next_round() -> None:
    task = asyncio.create_task(beating(checked=True))
    await asyncio.sleep(0)
    assert await stop([task], within_s=5) == []
    assert task.cancelled()


async def test_stop_cancels_again_a_task_that_lost_its_cancellation() -> None:
    lost = asyncio.Event()
    task = asyncio.create_task(loses_one(lost))
    await asyncio.sleep(0)
    assert await stop([task], within_s=5) == []
    assert lost.is_set() and task.cancelled()


async def test_stop_gives_up_on_a_task_that_will_not_stop_and_says_which(
        caplog: pytest.LogCaptureFixture) -> None:
    until = asyncio.Event()
    task = asyncio.create_task(beating(checked=False, until=until), name="stubborn")
    await asyncio.sleep(0)
    with caplog.at_level(logging.ERROR, logger="server.tasks"):
        assert await stop([task], within_s=0.3) == [task]
    assert "stubborn did not stop within 0.3 s" in caplog.text
    assert "in beating" in caplog.text  # its stack
    await ended(task, until)


async def test_stop_does_not_swallow_its_callers_cancellation() -> None:
    until = asyncio.Event()
    child = asyncio.create_task(beating(checked=False, until=until))
    closer = asyncio.create_task(stop([child], within_s=30))
    await asyncio.sleep(0.05)
    closer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closer
    await ended(child, until)


async def test_tasks_close_ends_every_task_even_one_that_lost_its_cancellation() -> None:
    tasks = Tasks()
    lost = asyncio.Event()
    spawned = [tasks.spawn(beating(checked=True), name="beat"),
               tasks.spawn(loses_one(lost), name="loses-one")]
    await asyncio.sleep(0)
    async with asyncio.timeout(10):  # before the fix: forever
        await tasks.close()
    assert lost.is_set() and all(task.cancelled() for task in spawned)
    assert len(tasks) == 0
