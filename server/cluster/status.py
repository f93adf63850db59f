"""``tessera cluster status --cluster URL``: the nodes, their games and last heartbeats."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import textwrap
from dataclasses import asdict
from datetime import UTC, datetime

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from .keys import DEFAULT_CLUSTER_NAME, Keys
from .nodes import NodeInfo, cluster_status


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags (``server/cli.py`` builds the parser)."""
    parser.add_argument("--cluster", required=True, metavar="URL",
                        help="the cluster's Redis, e.g. redis://127.0.0.1:6379/0")
    parser.add_argument("--cluster-name", default=DEFAULT_CLUSTER_NAME,
                        help=f"the cluster's name in Redis (default {DEFAULT_CLUSTER_NAME})")
    parser.add_argument("--json", action="store_true", help="one JSON object per node")


def run(args: argparse.Namespace) -> int:
    """Print the cluster's status; 1 if Redis cannot be reached."""
    try:
        keys = Keys(args.cluster_name)
    except ValueError as exc:
        print(f"tessera: {exc}", file=sys.stderr)
        return 2
    try:
        nodes = asyncio.run(_read(args.cluster, keys))
    except (RedisError, OSError, ValueError) as exc:
        print(f"tessera: cannot read the cluster at {args.cluster}: {exc}", file=sys.stderr)
        return 1
    if args.json:
        for node in nodes:
            print(json.dumps(asdict(node), separators=(",", ":")))
    else:
        print(format_status(keys.cluster, nodes))
    return 0


async def _read(url: str, keys: Keys) -> list[NodeInfo]:
    client = aioredis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
    try:
        return await cluster_status(client, keys)
    finally:
        await client.aclose()


def format_status(cluster: str, nodes: list[NodeInfo]) -> str:
    """The table an operator reads: one line per node, then the games it holds."""
    alive = sum(node.alive for node in nodes)
    lines = [f"cluster {cluster}: {alive} node{'s' * (alive != 1)} alive, "
             f"{len(nodes) - alive} dead"]
    if not nodes:
        return lines[0]
    header = ("node", "state", "address", "pid", "started (UTC)", "last heartbeat",
              "connections", "games")
    rows = [(node.node_id, "alive" if node.alive else "DEAD", node.address or "-",
             str(node.pid or "-"), _moment(node.started_ms), f"{node.age_ms / 1000:.1f} s ago",
             str(node.connections), str(len(node.games))) for node in nodes]
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    lines.append("  ".join(title.ljust(width) for title, width in zip(header, widths,
                                                                      strict=True)).rstrip())
    for node, row in zip(nodes, rows, strict=True):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths,
                                                                        strict=True)).rstrip())
        if node.games:
            lines.extend(textwrap.wrap(" ".join(node.games), width=96,
                                       initial_indent="    games: ",
                                       subsequent_indent="           "))
    return "\n".join(lines)


def _moment(ms: int) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
