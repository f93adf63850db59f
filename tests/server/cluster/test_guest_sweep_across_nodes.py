"""The guest sweep on a cluster spares a guest connected to another node (real node
processes): a node knows its own connections, and every node's from the presence hashes."""

from __future__ import annotations

import asyncio

from server.storage import Store, make_engine
from tests.server.support import Clients

from .conftest import Cluster, eventually


async def test_a_guest_connected_to_another_node_is_not_swept(cluster: Cluster) -> None:
    sweeper, other = await asyncio.gather(  # at once, each with its own flags
        cluster.start("a", "--guest-ttl", "0.3", "--guest-sweep-every", "0.2"),
        cluster.start("b"))
    clients = Clients(other.url)
    engine = make_engine(cluster.db_url)
    store = Store(engine)
    try:
        stays = await clients.guest()  # on b: node a's own connections do not include it
        goes = await clients.guest()
        await goes.close()  # connected nowhere: the sweep on a deletes it

        async def gone() -> bool:
            return await store.get_user_by_name(goes.name) is None

        await eventually(gone, timeout_s=15)
        assert await store.get_user_by_name(stays.name) is not None
        assert sweeper.proc is not None and sweeper.proc.poll() is None
    finally:
        await clients.close_all()
        await engine.dispose()
