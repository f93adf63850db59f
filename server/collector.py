"""The cyclic garbage collector, paced for a server that may hold thousands of connections.

CPython's collector rescans the objects that survive it: every tenth young collection
rescans the middle generation, and a full collection every object the server holds once
they have grown by a quarter. An open websocket connection is about 100 tracked objects, so
20,000 of them are two million to rescan, and the collector would hold the event loop for
seconds at a time while they arrive. Nearly none of it is garbage: a closed connection is
freed by reference counting (:func:`server.wsio.release`) and so is most of what a request
makes.

So :func:`pace` freezes (``gc.freeze``) whatever a young collection leaves alive, as soon
as it is over: the collector looks at each object about once, while it is young, and a
young collection holds the loop for as long as its 10,000 objects take (a few
milliseconds), however many connections are open. An object frozen and later freed by its
last reference is freed as usual. What the collector no longer sees is a cycle of objects
that survived a young collection and became garbage later: every ``full_every_s`` (10
minutes) everything is unfrozen and collected once, a pause in proportion to what the
server holds (under a second with 10,000 connections open).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time

log = logging.getLogger(__name__)

GC_YOUNG_THRESHOLD = 10_000
FULL_EVERY_S = 600.0


def tune_gc() -> None:
    """Make the cyclic garbage collector cheaper for a long-running server: collect and
    freeze what exists once the server is up (modules, tables, restored games), so that no
    later collection scans it, and collect the young generation every 10,000 surviving
    allocations rather than 700 (at CPython's default it runs about a hundred times a
    second under load). With :func:`pace` the threshold only
    sets how much one young collection scans, not how often an object is scanned.
    """
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def _freeze_after_young(phase: str, info: dict[str, int]) -> None:
    """``gc.callbacks``: once a young or middle collection is over, freeze what it left."""
    if phase == "stop" and info["generation"] < 2:
        gc.freeze()


def collect_everything() -> int:
    """Unfreeze, collect every generation, freeze again: what has become cyclic garbage
    since it was frozen is found (a pause in proportion to every object alive); how many
    objects were collected."""
    gc.unfreeze()
    collected = gc.collect()
    gc.freeze()
    return collected


async def pace(full_every_s: float = FULL_EVERY_S) -> None:
    """Until cancelled: freeze the survivors of every young collection, and
    :func:`collect_everything` every ``full_every_s``."""
    gc.callbacks.append(_freeze_after_young)
    try:
        while True:
            await asyncio.sleep(full_every_s)
            t0 = time.perf_counter()
            collected = collect_everything()
            log.info("full collection", extra={
                "collected": collected, "frozen": gc.get_freeze_count(),
                "ms": round((time.perf_counter() - t0) * 1000, 1)})
    finally:
        gc.callbacks.remove(_freeze_after_young)
