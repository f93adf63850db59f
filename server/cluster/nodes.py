"""The node registry: which nodes are alive, what they hold, and which died.

Every node beats once a ``interval_s``: one Lua script writes its entry in the sorted set
``tessera:{cluster}:nodes`` (node id -> the heartbeat's time, read from Redis's own clock
so that nodes on machines whose clocks differ agree), its description (a hash: id,
incarnation, address, pid, start, connections, how many games, its dead-after setting) and
the set of games it holds leases on. A node whose heartbeat is older than its
``dead_after_s`` is dead; its entry stays listed (as dead) until ``forget_after_s``, so an
operator sees what died and what it held.

Every live node's heartbeat task also looks for dead nodes and calls ``on_dead(node_id)``
for each one it is the first to claim (``claim_dead``: one Lua script, so exactly one node
cleans up after a dead one, e.g. its members' presence). A node that comes back under the
same id beats again and is alive again: the claim is forgotten.

``cluster_status`` reads all of it for ``tessera cluster status``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from .keys import Keys, as_str, check_name

log = logging.getLogger(__name__)

HEARTBEAT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('HSET', KEYS[2], 'node_id', ARGV[1], 'incarnation', ARGV[2], 'address', ARGV[3],
           'pid', ARGV[4], 'started_ms', ARGV[5], 'connections', ARGV[6],
           'dead_after_ms', ARGV[7], 'heartbeat_ms', now, 'games', #ARGV - 8)
redis.call('HDEL', KEYS[2], 'claimed_by')
redis.call('DEL', KEYS[3])
for i = 9, #ARGV, 1000 do
  redis.call('SADD', KEYS[3], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
redis.call('PEXPIRE', KEYS[2], ARGV[8])
redis.call('PEXPIRE', KEYS[3], ARGV[8])
return now
"""
# A dead node is claimed once: only while its heartbeat is the one the claimant saw, and
# only by the first claimant.
CLAIM = """
local beat = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not beat or tonumber(beat) ~= tonumber(ARGV[2]) then return 0 end
return redis.call('HSETNX', KEYS[2], 'claimed_by', ARGV[3])
"""
FORGET = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
for _, node in ipairs(old) do redis.call('ZREM', KEYS[1], node) end
return old
"""


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One node as the registry knows it. Times are Redis's clock, in ms since the epoch."""

    node_id: str
    alive: bool
    heartbeat_ms: int
    age_ms: int  # how long ago its last heartbeat was
    incarnation: str = ""
    address: str = ""
    pid: int = 0
    started_ms: int = 0
    connections: int = 0
    games: tuple[str, ...] = ()


class NodeRegistry:
    """This node's heartbeat, and what the registry says of the others.

    ::

        registry = NodeRegistry(bus.redis, keys, node_id, incarnation, "10.0.0.5:8765",
                                report=lambda: (leases.held, len(sessions)),
                                on_dead=take_over_games_of)
        await registry.beat()       # join (at once, before serving)
        registry.start()            # then every interval_s
        await registry.close()      # leave: the entry is removed
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        keys: Keys,
        node_id: str,
        incarnation: str,
        address: str,
        *,
        report: Callable[[], tuple[Iterable[str], int]] | None = None,
        on_dead: Callable[[str], object] | None = None,
        interval_s: float = 1.0,
        dead_after_s: float = 5.0,
        forget_after_s: float = 3600.0,
    ) -> None:
        """``report()`` gives (the games this node holds, its connections) for each
        heartbeat; ``on_dead(node_id)`` is called for each dead node this one claims."""
        if dead_after_s <= interval_s:
            raise ValueError(f"dead_after_s ({dead_after_s}) must exceed interval_s "
                             f"({interval_s}), or a live node would look dead")
        self.redis = redis
        self.keys = keys
        self.node_id = check_name("a node id", node_id)
        self.incarnation = incarnation
        self.address = address
        self.started_ms = 0
        self.interval_s = interval_s
        self.dead_after_s = dead_after_s
        self.forget_after_s = forget_after_s
        self._report = report or (lambda: ((), 0))
        self._on_dead = on_dead
        self._heartbeat = redis.register_script(HEARTBEAT)
        self._claim = redis.register_script(CLAIM)
        self._forget = redis.register_script(FORGET)
        self._task: asyncio.Task[None] | None = None
        self.failures = 0  # heartbeats that could not reach Redis

    async def beat(self) -> int:
        """One heartbeat now; Redis's time of it (ms). Raises RedisError if unreachable."""
        games, connections = self._report()
        stamp = int(await self._heartbeat(
            keys=[self.keys.nodes, self.keys.node(self.node_id),
                  self.keys.node_games(self.node_id)],
            args=[self.node_id, self.incarnation, self.address, os.getpid(),
                  self.started_ms, connections, int(self.dead_after_s * 1000),
                  int(self.forget_after_s * 1000), *games]))
        if not self.started_ms:
            self.started_ms = stamp
            await self.redis.hset(self.keys.node(self.node_id), "started_ms", stamp)
        return stamp

    async def nodes(self) -> list[NodeInfo]:
        """Every node known (alive or dead, until forgotten), by id."""
        return await cluster_status(self.redis, self.keys, with_games=False)

    async def claim_dead(self, node: NodeInfo) -> bool:
        """Claim a dead node for cleanup; True for exactly one claimant per death."""
        return bool(await self._claim(
            keys=[self.keys.nodes, self.keys.node(node.node_id)],
            args=[node.node_id, node.heartbeat_ms, self.node_id]))

    async def check_dead(self) -> list[str]:
        """Claim the nodes that died; call ``on_dead`` for each. The ids claimed."""
        claimed = []
        for node in await self.nodes():
            if not node.alive and node.node_id != self.node_id and await self.claim_dead(node):
                claimed.append(node.node_id)
                log.warning("nodes: %s is dead (last heartbeat %.1f s ago)", node.node_id,
                            node.age_ms / 1000)
                if self._on_dead is not None:
                    try:
                        self._on_dead(node.node_id)
                    except Exception:
                        log.exception("nodes: on_dead failed")
        await self._forget(keys=[self.keys.nodes], args=[int(self.forget_after_s * 1000)])
        return claimed

    def start(self) -> None:
        """Beat every ``interval_s`` and look for dead nodes, until ``close``."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="tessera-heartbeat")

    async def _run(self) -> None:
        while True:
            try:
                await self.beat()
                await self.check_dead()
                self.failures = 0
            except RedisError as exc:
                self.failures += 1
                log.warning("nodes: heartbeat failed: %s", exc)
            except Exception:
                log.exception("nodes: heartbeat round failed")
            await asyncio.sleep(self.interval_s)

    async def close(self, *, leave: bool = True) -> None:
        """Stop beating; with ``leave`` (a clean stop) remove this node's entry."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if leave:
            with contextlib.suppress(RedisError):
                await self.redis.zrem(self.keys.nodes, self.node_id)
                await self.redis.delete(self.keys.node(self.node_id),
                                        self.keys.node_games(self.node_id))


async def cluster_status(redis: aioredis.Redis, keys: Keys, *, with_games: bool = True
                         ) -> list[NodeInfo]:
    """Every node the registry knows, by id: alive or dead by its own dead-after setting
    against Redis's clock now, with its description and (``with_games``) its games."""
    seconds, micros = await redis.time()
    now = int(seconds) * 1000 + int(micros) // 1000
    beats: list[tuple[bytes, float]] = list(
        await redis.zrange(keys.nodes, 0, -1, withscores=True))  # type: ignore[arg-type]
    async with redis.pipeline(transaction=False) as pipe:
        for member, _ in beats:
            node_id = as_str(member)
            pipe.hgetall(keys.node(node_id))
            if with_games:
                pipe.smembers(keys.node_games(node_id))
        replies = await pipe.execute()
    found = []
    step = 2 if with_games else 1
    for index, (member, score) in enumerate(beats):
        info = {as_str(k): as_str(v) for k, v in replies[index * step].items()}
        games = sorted(as_str(g) for g in replies[index * step + 1]) if with_games else []
        heartbeat = int(score)
        dead_after = int(info.get("dead_after_ms", 5000))
        found.append(NodeInfo(
            node_id=as_str(member), alive=now - heartbeat <= dead_after,
            heartbeat_ms=heartbeat, age_ms=max(0, now - heartbeat),
            incarnation=info.get("incarnation", ""), address=info.get("address", ""),
            pid=int(info.get("pid", 0)), started_ms=int(info.get("started_ms", 0)),
            connections=int(info.get("connections", 0)), games=tuple(games)))
    return sorted(found, key=lambda node: node.node_id)
