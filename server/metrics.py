"""Prometheus metrics served at ``/metrics`` (one registry per server instance)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


class Metrics:
    """The counters, gauges and histograms the server updates."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.connections = Gauge("tessera_connections", "Open websocket connections",
                                 registry=r)
        self.games = Gauge("tessera_games_in_progress", "Games being played", registry=r)
        self.moves = Counter("tessera_moves_total", "Moves accepted and stored", registry=r)
        self.errors = Counter("tessera_errors_total", "Error replies sent, by code", ["code"],
                              registry=r)
        self.games_finished = Counter("tessera_games_finished_total", "Games ended, by reason",
                                      ["reason"], registry=r)
        self.move_latency = Histogram(
            "tessera_move_seconds", "From a move's arrival to its acknowledgement",
            buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0),
            registry=r)
        self.commit_batch = Histogram(
            "tessera_commit_batch_items", "Items written per storage transaction",
            buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500), registry=r)

    def render(self) -> bytes:
        return generate_latest(self.registry)
