"""Load benchmark of a real server: ``tessera bench --games K --seconds T [--json]``.

All on this machine's loopback:

1. the server, started as shipped (``python -m server serve`` on a fresh SQLite file with
   ``synchronous=FULL``; with ``--db PG_URL``, on a PostgreSQL schema of the run's own,
   whose backends' CPU is counted with the server's);
2. the load generator, split over ``--procs`` processes (2 by default, so that it is not
   one Python process that runs out of CPU first): K concurrent games between pairs of
   clients that answer at once (or after ``--think-ms``) with a random legal move, cycling
   through all four games, for T seconds. The random games are drawn before the clock
   starts and the clients read and write plain msgpack maps, so the load generator's CPU
   goes to the wire, as the echo client's does;
3. for the ceiling, the same shape (as many connections, as many processes) against a bare
   websockets + msgpack echo server: each client sends a move-like map and waits for its
   reply, in a loop; half of T before the games and half after, and ``ratio`` is the
   moves per second over the echo round trips per second of both halves together.

The processes connect first, then start together; the server's CPU time is read over the
load window only. Moves acknowledged by the server are recorded by the load generator and
compared with the moves found in the database afterwards (``lost`` = acknowledged but not
stored). Latency is from a move's send until the opponent has the ``moved`` event; every
error reply, refused connection and dropped connection counts in ``errors``. ``--idle C``
instead holds C idle authenticated connections and reports the server's memory per
connection.

With ``--think-ms 0`` every game always has a move in flight, so the latency is K divided
by the throughput (Little's law): that run measures capacity (``moves_per_s``, ``ratio``).
Latency under a given load is measured with a think time; docs/PERFORMANCE.md has both.

``--rated`` plays rated games between registered players instead of casual games between
guests (the accounts are made before the clock starts): each game's end then also updates
both players' ratings in its transaction (docs/RATINGS.md compares the two).

``--nodes N`` runs the same load on a cluster of N nodes (players on nodes at random), then
on one process on SQLite, then on one process on the same PostgreSQL, all in one run: the
CPU per move of each (the cluster's: nodes, Redis and PostgreSQL backends; the PostgreSQL
process's: the process and its backends) and the share of the cluster's moves that crossed
nodes (played on a game another node owns: the nodes' ``tessera_cluster_forwarded_moves``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import websockets
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

import engine
import protocol as p

from .privatecluster import DEFAULT_DB, PrivateCluster, PrivateSchema, backends_cpu_s
from .stored import sqlite_file_url, stored_moves

# every game of the engine on its default board, the options spelled out
GAMES: list[tuple[str, dict[str, Any]]] = [
    (key, dict(game.normalize_options({}))) for key, game in engine.GAMES.items()]
CLOCK = p.Fischer(base_ms=600_000, increment_ms=5_000)
CONNECT_CONCURRENCY = 64
REGISTER_CONCURRENCY = 4  # per load generator
LOGIN_ATTEMPTS = 60  # a login refused with rate_limited is sent again after retry_after_ms
DEBUG_CONNECT = bool(os.environ.get("TESSERA_BENCH_DEBUG"))  # say why a connection failed


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
# One lean client per connection: a single task reads frames, decodes them with the protocol
# package and answers at once (or after a think time), like the echo client below; the moves
# are random legal moves drawn before the clock starts, so the load generator spends its CPU
# on the wire and not on the rules, and what is measured is the server.

def random_games(seed: int, per_kind: int) -> list[list[tuple[str, ...]]]:
    """``per_kind`` random playouts of each entry of GAMES: their canonical move texts."""
    rng = random.Random(seed)
    pool: list[list[tuple[str, ...]]] = []
    for key, options in GAMES:
        games = []
        for _ in range(per_kind):
            state = engine.new_game(key, **options)
            moves = []
            while not state.is_over:
                move = state.random_move(rng)
                state = state.play(move)
                moves.append(move.text)
            games.append(tuple(moves))
        pool.append(games)
    return pool


@dataclass
class Stats:
    acked: list[tuple[str, int]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    error_codes: dict[str, int] = field(default_factory=dict)
    games: int = 0
    sent: dict[tuple[str, int], float] = field(default_factory=dict)

    def error(self, code: str) -> None:
        self.errors += 1
        self.error_codes[code] = self.error_codes.get(code, 0) + 1


@dataclass
class Pair:
    """Two bots that play one game after another; ``a`` challenges, colours alternate."""

    index: int
    a: Bot
    b: Bot
    pool: list[tuple[str, ...]]
    rng: random.Random
    moves: tuple[str, ...] = ()
    played: int = 0


class Bot:
    """One connection of the load generator, playing the moves of its pair's game."""

    def __init__(self, ws: ClientConnection, name: str, stats: Stats, think_s: float,
                 rng: random.Random, rated: bool = False) -> None:
        self.ws = ws
        self.rated = rated
        self.name = name
        self.stats = stats
        self.think_s = think_s
        self.rng = rng
        self.pair: Pair | None = None
        self.game_id = ""
        self.seat = 0
        self.moves: tuple[str, ...] = ()  # of the game this bot is in
        self.next_id = 1
        self.challenge_id = 0  # the id of the last challenge sent
        self.stopping = False

    def request_id(self) -> int:
        self.next_id += 1
        return self.next_id

    async def run(self) -> None:
        """Read and answer frames until the connection closes."""
        try:
            async for frame in self.ws:
                assert isinstance(frame, bytes)
                await self.on(msgpack.unpackb(frame))
        except ConnectionClosed:
            if not self.stopping:
                self.stats.error("disconnected")

    async def on(self, message: dict[str, Any]) -> None:
        """Answer one server message (a plain map: the load generator speaks msgpack as the
        echo client does; the protocol's own checks are the test suite's business)."""
        pair = self.pair
        assert pair is not None
        stats = self.stats
        kind = message["t"]
        if kind == "moved":
            ply = message["ply"]
            if message["by"] != self.seat:
                sent = stats.sent.pop((message["game_id"], ply), None)
                if sent is not None:
                    stats.latencies_ms.append((time.perf_counter() - sent) * 1000)
            ply += 1
            if ply % 2 == self.seat and ply < len(self.moves):
                await self.move(ply)
        elif kind == "move_ack":
            stats.acked.append((message["game_id"], message["ply"]))
        elif kind == "game_started":
            self.game_id = message["game_id"]
            players = message["snapshot"]["players"]
            self.seat = 0 if players[0]["name"] == self.name else 1
            self.moves = pair.moves  # drawn by the challenger before it challenged
            if self is pair.a:
                stats.games += 1
            if self.seat == 0:
                await self.move(0)
        elif kind == "challenge_received":
            await self.send(p.AcceptChallenge(id=self.request_id(),
                                              challenge_id=message["challenge_id"]))
        elif kind == "game_over":
            if self is pair.a and not self.stopping:
                await self.challenge()
        elif kind == "error":
            if (message["code"] == "rate_limited" and message.get("id") == self.challenge_id
                    and not self.stopping):
                # the challenge met the account's request budget: ask again when told
                await asyncio.sleep((message.get("retry_after_ms") or 100) / 1000)
                pair.played -= 1
                await self.challenge()
                return
            stats.error(message["code"])

    async def move(self, ply: int) -> None:
        if self.stopping:
            return
        if self.think_s:
            await asyncio.sleep(self.rng.uniform(0.5, 1.5) * self.think_s)
            if self.stopping:
                return
        self.stats.sent[(self.game_id, ply)] = time.perf_counter()
        await self.send_frame(msgpack.packb({"t": "move", "id": self.request_id(),
                                             "game_id": self.game_id, "ply": ply,
                                             "move": self.moves[ply]}))

    async def challenge(self) -> None:
        """The next game of this pair: a game drawn from the pool, colours alternating."""
        pair = self.pair
        assert pair is not None and self is pair.a
        pair.moves = pair.rng.choice(pair.pool)
        key, options = GAMES[pair.index % len(GAMES)]
        self.challenge_id = self.request_id()
        await self.send(p.Challenge(id=self.challenge_id, to=pair.b.name, game=key,
                                    options=options, clock=CLOCK,
                                    color=1 if pair.played % 2 else 0,
                                    rated=True if self.rated else None))
        pair.played += 1

    async def send(self, message: p.ClientMessage) -> None:
        await self.send_frame(p.encode(message))

    async def send_frame(self, frame: bytes) -> None:
        try:
            await self.ws.send(frame)
        except ConnectionClosed:
            if not self.stopping:
                self.stats.error("disconnected")


async def _guest(url: str, name: str | None = None) -> tuple[ClientConnection, str]:
    """A connection logged in as a new guest (or, given a name, a new registered user),
    and the user's name."""
    ws = await websockets.connect(url, max_size=p.MAX_SERVER_FRAME_BYTES, compression=None,
                                  open_timeout=60)
    login: p.ClientMessage = (p.Guest(id=2) if name is None else
                              p.Register(id=2, username=name, password="bench-password"))
    try:
        await ws.send(p.encode(p.Hello(id=1, version=p.PROTOCOL_VERSION,
                                       client="tessera-bench")))
        p.decode_server(await ws.recv(decode=False))
        for _ in range(LOGIN_ATTEMPTS):
            await ws.send(p.encode(login))
            reply = p.decode_server(await ws.recv(decode=False))
            if not (isinstance(reply, p.ErrorReply) and reply.code == "rate_limited"):
                break
            # the server's password queue is full (registrations): wait as told, as a
            # patient client does, and ask again
            await asyncio.sleep((reply.retry_after_ms or 1000) / 1000)
        assert isinstance(reply, p.Authed), reply
        return ws, reply.user.name
    except BaseException:
        await ws.close()
        raise


async def _connect_guests(url: str, n: int, stats: Stats, rng: random.Random | None = None,
                          names: str | None = None) -> list[tuple[ClientConnection, str]]:
    """``n`` guests connected ``CONNECT_CONCURRENCY`` at a time; failures are counted.
    ``url`` may list a cluster's nodes, comma-separated: each guest goes to one at random,
    as a load balancer would place them. ``names``: register users named ``names`` + a
    number instead."""
    # a registration waits for a password hash (a few a second on 2 cores): few at once, or
    # the last ones queued would pass the server's login deadline
    sem = asyncio.Semaphore(CONNECT_CONCURRENCY if names is None else REGISTER_CONCURRENCY)
    urls = url.split(",")
    pick = rng or random.Random(0)

    async def one(index: int) -> tuple[ClientConnection, str] | None:
        async with sem:
            try:
                return await _guest(pick.choice(urls),
                                    None if names is None else f"{names}{index}")
            except Exception as exc:
                stats.error("connect_failed")
                if DEBUG_CONNECT:
                    print(f"connect failed: {exc!r}"[:300], file=sys.stderr)
                return None

    return [c for c in await asyncio.gather(*(one(i) for i in range(n))) if c is not None]


async def _start_together(ready: str, go: str) -> float:
    """Say this load generator is connected; wait for the common start time (from ``go``)."""
    Path(ready).write_text("connected\n")
    while not Path(go).exists() or not Path(go).read_text().strip():
        await asyncio.sleep(0.01)
    start = float(Path(go).read_text())
    await asyncio.sleep(max(0.0, start - time.time()))
    return time.perf_counter()


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def load_games(url: str, games: int, seconds: float, seed: int, think_ms: float,
                     ready: str, go: str, rated: bool = False) -> dict[str, Any]:
    """Play ``games`` concurrent games for ``seconds`` once told to start (``rated``:
    rated games between registered users)."""
    raise_fd_limit()
    stats = Stats()
    pool = random_games(seed, per_kind=32)
    rng = random.Random(seed)
    conns = await _connect_guests(url, 2 * games, stats, rng, f"b{seed}x" if rated else None)
    bots = [Bot(ws, name, stats, think_ms / 1000, random.Random(rng.random()), rated)
            for ws, name in conns]
    pairs = [Pair(i, bots[2 * i], bots[2 * i + 1], pool[i % len(GAMES)],
                  random.Random(rng.random())) for i in range(len(bots) // 2)]
    for pair in pairs:
        pair.a.pair = pair.b.pair = pair
    readers = [asyncio.create_task(bot.run()) for bot in bots if bot.pair is not None]
    started = await _start_together(ready, go)
    cpu0 = _cpu_s()
    await asyncio.gather(*(pair.a.challenge() for pair in pairs))
    await asyncio.sleep(max(0.0, started + seconds - time.perf_counter()))
    for bot in bots:
        bot.stopping = True
    elapsed = time.perf_counter() - started
    cpu = _cpu_s() - cpu0
    await asyncio.sleep(0.5)  # let in-flight acks arrive
    await asyncio.gather(*(ws.close() for ws, _ in conns), return_exceptions=True)
    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    return {
        "elapsed_s": elapsed,
        "games": stats.games,
        "acked": stats.acked,
        "errors": stats.errors,
        "error_codes": stats.error_codes,
        "latencies_ms": stats.latencies_ms,
        "cpu_s": cpu,
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


async def load_echo(url: str, connections: int, seconds: float, ready: str, go: str
                    ) -> dict[str, Any]:
    """Each connection sends a move-like map and waits for the reply, in a loop."""
    raise_fd_limit()
    sem = asyncio.Semaphore(CONNECT_CONCURRENCY)

    async def connect() -> Any:
        async with sem:
            return await websockets.connect(url, compression=None, open_timeout=60)

    sockets = await asyncio.gather(*(connect() for _ in range(connections)))
    count = 0
    stop = asyncio.Event()
    go_event = asyncio.Event()

    async def loop(ws: Any) -> None:
        nonlocal count
        n = 0
        await go_event.wait()
        while not stop.is_set():
            await ws.send(msgpack.packb({"t": "move", "id": n, "game_id": "abcdefghij",
                                         "ply": n, "move": "Bc3,Wd4"}))
            msgpack.unpackb(await ws.recv(), raw=False)
            count += 1
            n += 1

    tasks = [asyncio.create_task(loop(ws)) for ws in sockets]
    started = await _start_together(ready, go)
    cpu0 = _cpu_s()
    go_event.set()
    await asyncio.sleep(max(0.0, started + seconds - time.perf_counter()))
    stop.set()
    done = count
    elapsed = time.perf_counter() - started
    cpu = _cpu_s() - cpu0
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return {"roundtrips": done, "elapsed_s": elapsed, "cpu_s": cpu}


async def load_idle(url: str, connections: int, hold: float, ready: str) -> dict[str, Any]:
    raise_fd_limit()
    stats = Stats()
    clients = await _connect_guests(url, connections, stats)
    Path(ready).write_text("connected\n")
    await asyncio.sleep(hold)
    await asyncio.gather(*(ws.close() for ws, _ in clients), return_exceptions=True)
    return {"connections": len(clients), "errors": stats.errors}


# -- orchestration -----------------------------------------------------------------------------
def _loadgen(mode: str, url: str, out: Path, **kw: Any) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "clients.bench", "_loadgen", mode, url, str(out),
            json.dumps(kw)]
    return subprocess.Popen(args)


def _shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal shares (no empty ones)."""
    parts = max(1, min(parts, total))
    return [total // parts + (1 if k < total % parts else 0) for k in range(parts)]


def _run_loadgens(mode: str, url: str, workdir: Path, shares: list[int], seconds: float,
                  on_start: Callable[[], None] = lambda: None,
                  on_stop: Callable[[], None] = lambda: None,
                  on_ready: Callable[[], None] = lambda: None,
                  **kw: Any) -> list[dict[str, Any]]:
    """Start one load generator per share, start them together, return their results;
    ``on_ready`` runs once all have connected, before the window opens (what is too slow
    to do at its edges), ``on_start`` and ``on_stop`` at its edges."""
    go = workdir / f"{mode}.go"
    go.unlink(missing_ok=True)
    gens = []
    for k, share in enumerate(shares):
        ready = workdir / f"{mode}.{k}.ready"
        ready.unlink(missing_ok=True)
        out = workdir / f"{mode}.{k}.json"
        size = {"games": share} if mode == "games" else {"connections": share}
        if "seed" in kw:  # each load generator its own random games
            size["seed"] = kw["seed"] + 1000 * k
        gens.append((_loadgen(mode, url, out, **{**kw, **size}, seconds=seconds,
                              ready=str(ready), go=str(go)), ready, out))
    deadline = time.monotonic() + 600
    while not all(ready.exists() for _, ready, _ in gens):
        if any(gen.poll() is not None for gen, _, _ in gens) or time.monotonic() > deadline:
            for gen, _, _ in gens:
                gen.kill()
            raise RuntimeError(f"a {mode} load generator failed to connect")
        time.sleep(0.05)
    on_ready()
    start = time.time() + 0.3
    go.write_text(f"{start!r}\n")
    time.sleep(max(0.0, start - time.time()))
    on_start()
    time.sleep(max(0.0, start + seconds - time.time()))
    on_stop()
    for gen, _, _ in gens:
        if gen.wait() != 0:
            raise RuntimeError(f"a {mode} load generator failed (exit {gen.returncode})")
    return [json.loads(out.read_text()) for _, _, out in gens]


BENCH_CONNECTIONS_PER_ADDRESS = 1_000_000  # the open-files limit still caps the total
# Every simulated client comes from this machine's one address: the per-address limits
# would ration the whole load as one client's. The same for one process and for a cluster.
ONE_ADDRESS_ARGS = (
    "--guests-per-hour", "0",  # every guest comes from one address here
    "--logins-per-minute", "0",  # and every registration (--rated)
    "--hash-queue", "0",  # whose password hashes queue before the clock starts
    "--max-connections-per-address", str(BENCH_CONNECTIONS_PER_ADDRESS),
    "--max-challenges-per-address", str(BENCH_CONNECTIONS_PER_ADDRESS))


def _serve(workdir: Path, name: str, loop: str | None, stages: Path | None = None,
           db_url: str | None = None) -> tuple[Proc, str]:
    """The server as shipped, on a fresh SQLite file (or ``db_url``); with ``stages``,
    timed stage by stage by ``tests/tools/movecost.py`` (from a source checkout: the tool
    is not installed)."""
    db_url = db_url or sqlite_file_url(workdir / (name + '.db'))
    (workdir / f"{name}.port").unlink(missing_ok=True)  # an earlier server's of the run
    module = (["-m", "server"] if stages is None
              else ["-m", "tests.tools.movecost", str(stages)])
    args = [*module, "serve", "--port", "0", "--db", db_url,
            "--ready-file", str(workdir / f"{name}.port"), "--log-level", "warning",
            *ONE_ADDRESS_ARGS]
    if loop is not None:
        args += ["--loop", loop]
    return start(args, workdir / f"{name}.port", workdir / f"{name}.log"), db_url


def run_games_bench(games: int, seconds: float, seed: int, procs: int, think_ms: float,
                    loop: str | None, workdir: Path, breakdown: bool = False,
                    rated: bool = False, schema: PrivateSchema | None = None
                    ) -> dict[str, Any]:
    """One process under the load, on SQLite, or on PostgreSQL in ``schema`` (whose
    backends' CPU over the window is counted too)."""
    stages = workdir / "stages.json" if breakdown else None
    server, db_url = _serve(workdir, "server" if schema is None else "server-pg", loop,
                            stages, None if schema is None else schema.db_url)
    cpu: list[float] = []
    listed: list[int] = []  # the backends serving the schema once the clients connected
    backends: list[dict[int, float]] = []

    def ready() -> None:
        if schema is not None:
            listed.extend(asyncio.run(schema.backend_pids()))

    def window(edge: signal.Signals) -> None:
        cpu.append(server.cpu_s())
        if schema is not None:  # the backends found later count from 0 at the close
            backends.append(asyncio.run(schema.backend_cpu_by_pid(
                listed, look_again=edge == signal.SIGUSR2)))
        if stages is not None:
            server.popen.send_signal(edge)

    try:
        url = f"ws://127.0.0.1:{server.port}/ws"
        shares = _shares(games, procs)
        parts = _run_loadgens(
            "games", url, workdir, shares, seconds,
            on_start=lambda: window(signal.SIGUSR1), on_stop=lambda: window(signal.SIGUSR2),
            on_ready=ready,
            seed=seed, think_ms=think_ms, rated=rated)
        rss = server.rss_mb()
        if stages is not None:
            deadline = time.monotonic() + 10
            while not stages.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        server.stop()
    stored = set(stored_moves(db_url))
    acked = {(g, ply) for part in parts for g, ply in part["acked"]}
    latencies = sorted(ms for part in parts for ms in part["latencies_ms"])
    codes: dict[str, int] = {}
    for part in parts:
        for code, n in part["error_codes"].items():
            codes[code] = codes.get(code, 0) + n
    server_cpu = cpu[1] - cpu[0]
    moves = sum(len(part["acked"]) for part in parts)
    extra: dict[str, Any] = {} if stages is None else {
        "breakdown_us_per_move": _breakdown(stages, moves)}
    if schema is not None:
        pg_cpu = backends_cpu_s(*backends)
        extra.update(postgres_cpu_s=round(pg_cpu, 2),
                     postgres_cpu_us_per_move=round(pg_cpu / moves * 1e6, 1) if moves else 0.0,
                     cpu_us_per_move=round((server_cpu + pg_cpu) / moves * 1e6, 1)
                     if moves else 0.0)
    return {
        "db": "sqlite" if schema is None else "postgresql",
        "elapsed_s": max(part["elapsed_s"] for part in parts),
        "games": sum(part["games"] for part in parts),
        "moves": moves,
        "errors": sum(part["errors"] for part in parts),
        "error_codes": codes,
        "p50_ms": _percentile(latencies, 50),
        "p99_ms": _percentile(latencies, 99),
        "acknowledged": len(acked),
        "stored": len(stored),
        "lost": len(acked - stored),
        "server_cpu_s": round(server_cpu, 2),
        "server_cpu_us_per_move": round(server_cpu / moves * 1e6, 1) if moves else 0.0,
        "server_rss_mb": round(rss, 1),
        "loadgen_cpu_s": round(sum(part["cpu_s"] for part in parts), 2),
        **extra,
    }


async def run_cluster_games_bench(nodes: int, games: int, seconds: float, seed: int,
                                  procs: int, think_ms: float, workdir: Path, db_url: str,
                                  redis_url: str | None, rated: bool = False
                                  ) -> dict[str, Any]:
    """``run_games_bench`` on a cluster of ``nodes`` (its players on nodes at random); the
    CPU of every server-side process: the nodes, Redis, the PostgreSQL backends
    (``rated``: rated games between registered users, as on one process)."""
    loop = asyncio.get_running_loop()
    async with PrivateCluster(workdir / "cluster", nodes, db_url=db_url, redis_url=redis_url,
                              extra_args=ONE_ADDRESS_ARGS) as cluster:
        for node in cluster.nodes:
            await asyncio.to_thread(node.start)
        readings: list[tuple[float, float, dict[int, float], float]] = []
        listed: list[int] = []  # the backends serving the cluster once the clients connected

        def ready() -> None:
            listed.extend(asyncio.run_coroutine_threadsafe(
                cluster.schema.backend_pids(), loop).result(60))

        def reading() -> None:  # the backends found at the close count from 0
            pg = asyncio.run_coroutine_threadsafe(cluster.postgres_cpu_by_pid(
                listed, look_again=bool(readings)), loop)
            redis = asyncio.run_coroutine_threadsafe(cluster.redis_cpu_s(), loop)
            crossed = sum(_counter(node.port, "tessera_cluster_forwarded_moves_total")
                          for node in cluster.nodes)
            readings.append((cluster.node_cpu_s(), redis.result(30), pg.result(30), crossed))

        parts = await asyncio.to_thread(
            _run_loadgens, "games", ",".join(cluster.urls), workdir, _shares(games, procs),
            seconds, on_start=reading, on_stop=reading, on_ready=ready, seed=seed,
            think_ms=think_ms, rated=rated)
        stored = set(await asyncio.to_thread(stored_moves, cluster.db_url))
    (node0, redis0, pg0, crossed0), (node1, redis1, pg1, crossed1) = readings
    node_cpu, redis_cpu = node1 - node0, redis1 - redis0
    pg_cpu = backends_cpu_s(pg0, pg1)
    moves = sum(len(part["acked"]) for part in parts)
    acked = {(g, ply) for part in parts for g, ply in part["acked"]}
    latencies = sorted(ms for part in parts for ms in part["latencies_ms"])
    codes: dict[str, int] = {}
    for part in parts:
        for code, n in part["error_codes"].items():
            codes[code] = codes.get(code, 0) + n
    elapsed = max(part["elapsed_s"] for part in parts)

    def per_move(cpu: float) -> float:
        return round(cpu / moves * 1e6, 1) if moves else 0.0

    return {
        "nodes": nodes, "elapsed_s": round(elapsed, 2),
        "games": sum(part["games"] for part in parts), "moves": moves,
        "moves_per_s": round(moves / elapsed, 1),
        "errors": sum(part["errors"] for part in parts), "error_codes": codes,
        "p50_ms": round(_percentile(latencies, 50), 2),
        "p99_ms": round(_percentile(latencies, 99), 2),
        "acknowledged": len(acked), "stored": len(stored), "lost": len(acked - stored),
        "cluster_cpu_s": round(node_cpu + redis_cpu + pg_cpu, 2),
        "cluster_cpu_us_per_move": per_move(node_cpu + redis_cpu + pg_cpu),
        "nodes_cpu_us_per_move": per_move(node_cpu),
        "redis_cpu_us_per_move": per_move(redis_cpu),
        "postgres_cpu_us_per_move": per_move(pg_cpu),
        "crossed_moves": int(crossed1 - crossed0),
        "crossed_share": round((crossed1 - crossed0) / moves, 3) if moves else 0.0,
        "private_redis": cluster.private_redis,
        "loadgen_cpu_s": round(sum(part["cpu_s"] for part in parts), 2),
    }


def _counter(port: int, name: str) -> float:
    """A counter's value from a server's ``/metrics`` (0 if it has none)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return 0.0


@contextlib.contextmanager
def _postgres(admin_url: str | None) -> Iterator[PrivateSchema | None]:
    """A PostgreSQL schema of the run's own on ``admin_url`` (dropped after); None for
    None (SQLite)."""
    if admin_url is None:
        yield None
        return
    schema = PrivateSchema(admin_url)
    asyncio.run(schema.__aenter__())
    try:
        yield schema
    finally:
        asyncio.run(schema.__aexit__(None, None, None))


def _breakdown(stages: Path, moves: int) -> dict[str, float]:
    """Server CPU microseconds per move, by stage (see server/stages.py)."""
    timed = json.loads(stages.read_text())
    per_move = {stage: ns / 1000 / max(1, moves) for stage, ns in timed["stages_ns"].items()}
    total = timed["cpu_ns"] / 1000 / max(1, moves)
    per_move["the rest (event loop, sockets, tasks, room logic)"] = total - sum(
        per_move.values())
    per_move["total"] = total
    return {stage: round(us, 1) for stage, us in per_move.items()}


def run_echo_bench(connections: int, seconds: float, procs: int, workdir: Path
                   ) -> dict[str, Any]:
    port_file = workdir / "echo.port"
    port_file.unlink(missing_ok=True)  # from an earlier echo run of the same benchmark
    echo = start(["-m", "clients.bench", "_echo", str(port_file)], port_file,
                 workdir / "echo.log")
    try:
        url = f"ws://127.0.0.1:{echo.port}/"
        parts = _run_loadgens("echo", url, workdir, _shares(connections, procs), seconds)
        return {"roundtrips": sum(part["roundtrips"] for part in parts),
                "elapsed_s": max(part["elapsed_s"] for part in parts)}
    finally:
        echo.popen.kill()
        echo.popen.wait()


def run_idle_bench(connections: int, procs: int, loop: str | None, workdir: Path,
                   db_url: str | None = None) -> dict[str, Any]:
    server, _ = _serve(workdir, "idle", loop, db_url=db_url)
    try:
        url = f"ws://127.0.0.1:{server.port}/ws"
        # warm up: a few connections so lazily built structures exist before the baseline
        warm = workdir / "warm.ready"
        gen = _loadgen("idle", url, workdir / "warm.json", connections=5, hold=0.5,
                       ready=str(warm))
        gen.wait()
        time.sleep(0.5)
        before = server.rss_mb()
        gens = []
        for k, share in enumerate(_shares(connections, procs)):
            ready = workdir / f"idle.{k}.ready"
            gens.append((_loadgen("idle", url, workdir / f"idle.{k}.json", connections=share,
                                  hold=600.0, ready=str(ready)), ready))
        deadline = time.monotonic() + 900
        while not all(ready.exists() for _, ready in gens) and time.monotonic() < deadline \
                and all(gen.poll() is None for gen, _ in gens):
            time.sleep(0.2)
        time.sleep(2.0)
        after = server.rss_mb()
        for gen, _ in gens:
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
    parser = argparse.ArgumentParser(
        prog="tessera bench",
        description="Load benchmark of a real server started here: K concurrent games for T "
                    "seconds against a bare websockets echo server's ceiling, with latency, "
                    "errors and lost moves (see docs/PERFORMANCE.md).")
    parser.add_argument("--games", type=int, default=100,
                        help="concurrent games, K (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="load duration in seconds, T (default: %(default)s)")
    parser.add_argument("--think-ms", type=float, default=0.0,
                        help="mean think time before each move (default 0: answer at once)")
    parser.add_argument("--procs", type=int, default=2,
                        help="load generator processes, for the games and the echo alike")
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default=None,
                        help="the server's event loop (default: what 'tessera serve' uses)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time the server stage by stage (server/stages.py; needs a "
                             "source checkout, for tests/tools/movecost.py)")
    parser.add_argument("--idle", type=int, default=0,
                        help="instead: hold this many idle authenticated connections")
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of the random games (default: %(default)s)")
    parser.add_argument("--rated", action="store_true",
                        help="rated games between registered players (default: casual games "
                             "between guests)")
    parser.add_argument("--nodes", type=int, default=0,
                        help="instead: a cluster of this many nodes on PostgreSQL and Redis "
                             "(players on nodes at random), then the one-process server with "
                             "the same load on SQLite, then on the same PostgreSQL: "
                             "cluster_cpu_us_per_move (nodes, Redis, PostgreSQL backends), "
                             "single_cpu_us_per_move, pg_single_cpu_us_per_move (the process "
                             "and its backends) and crossed_share; no echo ceiling")
    parser.add_argument("--db", default=None, metavar="PG_URL",
                        help="the PostgreSQL server to run on (a schema of the run's own is "
                             "made and dropped): without --nodes the one process runs on it "
                             "instead of SQLite; with --nodes default: " + DEFAULT_DB)
    parser.add_argument("--cluster", default=None, metavar="REDIS_URL",
                        help="with --nodes: the Redis to use; default: a private redis-server "
                             "on a free port (so that its CPU is the run's alone)")
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    opts = parser.parse_args(args)
    if opts.db is not None and opts.db.partition(":")[0].partition("+")[0] != "postgresql":
        parser.error(f"--db {opts.db!r} is not a PostgreSQL URL: use "
                     "postgresql+asyncpg://USER@HOST/DB (without --db the one process runs "
                     "on a fresh SQLite file)")
    if opts.cluster is not None and not opts.nodes:
        parser.error("--cluster is the Redis of a --nodes run: give --nodes N with it")
    raise_fd_limit()  # the server and load generators inherit it
    with tempfile.TemporaryDirectory(prefix="tessera-bench-") as tmp:
        workdir = Path(tmp)
        if opts.nodes:
            pg_url = opts.db or DEFAULT_DB
            result = asyncio.run(run_cluster_games_bench(
                opts.nodes, opts.games, opts.seconds, opts.seed, opts.procs, opts.think_ms,
                workdir, pg_url, opts.cluster, opts.rated))
            single = run_games_bench(opts.games, opts.seconds, opts.seed, opts.procs,
                                     opts.think_ms, opts.loop, workdir, rated=opts.rated)
            with _postgres(pg_url) as schema:
                on_pg = run_games_bench(opts.games, opts.seconds, opts.seed, opts.procs,
                                        opts.think_ms, opts.loop, workdir, rated=opts.rated,
                                        schema=schema)
            result.update(
                single_moves_per_s=round(single["moves"] / single["elapsed_s"], 1),
                single_p50_ms=round(single["p50_ms"], 2),
                single_p99_ms=round(single["p99_ms"], 2),
                single_errors=single["errors"], single_error_codes=single["error_codes"],
                single_lost=single["lost"],
                single_cpu_us_per_move=single["server_cpu_us_per_move"],
                cluster_over_single=round(result["cluster_cpu_us_per_move"]
                                          / single["server_cpu_us_per_move"], 2)
                if single["server_cpu_us_per_move"] else 0.0,
                pg_single_moves_per_s=round(on_pg["moves"] / on_pg["elapsed_s"], 1),
                pg_single_p50_ms=round(on_pg["p50_ms"], 2),
                pg_single_p99_ms=round(on_pg["p99_ms"], 2),
                pg_single_errors=on_pg["errors"], pg_single_error_codes=on_pg["error_codes"],
                pg_single_lost=on_pg["lost"],
                pg_single_cpu_us_per_move=on_pg["cpu_us_per_move"],
                pg_single_server_cpu_us_per_move=on_pg["server_cpu_us_per_move"],
                pg_single_postgres_cpu_us_per_move=on_pg["postgres_cpu_us_per_move"],
                cluster_over_pg_single=round(result["cluster_cpu_us_per_move"]
                                             / on_pg["cpu_us_per_move"], 2)
                if on_pg["cpu_us_per_move"] else 0.0,
                think_ms=opts.think_ms, loadgen_procs=opts.procs, rated=opts.rated)
        elif opts.idle:
            with _postgres(opts.db) as schema:
                result = run_idle_bench(opts.idle, opts.procs, opts.loop, workdir,
                                        None if schema is None else schema.db_url)
        else:
            # The echo runs half before and half after the games, so that a machine whose
            # speed drifts (other work starting or ending) weighs on both sides alike.
            half = opts.seconds / 2
            before = run_echo_bench(2 * opts.games, half, opts.procs, workdir)
            with _postgres(opts.db) as schema:
                result = run_games_bench(opts.games, opts.seconds, opts.seed, opts.procs,
                                         opts.think_ms, opts.loop, workdir, opts.breakdown,
                                         opts.rated, schema)
            after = run_echo_bench(2 * opts.games, half, opts.procs, workdir)
            mps = result["moves"] / result["elapsed_s"]
            eps = ((before["roundtrips"] + after["roundtrips"])
                   / (before["elapsed_s"] + after["elapsed_s"]))
            result.update(moves_per_s=round(mps, 1), echo_roundtrips_per_s=round(eps, 1),
                          echo_before_per_s=round(before["roundtrips"] / before["elapsed_s"], 1),
                          echo_after_per_s=round(after["roundtrips"] / after["elapsed_s"], 1),
                          ratio=round(mps / eps, 3) if eps else 0.0,
                          think_ms=opts.think_ms, loadgen_procs=opts.procs,
                          rated=opts.rated)
            result["p50_ms"] = round(result["p50_ms"], 2)
            result["p99_ms"] = round(result["p99_ms"], 2)
            result["elapsed_s"] = round(result["elapsed_s"], 2)
    if not opts.json:
        for key, value in result.items():
            if key == "breakdown_us_per_move":
                print(f"{'server CPU per move':>24}:")
                for stage, us in value.items():
                    print(f"{us:>33.1f} us  {stage}")
            else:
                print(f"{key:>24}: {value}")
    else:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

