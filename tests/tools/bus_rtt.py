"""The bus's request round trip: ``python -m tests.tools.bus_rtt [--url URL] [--requests N]``.

Node ``a`` sends ``--requests`` requests, one at a time, to node ``b``, which answers each
with its body (a 30-byte ``move`` frame, as a forwarded client request would be): once with
both nodes in this process (one event loop), once with ``b`` in a child process of its own.
Prints, per setting, the median and 99th percentile of request -> reply in milliseconds, as
one JSON line. Everything lives under a fresh cluster name and is gone when it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

import protocol as p
from server.cluster.bus import Bus
from server.cluster.keys import Keys

DEFAULT_URL = os.environ.get("TESSERA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
FRAME = p.encode(p.Move(id=7, game_id="k3v9q2x7ma", ply=3, move="c3"))


async def _echo(body: Any, _sender: str) -> Any:
    return body


async def _timed(asker: Bus, requests: int) -> list[float]:
    for _ in range(min(50, requests)):  # warm up: pools, script caches, the child's loop
        await asker.request("b", "echo", FRAME)
    rtts: list[float] = []
    for _ in range(requests):
        start = time.perf_counter()
        reply = await asker.request("b", "echo", FRAME)
        rtts.append(time.perf_counter() - start)
        assert reply == FRAME
    return rtts


def _figures(rtts: list[float]) -> dict[str, float]:
    ms = sorted(1000 * rtt for rtt in rtts)
    return {"p50_ms": round(statistics.median(ms), 3),
            "p99_ms": round(ms[min(len(ms) - 1, int(0.99 * len(ms)))], 3),
            "requests": len(ms)}


async def measure(url: str, requests: int) -> dict[str, dict[str, float]]:
    """Both settings' figures (one process, two processes)."""
    keys = Keys(f"rtt-{uuid.uuid4().hex[:10]}")
    results: dict[str, dict[str, float]] = {}
    async with Bus(url, keys, "a") as asker:
        await asker.wait_connected(5)
        async with Bus(url, keys, "b") as server:
            server.serve("echo", _echo)
            await server.wait_connected(5)
            results["one_process"] = _figures(await _timed(asker, requests))
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.tools.bus_rtt", "--serve", "--url", url,
             "--cluster", keys.cluster], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            assert child.stdout is not None
            line = await asyncio.to_thread(child.stdout.readline)
            assert line.strip() == b"ready", line
            results["two_processes"] = _figures(await _timed(asker, requests))
        finally:
            assert child.stdin is not None
            child.stdin.close()
            child.wait(10)
    return results


async def serve(url: str, cluster: str) -> None:
    """Node ``b`` in a process of its own: answer ``echo`` until stdin closes."""
    async with Bus(url, Keys(cluster), "b") as server:
        server.serve("echo", _echo)
        await server.wait_connected(5)
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.read)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cluster", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(serve(args.url, args.cluster))
        return
    print(json.dumps(asyncio.run(measure(args.url, args.requests))))


if __name__ == "__main__":
    main()
