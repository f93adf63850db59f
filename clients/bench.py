"""Load benchmark of a real server: ``tessera bench --games K --seconds T [--json]``.

Three processes, all on this machine's loopback:

1. the server, started as shipped (``python -m server serve`` on a fresh SQLite file with
   ``synchronous=FULL``);
2. a load generator: K concurrent games between pairs of clients that answer at once with
   a random legal move, cycling through all four games, for T seconds;
3. for the ceiling, the same load generator shape against a bare websockets + msgpack echo
   server (each client sends a request and waits for its reply, in a loop).

Moves acknowledged by the server are recorded by the load generator and compared with the
moves found in the database afterwards (``lost`` = acknowledged but not stored). Latency is
from a move's send until the opponent has the ``moved`` event. ``--idle C`` instead holds C
idle authenticated connections and reports the server's memory per connection.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import websockets

import engine
import protocol as p

from .connection import Connection

GAMES: list[tuple[str, dict[str, Any]]] = [
    ("hadron", {"size": 5}),
    ("xodd", {"size": 9}),
    ("yodd", {"size": 6}),
    ("hexifact", {"board": "hex3-4"}),
]
CLOCK = p.Fischer(base_ms=600_000, increment_ms=5_000)
CONNECT_CONCURRENCY = 64


def raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# -- process helpers ----------------------------------------------------------------------------
@dataclass
class Proc:
    popen: subprocess.Popen[bytes]
    port: int

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.popen.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(30)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        return self.popen.returncode


def start(args: list[str], ready: Path, log: Path) -> Proc:
    """Start ``python ARGS`` and wait until it writes its port to ``ready``."""
    with log.open("wb") as out:
        popen = subprocess.Popen([sys.executable, *args], stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if ready.exists() and ready.read_text().strip():
            return Proc(popen, int(ready.read_text()))
        if popen.poll() is not None:
            raise RuntimeError(f"{args} exited: {log.read_text()[-2000:]}")
        time.sleep(0.05)
    popen.kill()
    raise RuntimeError(f"{args} did not start in time")


# -- the load generator ---------------------------------------------------------------------------
@dataclass
class Stats:
    acked: list[tuple[str, int]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    error_codes: dict[str, int] = field(default_factory=dict)
    games: int = 0
    sent: dict[tuple[str, int], float] = field(default_factory=dict)


class Player:
    """One bot client: answers at once with a uniformly random legal move."""

    def __init__(self, conn: Connection, name: str, stats: Stats, rng: random.Random) -> None:
        self.conn = conn
        self.name = name
        self.stats = stats
        self.rng = rng
        self.state: engine.State | None = None
        self.seat = 0
        self.game_id = ""
        self.game_over = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        while True:
            event = await self.conn.next_event()
            if isinstance(event, p.GameStarted):
                snap = event.snapshot
                self.game_id = snap.game_id
                self.state = engine.new_game(snap.game, **snap.options)
                self.seat = 0 if snap.players[0].name == self.name else 1
                self.game_over.clear()
            elif isinstance(event, p.Moved) and self.state is not None:
                if event.by != self.seat:
                    sent = self.stats.sent.pop((event.game_id, event.ply), None)
                    if sent is not None:
                        self.stats.latencies_ms.append((time.perf_counter() - sent) * 1000)
                self.state = self.state.play(event.move)
            elif isinstance(event, p.GameOver):
                self.state = None
                self.game_over.set()
                continue
            else:
                continue
            state = self.state
            if state is not None and not state.is_over and state.to_move == self.seat \
                    and not stop.is_set():
                move = state.random_move(self.rng).text
                key = (self.game_id, state.ply)
                self.stats.sent[key] = time.perf_counter()
                future = await self.conn.send(p.Move(id=self.conn.pending.next_id(),
                                                     game_id=self.game_id, ply=state.ply,
                                                     move=move))
                future.add_done_callback(functools.partial(self._acked, key=key))

    def _acked(self, future: asyncio.Future[p.ServerMessage], *, key: tuple[str, int]
               ) -> None:
        if future.cancelled() or future.exception() is not None:
            self.stats.errors += 1
            return
        reply = future.result()
        if isinstance(reply, p.MoveAck):
            self.stats.acked.append(key)
        else:
            self.stats.errors += 1
            code = getattr(reply, "code", "?")
            self.stats.error_codes[code] = self.stats.error_codes.get(code, 0) + 1


async def _connect_guests(url: str, n: int) -> list[tuple[Connection, str]]:
    sem = asyncio.Semaphore(CONNECT_CONCURRENCY)

    async def one() -> tuple[Connection, str]:
        async with sem:
            conn = await Connection.open(url, client="tessera-bench")
            authed = await conn.call(p.Guest)
            assert isinstance(authed, p.Authed)
            return conn, authed.user.name

    return list(await asyncio.gather(*(one() for _ in range(n))))


async def _pair_loop(i: int, a: Player, b: Player, stop: asyncio.Event, stats: Stats) -> None:
    """Keep one game going between ``a`` and ``b`` until ``stop``, swapping colours."""
    game, options = GAMES[i % len(GAMES)]
    n = 0
    while not stop.is_set():
        challenger, target = (a, b) if n % 2 == 0 else (b, a)
        created = await challenger.conn.call(p.Challenge, to=target.name, game=game,
                                             options=options, clock=CLOCK, color=0)
        assert isinstance(created, p.ChallengeCreated)
        await target.conn.call(p.AcceptChallenge, challenge_id=created.challenge_id)
        stats.games += 1
        n += 1
        stopped = asyncio.ensure_future(stop.wait())
        over = asyncio.ensure_future(a.game_over.wait())
        await asyncio.wait([stopped, over], return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        over.cancel()
        a.game_over.clear()


async def load_games(url: str, games: int, seconds: float, seed: int) -> dict[str, Any]:
    raise_fd_limit()
    clients = await _connect_guests(url, 2 * games)
    stats = Stats()
    stop = asyncio.Event()
    rng = random.Random(seed)
    players = [Player(c, name, stats, random.Random(rng.random())) for c, name in clients]
    # The challenged side's events include challenge_received: Player skips them.
    readers = [asyncio.create_task(pl.run(stop)) for pl in players]
    started = time.perf_counter()
    pairs = [asyncio.create_task(_pair_loop(i, players[2 * i], players[2 * i + 1], stop, stats))
             for i in range(games)]
    await asyncio.sleep(seconds)
    stop.set()
    elapsed = time.perf_counter() - started
    await asyncio.sleep(0.5)  # let in-flight acks arrive
    for task in [*pairs, *readers]:
        task.cancel()
    await asyncio.gather(*pairs, *readers, return_exceptions=True)
    await asyncio.gather(*(c.close() for c, _ in clients), return_exceptions=True)
    lat = sorted(stats.latencies_ms)
    return {
        "elapsed_s": elapsed,
        "games": stats.games,
        "moves": len(stats.acked),
        "acked": stats.acked,
        "errors": stats.errors,
        "error_codes": stats.error_codes,
        "p50_ms": _percentile(lat, 50),
        "p99_ms": _percentile(lat, 99),
    }


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    k = min(len(sorted_values) - 1, max(0, round(q / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


# -- the echo ceiling ---------------------------------------------------------------------------
async def echo_server(ready: str) -> None:
    """A bare websockets + msgpack server that answers each map with an ack-like map."""

    async def handler(ws: Any) -> None:
        async for frame in ws:
            request = msgpack.unpackb(frame, raw=False)
            await ws.send(msgpack.packb({"t": "move_ack", "id": request["id"],
                                         "game_id": request["game_id"], "ply": request["ply"],
                                         "seq": request["ply"] + 2}))

    raise_fd_limit()
    async with websockets.serve(handler, "127.0.0.1", 0, compression=None,
                                max_size=16 * 1024) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        Path(ready).write_text(f"{port}\n")
        await asyncio.Future()


async def load_echo(url: str, connections: int, seconds: float) -> dict[str, Any]:
    raise_fd_limit()
    sem = asyncio.Semaphore(CONNECT_CONCURRENCY)

    async def connect() -> Any:
        async with sem:
            return await websockets.connect(url, compression=None)

    sockets = await asyncio.gather(*(connect() for _ in range(connections)))
    count = 0
    stop = asyncio.Event()

    async def loop(ws: Any) -> None:
        nonlocal count
        n = 0
        while not stop.is_set():
            await ws.send(msgpack.packb({"t": "move", "id": n, "game_id": "abcdefghij",
                                         "ply": n, "move": "Bc3,Wd4"}))
            msgpack.unpackb(await ws.recv(), raw=False)
            count += 1
            n += 1

    tasks = [asyncio.create_task(loop(ws)) for ws in sockets]
    started = time.perf_counter()
    await asyncio.sleep(seconds)
    stop.set()
    done = count
    elapsed = time.perf_counter() - started
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return {"roundtrips": done, "elapsed_s": elapsed}


async def load_idle(url: str, connections: int, hold: float, ready: str) -> dict[str, Any]:
    raise_fd_limit()
    clients = await _connect_guests(url, connections)
    Path(ready).write_text("connected\n")
    await asyncio.sleep(hold)
    await asyncio.gather(*(c.close() for c, _ in clients), return_exceptions=True)
    return {"connections": len(clients)}


# -- orchestration -----------------------------------------------------------------------------
def _loadgen(mode: str, url: str, out: Path, **kw: Any) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "clients.bench", "_loadgen", mode, url, str(out),
            json.dumps(kw)]
    return subprocess.Popen(args)


def _stored_moves(db_url: str) -> set[tuple[str, int]]:
    dump = subprocess.run([sys.executable, "-m", "server", "dump", "--all", "--db", db_url],
                          capture_output=True, check=True)
    return {(record["game_id"], move["ply"])
            for record in map(json.loads, dump.stdout.splitlines())
            for move in record["moves"]}


def run_games_bench(games: int, seconds: float, seed: int, workdir: Path) -> dict[str, Any]:
    db_url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
    server = start(["-m", "server", "serve", "--port", "0", "--db", db_url,
                    "--ready-file", str(workdir / "server.port"), "--log-level", "warning"],
                   workdir / "server.port", workdir / "server.log")
    try:
        url = f"ws://127.0.0.1:{server.port}/ws"
        cpu0 = server.cpu_s()
        out = workdir / "games.json"
        gen = _loadgen("games", url, out, games=games, seconds=seconds, seed=seed)
        gen.wait()
        cpu = server.cpu_s() - cpu0
        rss = server.rss_mb()
        result = json.loads(out.read_text())
    finally:
        server.stop()
    stored = _stored_moves(db_url)
    acked = {(g, ply) for g, ply in result.pop("acked")}
    result.update(stored=len(stored), lost=len(acked - stored), acknowledged=len(acked),
                  server_cpu_s=round(cpu, 2), server_rss_mb=round(rss, 1))
    return result


def run_echo_bench(connections: int, seconds: float, workdir: Path) -> dict[str, Any]:
    echo = start(["-m", "clients.bench", "_echo", str(workdir / "echo.port")],
                 workdir / "echo.port", workdir / "echo.log")
    try:
        out = workdir / "echo.json"
        _loadgen("echo", f"ws://127.0.0.1:{echo.port}/", out, connections=connections,
                 seconds=seconds).wait()
        return dict(json.loads(out.read_text()))
    finally:
        echo.popen.kill()
        echo.popen.wait()


def run_idle_bench(connections: int, workdir: Path) -> dict[str, Any]:
    db_url = f"sqlite+aiosqlite:///{workdir / 'idle.db'}"
    server = start(["-m", "server", "serve", "--port", "0", "--db", db_url,
                    "--ready-file", str(workdir / "idle.port"), "--log-level", "warning"],
                   workdir / "idle.port", workdir / "idle.log")
    try:
        url = f"ws://127.0.0.1:{server.port}/ws"
        # warm up: one connection so lazily built structures exist before the baseline
        warm = workdir / "warm.ready"
        gen = _loadgen("idle", url, workdir / "warm.json", connections=5, hold=0.5,
                       ready=str(warm))
        gen.wait()
        time.sleep(0.5)
        before = server.rss_mb()
        ready = workdir / "idle.ready"
        gen = _loadgen("idle", url, workdir / "idle.json", connections=connections,
                       hold=600.0, ready=str(ready))
        deadline = time.monotonic() + 900
        while not ready.exists() and gen.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2.0)
        after = server.rss_mb()
        gen.kill()
        gen.wait()
    finally:
        server.stop()
    per_kib = (after - before) * 1024 / connections
    return {"idle_connections": connections, "server_rss_before_mb": round(before, 1),
            "server_rss_after_mb": round(after, 1), "kib_per_connection": round(per_kib, 1)}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "_loadgen":
        mode, url, out, kw = args[1], args[2], Path(args[3]), json.loads(args[4])
        runners: dict[str, Callable[..., Coroutine[Any, Any, dict[str, Any]]]] = {
            "games": load_games, "echo": load_echo, "idle": load_idle}
        result = asyncio.run(runners[mode](url, **kw))
        out.write_text(json.dumps(result))
        return 0
    if args and args[0] == "_echo":
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(echo_server(args[1]))
        return 0
    parser = argparse.ArgumentParser(prog="tessera bench", description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100, help="concurrent games (K)")
    parser.add_argument("--seconds", type=float, default=20.0, help="load duration (T)")
    parser.add_argument("--idle", type=int, default=0,
                        help="instead: hold this many idle authenticated connections")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    opts = parser.parse_args(args)
    with tempfile.TemporaryDirectory(prefix="tessera-bench-") as tmp:
        workdir = Path(tmp)
        if opts.idle:
            result = run_idle_bench(opts.idle, workdir)
        else:
            result = run_games_bench(opts.games, opts.seconds, opts.seed, workdir)
            echo = run_echo_bench(2 * opts.games, opts.seconds, workdir)
            mps = result["moves"] / result["elapsed_s"]
            eps = echo["roundtrips"] / echo["elapsed_s"]
            result.update(moves_per_s=round(mps, 1), echo_roundtrips_per_s=round(eps, 1),
                          ratio=round(mps / eps, 3) if eps else 0.0)
            result["p50_ms"] = round(result["p50_ms"], 2)
            result["p99_ms"] = round(result["p99_ms"], 2)
    if not opts.json:
        for key, value in result.items():
            print(f"{key:>24}: {value}")
    else:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

