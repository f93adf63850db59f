"""``tessera serve --cluster URL``: the server, as a node that the cluster knows of.

Today a node is the one-process server (``server.app.running_server``) plus its link to
Redis (``Bus``) and its entry in the node registry: it beats every ``heartbeat_s`` with
its address and connections, so ``tessera cluster status`` lists it and the other nodes see
it die. Games, the lobby and sessions are wired to the cluster's stores in the next step
(docs/SCALING.md, "Wiring"). A node starts even while Redis is down: the bus reconnects by
itself and the registry beats once it can.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from redis.exceptions import RedisError

from server.app import running_server, tune_gc
from server.config import Settings

from .bus import Bus
from .config import ClusterSettings
from .keys import Keys
from .nodes import NodeRegistry

log = logging.getLogger(__name__)


async def run_node(settings: Settings, cluster: ClusterSettings,
                   ready_file: str | None = None) -> None:
    """Serve as a cluster node until SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    keys = Keys(cluster.name)
    async with running_server(settings) as running, \
            Bus(cluster.url, keys, cluster.node_id,
                request_timeout_s=cluster.request_timeout_s) as bus:
        sessions = running.app.sessions
        registry = NodeRegistry(
            bus.redis, keys, cluster.node_id, cluster.incarnation,
            f"{settings.host}:{running.port}", report=lambda: ((), len(sessions)),
            interval_s=cluster.heartbeat_s, dead_after_s=cluster.dead_after_s)
        with contextlib.suppress(RedisError):
            await registry.beat()  # listed at once; else from the first beat that can
        registry.start()
        tune_gc()
        if ready_file:
            with open(ready_file, "w") as f:
                f.write(f"{running.port}\n")
        print(f"tessera: node {cluster.node_id} of cluster {cluster.name} listening on "
              f"ws://{settings.host}:{running.port}/ws", flush=True)
        try:
            await stop.wait()
        finally:
            log.info("shutting down")
            await registry.close()
