"""``tessera cluster ...``: what an operator, a tool or a test reads of a cluster in Redis,
and the removal of a cluster name's keys.

    status     the nodes, their games and last heartbeats (the table: ``status.py``)
    owners     the node holding each given game's lease now, as one JSON object
    forget     delete every key of a cluster name (a tool's or a test's cluster, its nodes
               stopped); the name must be given, there is no default to forget by mistake
    redis-cpu  the Redis server's CPU seconds so far (``INFO cpu``: all its clients' work)

Each takes ``--cluster URL`` (the cluster's Redis) and all but ``redis-cpu`` a
``--cluster-name``; a name that cannot be one exits 2, a Redis that cannot be reached 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from .keys import DEFAULT_CLUSTER_NAME, Keys
from .leases import lease_owners
from .nodes import cluster_status
from .status import format_status

DELETE_BATCH = 500  # keys per SCAN step and per DEL


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands under ``tessera cluster`` (``server/cli.py`` builds the parser)."""
    status = commands.add_parser(
        "status", help="list the nodes, their games and their last heartbeat")
    _add_target(status)
    status.add_argument("--json", action="store_true", help="one JSON object per node")
    owners = commands.add_parser(
        "owners", help="the node holding each game's lease now, as a JSON object (null: "
                       "nobody holds it)")
    owners.add_argument("game_ids", nargs="+", metavar="GAME")
    _add_target(owners)
    forget = commands.add_parser(
        "forget", help="delete every key of a cluster name in Redis (stop its nodes first)")
    _add_target(forget, name_required=True)
    cpu = commands.add_parser(
        "redis-cpu", help="the Redis server's CPU seconds so far, from INFO cpu, as a JSON "
                          "object (on a shared Redis, all its clients' work)")
    _add_target(cpu, named=False)


def _add_target(parser: argparse.ArgumentParser, *, named: bool = True,
                name_required: bool = False) -> None:
    parser.add_argument("--cluster", required=True, metavar="URL",
                        help="the cluster's Redis, e.g. redis://127.0.0.1:6379/0")
    if named:
        parser.add_argument(
            "--cluster-name", required=name_required,
            default=None if name_required else DEFAULT_CLUSTER_NAME,
            help="the cluster's name in Redis" + (
                "" if name_required else f" (default {DEFAULT_CLUSTER_NAME})"))


def run(args: argparse.Namespace) -> int:
    """Run ``args.cluster_command`` and print what it found; 2 for a bad cluster name, 1 if
    Redis cannot be reached."""
    try:
        keys = Keys(getattr(args, "cluster_name", DEFAULT_CLUSTER_NAME))
    except ValueError as exc:
        print(f"tessera: {exc}", file=sys.stderr)
        return 2
    try:
        answer = asyncio.run(_answer(args, keys))
    except (RedisError, OSError, ValueError) as exc:
        print(f"tessera: cannot read the cluster at {args.cluster}: {exc}", file=sys.stderr)
        return 1
    if answer:  # status --json of a cluster without nodes prints nothing
        print(answer)
    return 0


async def _answer(args: argparse.Namespace, keys: Keys) -> str:
    redis = aioredis.Redis.from_url(args.cluster, socket_connect_timeout=5, socket_timeout=5)
    try:
        command = args.cluster_command
        if command == "status":
            nodes = await cluster_status(redis, keys)
            if args.json:
                return "\n".join(json.dumps(asdict(node), separators=(",", ":"))
                                 for node in nodes)
            return format_status(keys.cluster, nodes)
        if command == "owners":
            return json.dumps(await lease_owners(redis, keys, args.game_ids))
        if command == "forget":
            deleted = await forget_cluster(redis, keys)
            return f"cluster {keys.cluster}: {deleted} keys deleted"
        return json.dumps(await redis_cpu(redis))
    finally:
        await redis.aclose()


async def forget_cluster(redis: aioredis.Redis, keys: Keys) -> int:
    """Delete every key under the cluster's prefix; how many there were."""
    deleted = 0
    batch: list[bytes] = []
    async for key in redis.scan_iter(match=keys.prefix + "*", count=DELETE_BATCH):
        batch.append(key)
        if len(batch) == DELETE_BATCH:
            deleted += await redis.delete(*batch)
            batch.clear()
    if batch:
        deleted += await redis.delete(*batch)
    return deleted


async def redis_cpu(redis: aioredis.Redis) -> dict[str, float]:
    """The Redis server's CPU seconds so far, in user and system mode (``INFO cpu``)."""
    info = await redis.info("cpu")
    return {"used_cpu_user": float(info["used_cpu_user"]),
            "used_cpu_sys": float(info["used_cpu_sys"])}
