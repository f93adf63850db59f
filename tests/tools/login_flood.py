"""Does the owner get in while strangers flood the password hashes?
``python -m tests.tools.login_flood [--seconds S] [--attackers N]``.

Starts the server as shipped (default settings, a fresh SQLite file); the owner registers
from 127.0.0.1 and logs out. Then ``--attackers`` tasks send logins for unknown names as
fast as they are answered, each from addresses of its own in 127.9.0.0/16 (a new address
every 25 attempts, so the per-address login limit does not stop them: the bounded hash
queue must), while the owner logs in from 127.0.0.1 once a second. Prints what the
attackers got, and the owner's outcomes and times (wall clock: a figure for this machine
and its load, not a guarantee).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import websockets
from websockets.asyncio.client import ClientConnection

import protocol as p
from clients.bench import start

PASSWORD = "correct horse battery"


async def connect_from(url: str, address: str) -> ClientConnection:
    ws = await websockets.connect(url, compression=None, max_size=p.MAX_SERVER_FRAME_BYTES,
                                  local_addr=(address, 0))
    await ws.send(p.encode(p.Hello(id=1, version=p.PROTOCOL_VERSION, client="login-flood")))
    await ws.recv()
    return ws


async def request(ws: ClientConnection, message: p.ClientMessage) -> str:
    await ws.send(p.encode(message))
    reply = p.decode_server(await ws.recv(decode=False))
    return str(getattr(reply, "code", type(reply).__name__))


async def attacker(url: str, k: int, stop: asyncio.Event, got: Counter[str]) -> None:
    for i in range(1_000_000):
        if stop.is_set():
            return
        ws = await connect_from(url, f"127.9.{k}.{1 + i % 250}")
        for j in range(25):
            if stop.is_set():
                break
            code = await request(ws, p.Login(id=10 + j, username=f"nobody{k}x{i}x{j}",
                                             password="guess"))
            got[code] += 1
            if code == "rate_limited":
                await asyncio.sleep(0.05)
        await ws.close()


async def run(url: str, seconds: float, attackers: int) -> None:
    owner_ws = await connect_from(url, "127.0.0.1")
    assert await request(owner_ws, p.Register(id=2, username="Owner", password=PASSWORD)
                         ) == "Authed"
    await request(owner_ws, p.Logout(id=3))
    stop = asyncio.Event()
    got: Counter[str] = Counter()
    tasks = [asyncio.create_task(attacker(url, k, stop, got)) for k in range(attackers)]
    await asyncio.sleep(3)  # the queue is full by now
    owner: list[tuple[str, float]] = []
    ends = time.monotonic() + seconds
    n = 100
    while time.monotonic() < ends:
        sent = time.perf_counter()
        code = await request(owner_ws, p.Login(id=n, username="Owner", password=PASSWORD))
        owner.append((code, time.perf_counter() - sent))
        if code == "Authed":
            await request(owner_ws, p.Logout(id=n + 1))
        n += 2
        await asyncio.sleep(1.0)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    admitted = [s for code, s in owner if code == "Authed"]
    print(f"attackers ({attackers}): {dict(got)}")
    print(f"owner: {len(owner)} logins, {len(admitted)} authed, refused "
          f"{dict(Counter(code for code, _ in owner if code != 'Authed'))}")
    if admitted:
        print(f"owner login: p50 {statistics.median(admitted) * 1000:.0f} ms, "
              f"max {max(admitted) * 1000:.0f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.tools.login_flood",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--attackers", type=int, default=48)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tessera-login-flood-") as scratch:
        workdir = Path(scratch)
        server = start(["-m", "server", "serve", "--port", "0", "--db",
                        f"sqlite+aiosqlite:///{workdir / 'flood.db'}", "--ready-file",
                        str(workdir / "port"), "--log-level", "warning"],
                       workdir / "port", workdir / "server.log")
        try:
            asyncio.run(run(f"ws://127.0.0.1:{server.port}/ws", args.seconds, args.attackers))
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
