"""Idle connections from one host against a server as shipped:
``python -m tests.tools.conn_flood [--connections N] [--raw N]``.

Starts ``python -m server serve`` on a fresh SQLite file, then from this one address opens
N websocket connections that never say ``hello`` and ``--raw`` plain TCP connections that
never send a byte, all at once, while timing ``GET /healthz`` every 50 ms. Prints how the
upgrades were answered (101, 429, 503, failures), how the server closed the websockets it
admitted (close codes, after its hello deadline), the /healthz figures, the server's
counters (refused, handshakes cut, accept failures) and its RSS before, at the peak and
after. The figures of issue 16 item 2 (8,000 idle websockets never closed, 20,000 from one
host exhausting the files) are the ones to compare with.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import websockets

REPO = Path(__file__).resolve().parents[2]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def http_get(port: int, path: str) -> tuple[int, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        response = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    head, _, body = response.decode().partition("\r\n\r\n")
    return int(head.split()[1]), body


async def flood(port: int, pid: int, connections: int, raw: int) -> dict[str, object]:
    url = f"ws://127.0.0.1:{port}/ws"
    before = rss_mib(pid)
    peak = before
    health: list[float] = []
    health_failures = 0
    stop = asyncio.Event()

    async def probe() -> None:
        nonlocal peak, health_failures
        while not stop.is_set():
            started = time.perf_counter()
            try:
                status, _ = await http_get(port, "/healthz")
                if status != 200:
                    health_failures += 1
                else:
                    health.append(time.perf_counter() - started)
            except (OSError, TimeoutError, ValueError, IndexError):
                health_failures += 1
            peak = max(peak, rss_mib(pid))
            await asyncio.sleep(0.05)

    upgrades: Counter[str] = Counter()
    closes: Counter[str] = Counter()

    async def one() -> None:
        try:
            ws = await websockets.connect(url, open_timeout=30, ping_interval=None)
        except websockets.InvalidStatus as e:
            upgrades[str(e.response.status_code)] += 1
            return
        except (OSError, TimeoutError, websockets.WebSocketException) as e:
            upgrades[type(e).__name__] += 1
            return
        upgrades["101"] += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ws.wait_closed(), 60)
        closes[str(ws.close_code)] += 1

    sockets = []
    prober = asyncio.create_task(probe())
    started = time.monotonic()
    for _ in range(raw):
        with contextlib.suppress(OSError):
            s = socket.socket()
            s.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                s.connect(("127.0.0.1", port))
            sockets.append(s)
    await asyncio.gather(*(one() for _ in range(connections)))
    took = time.monotonic() - started
    for s in sockets:
        s.close()
    await asyncio.sleep(1)
    stop.set()
    await prober
    _, metrics = await http_get(port, "/metrics")
    counters = {line.split()[0]: float(line.split()[1]) for line in metrics.splitlines()
                if line.startswith(("tessera_connections_refused_total",
                                    "tessera_handshakes_cut_total",
                                    "tessera_accept_failures_total"))}
    health.sort()
    return {
        "websockets": connections, "raw_sockets": raw, "seconds": round(took, 1),
        "upgrades": dict(upgrades), "closed_by_server": dict(closes),
        "healthz": {"answered": len(health), "failed": health_failures,
                    "p50_ms": round(statistics.median(health) * 1000, 2) if health else None,
                    "max_ms": round(health[-1] * 1000, 2) if health else None},
        "server_counters": counters,
        "rss_mib": {"before": round(before, 1), "peak": round(peak, 1),
                    "after": round(rss_mib(pid), 1)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--raw", type=int, default=2000)
    parser.add_argument("--serve-arg", action="append", default=[],
                        help="an extra argument of serve (repeatable)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ready = Path(tmp) / "ready"
        log = open(Path(tmp) / "server.log", "wb")  # noqa: SIM115 - closed below
        proc = subprocess.Popen(
            [sys.executable, "-m", "server", "serve", "--port", "0", "--db",
             f"sqlite+aiosqlite:///{tmp}/flood.db", "--ready-file", str(ready),
             "--log-level", "warning", *args.serve_arg], cwd=REPO, stdout=log,
            stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while not (ready.exists() and ready.read_text().endswith("\n")):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the server did not start")
                time.sleep(0.05)
            port = int(ready.read_text())
            result = asyncio.run(flood(port, proc.pid, args.connections, args.raw))
        finally:
            proc.terminate()
            proc.wait(20)
            log.close()
        result["log_lines"] = len((Path(tmp) / "server.log").read_text().splitlines())
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
