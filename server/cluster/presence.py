"""Who is online, across nodes: each node keeps its own members, so a dead node's members
go with its heartbeat.

Every node has a hash ``tessera:{cluster}:online:{node}`` (a user's case-folded name ->
who they are) of the users with at least one connection there. A user is online if they
are in the hash of a *live* node (``live_nodes()``, from the node registry): when a node
dies, its members stop counting at once, without anyone deleting anything, and the node
that claims the dead one (``NodeRegistry.check_dead``) calls ``reap`` to learn which of them
are now offline everywhere (to announce ``player_offline``) and drop its hash.

``join`` and ``leave`` are one Lua script each, so when two nodes race (a user connecting
to one while leaving another) exactly one of them sees the user come online, or go.

``server.offers.PresenceStore`` is the interface; ``MemoryPresence`` there is a lone
server's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import cast

import redis.asyncio as aioredis

from server.offers import Online
from server.storage import name_key

from .keys import Keys

_JOIN = """
local before = redis.call('HEXISTS', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if before == 1 then return 0 end
for i = 2, #KEYS do
  if redis.call('HEXISTS', KEYS[i], ARGV[1]) == 1 then return 0 end
end
return 1
"""
_LEAVE = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
for i = 2, #KEYS do
  if redis.call('HEXISTS', KEYS[i], ARGV[1]) == 1 then return 0 end
end
return 1
"""
_REAP = """
local gone = {}
local members = redis.call('HGETALL', KEYS[1])
for m = 1, #members, 2 do
  local elsewhere = false
  for i = 2, #KEYS do
    if redis.call('HEXISTS', KEYS[i], members[m]) == 1 then elsewhere = true; break end
  end
  if not elsewhere then table.insert(gone, members[m + 1]) end
end
redis.call('DEL', KEYS[1])
return gone
"""


class RedisPresence:
    """``PresenceStore`` in Redis for the node ``node_id``; ``live_nodes()`` names the
    nodes alive now (this one included or not: it is added)."""

    def __init__(self, redis: aioredis.Redis, keys: Keys, node_id: str,
                 live_nodes: Callable[[], Iterable[str]]) -> None:
        self.redis = redis
        self.keys = keys
        self.node_id = node_id
        self._live_nodes = live_nodes
        self._join = redis.register_script(_JOIN)
        self._leave = redis.register_script(_LEAVE)
        self._reap = redis.register_script(_REAP)

    def _others(self) -> list[str]:
        return sorted(set(self._live_nodes()) - {self.node_id})

    async def join(self, user: Online) -> bool:
        others = [self.keys.online(node) for node in self._others()]
        return bool(await self._join(keys=[self.keys.online(self.node_id), *others],
                                     args=[name_key(user.name), user.pack()]))

    async def leave(self, user: Online) -> bool:
        others = [self.keys.online(node) for node in self._others()]
        return bool(await self._leave(keys=[self.keys.online(self.node_id), *others],
                                      args=[name_key(user.name)]))

    async def find(self, name: str) -> Online | None:
        return (await self.find_all([name]))[0]

    async def find_all(self, names: Sequence[str]) -> list[Online | None]:
        """One HMGET a node (one command on one node; a pipeline over several)."""
        nodes = sorted({self.node_id, *self._others()})
        fields = [name_key(name) for name in names]
        if len(nodes) == 1:  # a pipeline of one costs twice a command
            by_node = [await self.redis.hmget(self.keys.online(self.node_id), fields)]
        else:
            async with self.redis.pipeline(transaction=False) as pipe:
                for node in nodes:
                    pipe.hmget(self.keys.online(node), fields)
                by_node = await pipe.execute()
        found: list[Online | None] = []
        for index in range(len(names)):
            records = [records[index] for records in by_node]
            on = tuple(node for node, record in zip(nodes, records, strict=True) if record)
            record = next((r for r in records if r), None)
            found.append(None if record is None else Online.unpack(cast(bytes, record), on))
        return found

    async def everyone(self) -> list[Online]:
        nodes = sorted({self.node_id, *self._others()})
        async with self.redis.pipeline(transaction=False) as pipe:
            for node in nodes:
                pipe.hgetall(self.keys.online(node))
            hashes = await pipe.execute()
        found: dict[bytes, Online] = {}
        for node, members in zip(nodes, hashes, strict=True):
            for key, record in members.items():
                user = Online.unpack(record)
                known = found.get(key)
                nodes_on = (*known.nodes, node) if known else (node,)
                since = min(user.since_ms, known.since_ms) if known else user.since_ms
                found[key] = Online(user.user_id, user.name, user.kind, nodes_on, since)
        return sorted(found.values(), key=lambda user: (user.since_ms, name_key(user.name)))

    async def reap(self, dead_node: str) -> list[Online]:
        """Forget a dead node's members; those now offline everywhere (announce them)."""
        survivors = sorted({self.node_id, *self._others()} - {dead_node})
        others = [self.keys.online(node) for node in survivors]
        gone = await self._reap(keys=[self.keys.online(dead_node), *others])
        return [Online.unpack(record) for record in gone]
