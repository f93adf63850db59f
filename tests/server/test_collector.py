"""server.collector: survivors of a young collection are frozen; a full one finds them."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import weakref

from server import collector


class Node:
    """An object that can sit in a reference cycle and be watched by a weak reference."""

    other: Node | None = None


async def test_pace_freezes_survivors_and_the_periodic_full_collection_finds_their_cycles(
        ) -> None:
    callbacks = list(gc.callbacks)
    pacing = asyncio.create_task(collector.pace(full_every_s=3600))
    await asyncio.sleep(0)  # its callback is in
    try:
        node = Node()
        node.other = node  # a cycle, alive for now
        freed = weakref.ref(node)
        gc.collect(0)  # a young collection: what it leaves alive is frozen at once
        assert not any(obj is node for obj in gc.get_objects())  # in no generation
        del node  # now cyclic garbage, but frozen
        gc.collect()
        assert freed() is not None  # no collection looks at frozen objects...
        collector.collect_everything()
        assert freed() is None  # ...but the periodic full one does
    finally:
        pacing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pacing
        gc.unfreeze()
    assert gc.callbacks == callbacks
