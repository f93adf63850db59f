"""The node registry: which nodes are alive, what they hold, and which died.

Every node beats once a ``interval_s``: one Lua script writes its entry in the sorted set
``tessera:{cluster}:nodes`` (node id -> the heartbeat's time, read from Redis's own clock
so that nodes on machines whose clocks differ agree), its description (a hash: id,
incarnation, address, pid, start, connections, how many games, its interval and dead-after
settings, the channel it listens on) and the set of games it holds leases on (written
only when it changed, and every ``REWRITE_EVERY`` beats: a beat stays a few small writes
however many games the node holds, so beats can be frequent).

A node is dead when either:

- its heartbeat is older than its ``dead_after_s`` (the machine is gone, cut off, or the
  process is paused: nothing else can tell those apart from a slow node), or
- **its process is gone**: it named a ``channel`` (its bus's node channel), nobody listens
  on that channel (``PUBSUB NUMSUB``: Redis drops a subscription the moment the process's
  connection closes, which the kernel does as soon as a process dies, even by SIGKILL) and
  it has missed a beat (older than its ``interval_s``). A node that is only slow keeps its
  connection, so it is not declared dead early; one whose link to Redis broke misses its
  beats as well, and is as good as dead to the cluster (its games may be taken over: the
  fencing epoch in PostgreSQL refuses its late writes, docs/SCALING.md section 4).

A dead node's entry stays listed (as dead) until ``forget_after_s``, so an operator sees
what died and what it held.

Every live node's heartbeat task also looks for dead nodes (every ``check_every_s``, more
often than it beats: a look costs a few reads) and calls ``on_dead(node_id)`` for each one
it is the first to claim (``claim_dead``: one Lua script, so exactly one node cleans up
after a dead one, e.g. its members' presence). A node that comes back under the same id
beats again and is alive again: the claim is forgotten.

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

from server.tasks import checkpoint, stop

from .keys import Keys, as_str, check_name

log = logging.getLogger(__name__)

REWRITE_EVERY = 20  # beats: the set of games is written again at least this often

HEARTBEAT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('HSET', KEYS[2], 'node_id', ARGV[1], 'incarnation', ARGV[2], 'address', ARGV[3],
           'pid', ARGV[4], 'started_ms', ARGV[5], 'connections', ARGV[6],
           'dead_after_ms', ARGV[7], 'heartbeat_ms', now, 'interval_ms', ARGV[9],
           'channel', ARGV[10])
redis.call('HDEL', KEYS[2], 'claimed_by')
if ARGV[11] == '1' then
  redis.call('HSET', KEYS[2], 'games', #ARGV - 11)
  redis.call('DEL', KEYS[3])
  for i = 12, #ARGV, 1000 do
    redis.call('SADD', KEYS[3], unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
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
    listening: bool = True  # someone listens on the channel it named (True if it named none)

    @property
    def owner(self) -> str:
        """Its lease owner value (``leases.owner_value``): ``node_id/incarnation``."""
        return f"{self.node_id}/{self.incarnation}"


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
        check_every_s: float | None = None,
        channel: str = "",
    ) -> None:
        """``report()`` gives (the games this node holds, its connections) for each
        heartbeat; ``on_dead(node_id)`` is called for each dead node this one claims.
        ``channel``: the channel this node's process listens on for as long as it lives
        (its bus's node channel), so that the others see at once when it is gone (see the
        module docstring); none: dead only by ``dead_after_s``. ``check_every_s``: how
        often to look for dead nodes (default: half of ``interval_s``)."""
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
        self.check_every_s = interval_s / 2 if check_every_s is None else check_every_s
        self.channel = channel
        self._report = report or (lambda: ((), 0))
        self._on_dead = on_dead
        self._heartbeat = redis.register_script(HEARTBEAT)
        self._claim = redis.register_script(CLAIM)
        self._forget = redis.register_script(FORGET)
        self._task: asyncio.Task[None] | None = None
        self.failures = 0  # heartbeats that could not reach Redis
        self._written: frozenset[str] | None = None  # the games the last beats wrote
        self._beats = 0

    async def beat(self) -> int:
        """One heartbeat now; Redis's time of it (ms). Raises RedisError if unreachable.

        The set of games is written only when it changed since the beat that last wrote
        it, and every ``REWRITE_EVERY`` beats (a Redis restarted between two beats lost
        it): a beat is then a few small writes whatever the node holds."""
        games, connections = self._report()
        held = frozenset(games)
        write = held != self._written or self._beats % REWRITE_EVERY == 0
        self._written = None  # until this beat is known to have landed
        stamp = int(await self._heartbeat(
            keys=[self.keys.nodes, self.keys.node(self.node_id),
                  self.keys.node_games(self.node_id)],
            args=[self.node_id, self.incarnation, self.address, os.getpid(),
                  self.started_ms, connections, int(self.dead_after_s * 1000),
                  int(self.forget_after_s * 1000), int(self.interval_s * 1000),
                  self.channel, int(write), *(held if write else ())]))
        self._written = held
        self._beats += 1
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
        """Beat every ``interval_s`` and look for dead nodes every ``check_every_s``,
        until ``close``."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="tessera-heartbeat")

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_beat = loop.time()
        while True:
            checkpoint()
            try:
                if loop.time() >= next_beat:
                    next_beat = loop.time() + self.interval_s
                    await self.beat()
                    self.failures = 0
                await self.check_dead()
            except RedisError as exc:
                self.failures += 1
                log.warning("nodes: heartbeat failed: %s", exc)
            except Exception:
                log.exception("nodes: heartbeat round failed")
            await asyncio.sleep(max(0.0, min(self.check_every_s, next_beat - loop.time())))

    async def close(self, *, leave: bool = True) -> None:
        """Stop beating; with ``leave`` (a clean stop) remove this node's entry."""
        if self._task is not None:
            await stop([self._task])
            self._task = None
        if leave:
            with contextlib.suppress(RedisError):
                await self.redis.zrem(self.keys.nodes, self.node_id)
                await self.redis.delete(self.keys.node(self.node_id),
                                        self.keys.node_games(self.node_id))


async def cluster_status(redis: aioredis.Redis, keys: Keys, *, with_games: bool = True
                         ) -> list[NodeInfo]:
    """Every node the registry knows, by id: alive or dead by its own settings against
    Redis's clock now (the module docstring), with its description and (``with_games``)
    its games."""
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
    infos = [{as_str(k): as_str(v) for k, v in replies[index * (2 if with_games else 1)].items()}
             for index in range(len(beats))]
    channels = sorted({info["channel"] for info in infos if info.get("channel")})
    listeners = ({as_str(channel): int(count) for channel, count in
                  await redis.pubsub_numsub(*channels)}
                 if channels else {})
    found = []
    for index, (member, score) in enumerate(beats):
        info = infos[index]
        games = sorted(as_str(g) for g in replies[index * 2 + 1]) if with_games else []
        heartbeat = int(score)
        age = max(0, now - heartbeat)
        channel = info.get("channel", "")
        listening = not channel or listeners.get(channel, 0) > 0
        gone = not listening and age > int(info.get("interval_ms", 1000))
        found.append(NodeInfo(
            node_id=as_str(member),
            alive=age <= int(info.get("dead_after_ms", 5000)) and not gone,
            heartbeat_ms=heartbeat, age_ms=age,
            incarnation=info.get("incarnation", ""), address=info.get("address", ""),
            pid=int(info.get("pid", 0)), started_ms=int(info.get("started_ms", 0)),
            connections=int(info.get("connections", 0)), games=tuple(games),
            listening=listening))
    return sorted(found, key=lambda node: node.node_id)
