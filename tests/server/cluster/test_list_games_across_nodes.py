"""``list_games`` on a cluster: every node answers every listing alike (games in progress
included, whichever node owns them), as one process does (``test_games.py``)."""

from __future__ import annotations

from tests.server.listing_scenario import every_server_lists_alike
from tests.server.support import Clients

from .conftest import Cluster


async def test_every_node_lists_the_same_games(cluster: Cluster) -> None:
    nodes = await cluster.start_nodes(("a", "b", "c"))
    clients = Clients(nodes[0].url)
    try:
        await every_server_lists_alike(clients, [node.url for node in nodes])
    finally:
        await clients.close_all()
