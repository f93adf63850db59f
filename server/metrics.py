"""Prometheus metrics served at ``/metrics`` (one registry per server instance)."""

from __future__ import annotations

import asyncio
import gc
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator
from itertools import accumulate

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

_go_string: Callable[[float], str] = floatToGoString  # untyped in prometheus_client

LOOP_LAG_PERIOD_S = 0.1
LOOP_LAG_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
MOVE_SECONDS_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0)


class MoveStats:
    """``tessera_moves_total`` and the ``tessera_move_seconds`` histogram, as plain numbers.

    Only the event loop's thread writes them, once per move, so they need none of the locks
    a ``prometheus_client`` counter and histogram take on each update (five a move, about
    2% of the server's CPU at saturation); ``/metrics`` reads them through this collector.
    """

    def __init__(self) -> None:
        self.count = 0
        self.sum = 0.0
        self.counts = [0] * (len(MOVE_SECONDS_BUCKETS) + 1)  # the last: above every bound

    def observe(self, seconds: float) -> None:
        """A move stored and acknowledged ``seconds`` after it arrived."""
        self.count += 1
        self.sum += seconds
        self.counts[bisect_left(MOVE_SECONDS_BUCKETS, seconds)] += 1

    def describe(self) -> Iterator[Metric]:
        return self.collect()

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily("tessera_moves_total", "Moves accepted and stored",
                                  value=self.count)
        cumulative = list(accumulate(self.counts))
        yield HistogramMetricFamily(
            "tessera_move_seconds", "From a move's arrival to its acknowledgement",
            buckets=[*((_go_string(b), c) for b, c in
                       zip(MOVE_SECONDS_BUCKETS, cumulative, strict=False)),
                     ("+Inf", cumulative[-1])],
            sum_value=self.sum)


class Metrics:
    """The counters, gauges and histograms the server updates."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.connections = Gauge("tessera_connections", "Open websocket connections",
                                 registry=r)
        self.refused = Counter(
            "tessera_connections_refused_total",
            "Websocket upgrades refused over a cap: why is address (429) or total (503)",
            ["why"], registry=r)
        self.handshakes_cut = Counter(
            "tessera_handshakes_cut_total",
            "Connections cut before their HTTP request, the oldest over max_handshakes",
            registry=r)
        self.accept_failures = Counter(
            "tessera_accept_failures_total",
            "Connections the listener could not accept (out of files or memory)", registry=r)
        self.games = Gauge("tessera_games_in_progress", "Games being played", registry=r)
        self.moves = MoveStats()
        r.register(self.moves)
        self.errors = Counter("tessera_errors_total", "Error replies sent, by code", ["code"],
                              registry=r)
        self.snapshots_packed = Counter(
            "tessera_snapshots_packed_total",
            "Snapshots packed for many replies, by what: a page of the lobby (once per "
            "change of the lobby), a game's state (once per event of the game)", ["what"],
            registry=r)
        self.games_finished = Counter("tessera_games_finished_total", "Games ended, by reason",
                                      ["reason"], registry=r)
        self.commit_batch = Histogram(
            "tessera_commit_batch_items", "Items written per storage transaction",
            buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500), registry=r)

        self.memory_handbacks = Counter(
            "tessera_memory_handbacks_total",
            "Memory handed back to the system because a crowd of connections or seeks had "
            "gone, or a flood of short connections had passed (server.memory.DropWatch, "
            "Churn)", registry=r)
        self.loop_lag = Histogram(
            "tessera_loop_lag_seconds",
            "How late the event loop ran a timer due every LOOP_LAG_PERIOD_S: how long "
            "something blocked it", buckets=LOOP_LAG_BUCKETS, registry=r)

        self.gc_pause = Histogram(
            "tessera_gc_seconds", "Collections of the cyclic garbage collector, by "
            "generation (2: full), and how long each held the loop",
            ["generation"], buckets=LOOP_LAG_BUCKETS, registry=r)
        self.gc_cpu = Counter(
            "tessera_gc_cpu_seconds", "CPU time of the cyclic garbage collector's "
            "collections, by generation (2: full): tessera_gc_seconds less the time the "
            "process waited for a core", ["generation"], registry=r)

    def time_collections(self) -> Callable[[], None]:
        """Time every collection of the garbage collector into ``tessera_gc_seconds`` and
        ``tessera_gc_cpu_seconds_total`` (``gc.callbacks``); returns the function that
        stops it."""
        started = [0.0, 0.0]
        by_generation = [self.gc_pause.labels(generation=str(g)) for g in range(3)]
        cpu_by_generation = [self.gc_cpu.labels(generation=str(g)) for g in range(3)]

        def callback(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                started[0] = time.perf_counter()
                started[1] = time.thread_time()
            else:
                generation = info["generation"]
                by_generation[generation].observe(time.perf_counter() - started[0])
                cpu_by_generation[generation].inc(time.thread_time() - started[1])

        gc.callbacks.append(callback)
        return lambda: gc.callbacks.remove(callback)

    def render(self) -> bytes:
        return generate_latest(self.registry)


async def measure_loop_lag(metrics: Metrics, period_s: float = LOOP_LAG_PERIOD_S) -> None:
    """Forever: sleep ``period_s`` and record how much later than that the loop woke up
    (``tessera_loop_lag_seconds``): the time callbacks, collections and anything else run
    on the loop's thread kept every other connection waiting."""
    loop = asyncio.get_running_loop()
    while True:
        start = loop.time()
        await asyncio.sleep(period_s)
        metrics.loop_lag.observe(max(0.0, loop.time() - start - period_s))
