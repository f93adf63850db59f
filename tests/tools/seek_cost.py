"""What a seek costs as the lobby fills: ``python -m tests.tools.seek_cost [--open N ...]``.

Starts a server in this process on a fresh SQLite file (caps raised so that N seeks fit),
opens N seeks from guests (each with a clock of its own, so none pairs), then times, from a
client over loopback: a seek that pairs with nobody and its cancel (round trips), a seek
that pairs with the newest open seek (the game starts: a commit to the database), and
``lobby_subscribe`` (its reply's size too). Printed for each N, so that the figures at 10
and at 10,000 open seeks can be compared: pairing looks only at the seeks with the same
offer, so they should not differ beyond noise. The server shares this process with the
client: the figures are round trips, not the server's CPU alone. ``--lobby-only`` times
``Lobby.add_seek`` alone instead.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import protocol as p
from clients.connection import Connection
from server.app import running_server
from server.config import Settings
from server.offers import MemorySeeks, Seek, SeekCaps
from server.storage import sqlite_url

PER_GUEST = 1000  # welcome.limits.max_open_seeks allows at most this


def seek(k: int) -> dict[str, Any]:
    return {"game": "hadron", "options": {"size": 5},
            "clock": p.Fischer(base_ms=60_000 + 1000 * k, increment_ms=0)}


async def guest(url: str) -> Connection:
    conn = await Connection.open(url, client="seek-cost")
    await conn.call(p.Guest)
    return conn


async def fill(url: str, count: int) -> list[Connection]:
    """``count`` open seeks, ``PER_GUEST`` per guest, pipelined."""
    conns = []
    for first in range(0, count, PER_GUEST):
        conn = await guest(url)
        conns.append(conn)
        replies = [await conn.send(p.Seek(id=conn.pending.next_id(), **seek(k)))
                   for k in range(first, min(count, first + PER_GUEST))]
        for reply in replies:
            assert isinstance(await reply, p.SeekCreated)
    return conns


def ms(samples: list[float]) -> str:
    samples = sorted(samples)
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    return f"p50 {statistics.median(samples) * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms"


async def measure(open_seeks: int, rounds: int, workdir: Path) -> None:
    settings = Settings(host="127.0.0.1", port=0, db_url=sqlite_url(workdir / f"{open_seeks}.db"),
                        ping_interval=None, ping_timeout=None, max_open_seeks=PER_GUEST,
                        max_seeks_per_address=open_seeks + rounds + 10,
                        max_seeks=open_seeks + rounds + 10, conn_rate=100_000,
                        conn_burst=100_000, account_rate=100_000, account_burst=100_000,
                        max_games_per_user=100_000, address_guests_per_hour=0)
    async with running_server(settings) as running:
        url = f"ws://127.0.0.1:{running.port}/ws"
        conns = await fill(url, open_seeks)
        me = await guest(url)
        lone, paired = [], []
        for i in range(rounds):
            started = time.perf_counter()
            created = await me.call(p.Seek, **seek(50_000 + i))  # pairs with none
            assert isinstance(created, p.SeekCreated)
            await me.call(p.CancelSeek, seek_id=created.seek_id)
            lone.append((time.perf_counter() - started) / 2)
        for i in range(min(rounds, open_seeks // 2)):
            other = await guest(url)
            started = time.perf_counter()
            created = await other.call(p.Seek, **seek(open_seeks - 1 - i))  # the newest
            paired.append(time.perf_counter() - started)
            await other.close()
        started = time.perf_counter()
        looker = await Connection.open(url, client="seek-cost")
        reply = await looker.call(p.LobbySubscribe)
        subscribe_s = time.perf_counter() - started
        assert isinstance(reply, p.Lobby)
        started = time.perf_counter()
        await looker.call(p.LobbySubscribe)
        again_s = time.perf_counter() - started
        size = len(p.encode(reply))
        print(f"{open_seeks:>6} open seeks: seek+cancel (per request) {ms(lone)}; "
              f"seek that pairs {ms(paired) if paired else '-'}; lobby_subscribe "
              f"{subscribe_s * 1000:.1f} ms (connect included), {len(reply.seeks)} shown, "
              f"more_seeks {reply.more_seeks}, {size} bytes; again {again_s * 1000:.2f} ms "
              "(the page packed once)", flush=True)
        for conn in [*conns, me, looker]:
            await conn.close()


def lobby_alone(open_seeks: int, rounds: int) -> None:
    """``MemorySeeks.open`` alone, in this process: a seek that pairs with none, ``rounds``
    times, with ``open_seeks`` open (a lone server's seek store)."""

    async def run() -> list[float]:
        store = MemorySeeks()
        caps = SeekCaps(10**9, 10**9, 10**9)

        async def record(user_id: int, k: int) -> Seek:
            fields = seek(k)
            return Seek(p.OpenSeek(seek_id=await store.new_id(),
                                   user=p.User(name=f"user{user_id}", kind="guest"),
                                   game="hadron", options={"size": 5}, clock=fields["clock"]),
                        user_id, "local", 0)

        for k in range(open_seeks):
            await store.open(await record(1, k), caps)
        times = []
        for i in range(rounds):
            mine = await record(2, 50_000 + i)
            started = time.perf_counter()
            await store.open(mine, caps)
            times.append(time.perf_counter() - started)
            await store.cancel(mine.seek_id, 2)
        return times

    times = asyncio.run(run())
    print(f"{open_seeks:>6} open seeks: MemorySeeks.open p50 "
          f"{statistics.median(times) * 1e6:.1f} us", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--open", type=int, nargs="+", default=[10, 10_000])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--lobby-only", action="store_true",
                        help="time the in-memory seek store alone, without a server")
    args = parser.parse_args()
    if args.lobby_only:
        for n in args.open:
            lobby_alone(n, args.rounds)
        return
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.open:
            asyncio.run(measure(n, args.rounds, Path(tmp)))


if __name__ == "__main__":
    main()
