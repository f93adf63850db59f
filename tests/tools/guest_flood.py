"""Guest logins by the hundred thousand, and what they leave behind:
``python -m tests.tools.guest_flood [--count N] [--from many|one|both] [--json]``.

Starts the server as shipped (``python -m server serve`` on a fresh SQLite file, default
settings), then for each case connects ``--count`` times, says ``hello`` and asks for a
``guest``, and disconnects, ``--concurrency`` at a time:

``many``
    each connection from an address of its own in 127.0.0.0/8 (the client socket is bound
    to 127.x.y.z before it connects), so the per-address guest limit never applies: every
    guest is made, as a flood from a botnet would make them;
``one``
    every connection from 127.0.0.1: past the per-address burst, refused with
    ``rate_limited``.

and reports, per case: what the requests got, the server's RSS (MiB) before, right after
the flood and after the sweeps, and the ``users`` rows. "After the sweeps" means: the
guests are swept by ``python -m server admin sweep-guests --older-than 0`` (the function
the server runs every ``--guest-sweep-every``; the flood's guests are all disconnected by
then), and the server's own sweep of idle rate-limit buckets has run twice (every 60 s,
followed by handing the free memory back to the system; the tool waits ``--settle``
seconds, 130 by default, sampling the RSS every 10 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import websockets

import protocol as p
from clients.bench import Proc, raise_fd_limit, start

HELLO = p.encode(p.Hello(id=1, version=p.PROTOCOL_VERSION, client="guest-flood"))
GUEST = p.encode(p.Guest(id=2))


def address(i: int) -> str:
    """The i-th address of 127.0.0.0/8 after 127.0.255.255 (none ends in .0 or .255)."""
    return f"127.{1 + i // (254 * 256)}.{(i // 254) % 256}.{1 + i % 254}"


async def one_guest(url: str, source: str | None, got: Counter[str]) -> None:
    try:
        async with websockets.connect(
                url, max_size=p.MAX_SERVER_FRAME_BYTES, compression=None, open_timeout=60,
                local_addr=(source, 0) if source else None) as ws:
            await ws.send(HELLO)
            await ws.recv()
            await ws.send(GUEST)
            reply = p.decode_server(await ws.recv(decode=False))
    except Exception as exc:
        got[f"failed: {type(exc).__name__}"] += 1
        return
    got["authed" if isinstance(reply, p.Authed)
        else getattr(reply, "code", type(reply).__name__)] += 1


async def flood(url: str, count: int, many: bool, concurrency: int, first: int = 0
                ) -> tuple[Counter[str], float]:
    got: Counter[str] = Counter()
    next_index = iter(range(first, first + count))

    async def worker() -> None:
        for i in next_index:
            await one_guest(url, address(i) if many else "127.0.0.1", got)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return got, time.perf_counter() - started


def users(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT kind, count(*) FROM users GROUP BY kind").fetchall())


def run_case(case: str, count: int, concurrency: int, settle: float, rounds: int,
             workdir: Path) -> dict[str, Any]:
    db = workdir / f"{case}.db"
    db_url = f"sqlite+aiosqlite:///{db}"
    server: Proc = start(["-m", "server", "serve", "--port", "0", "--db", db_url,
                          "--ready-file", str(workdir / f"{case}.port"),
                          "--log-level", "warning"],
                         workdir / f"{case}.port", workdir / f"{case}.log")
    try:
        url = f"ws://127.0.0.1:{server.port}/ws"
        time.sleep(1.0)
        started = round(server.rss_mb(), 1)
        done = []
        for round_ in range(rounds):  # each round from addresses of its own
            rss_before = server.rss_mb()
            got, seconds = asyncio.run(flood(url, count, case == "many", concurrency,
                                             first=round_ * count))
            rss_flood = server.rss_mb()
            rows_flood = users(db)
            swept = subprocess.run([sys.executable, "-m", "server", "admin", "sweep-guests",
                                    "--older-than", "0", "--db", db_url],
                                   capture_output=True, text=True, check=True, timeout=600)
            timeline = []  # RSS every 10 s after the guest sweep: the server's sweeps run
            for _ in range(int(settle // 10)):
                time.sleep(10)
                timeline.append(round(server.rss_mb(), 1))
            done.append({
                "logins": count, "seconds": round(seconds, 1),
                "per_s": round(count / seconds), "replies": dict(got),
                "rss_mib": {"before": round(rss_before, 1), "after_flood": round(rss_flood, 1),
                            "after_sweeps": round(server.rss_mb(), 1),
                            "every_10_s_after_the_guest_sweep": timeline},
                "users": {"after_flood": rows_flood, "after_sweep": users(db)},
                "sweep": swept.stdout.strip(),
            })
        return {"case": case, "rss_mib_at_start": started, "rounds": done}
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.tools.guest_flood",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100_000, help="guest logins per case")
    parser.add_argument("--from", dest="source", choices=["many", "one", "both"],
                        default="both", help="addresses: one each, or all from 127.0.0.1")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--settle", type=float, default=130.0,
                        help="seconds to wait after the guest sweep: the server's sweep of "
                             "idle buckets runs every 60 s and drops a bucket a minute after "
                             "its last use, so two of its runs")
    parser.add_argument("--rounds", type=int, default=1,
                        help="floods one after the other on the same server")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    raise_fd_limit()
    cases = ["many", "one"] if args.source == "both" else [args.source]
    results = []
    with tempfile.TemporaryDirectory(prefix="tessera-guest-flood-") as scratch:
        for case in cases:
            result = run_case(case, args.count, args.concurrency, args.settle, args.rounds,
                              Path(scratch))
            results.append(result)
            if not args.json:
                for n, one in enumerate(result["rounds"], 1):
                    print(f"{case} #{n}: {one['logins']} logins in {one['seconds']} s "
                          f"({one['per_s']}/s): {one['replies']}; RSS MiB {one['rss_mib']}; "
                          f"users {one['users']}; {one['sweep']}", flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
