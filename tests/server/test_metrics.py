"""The move statistics read the same at /metrics as prometheus_client's own types would;
the garbage collector's pauses are there, as the loop saw them and in CPU time."""

from __future__ import annotations

import gc

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from server.metrics import MOVE_SECONDS_BUCKETS, Metrics, MoveStats


def samples(body: bytes, prefix: str) -> list[str]:
    return [line for line in body.decode().splitlines()
            if line.startswith(prefix) and "_created" not in line]


@given(st.lists(st.one_of(st.sampled_from(MOVE_SECONDS_BUCKETS),  # exactly on a bound
                          st.floats(min_value=0, max_value=5)), max_size=50))
def test_move_stats_expose_what_a_counter_and_a_histogram_would(values: list[float]) -> None:
    ours = CollectorRegistry()
    stats = MoveStats()
    ours.register(stats)
    theirs = CollectorRegistry()
    counter = Counter("tessera_moves_total", "Moves accepted and stored", registry=theirs)
    histogram = Histogram("tessera_move_seconds", "From a move's arrival to its acknowledgement",
                          buckets=MOVE_SECONDS_BUCKETS, registry=theirs)
    for value in values:
        stats.observe(value)
        counter.inc()
        histogram.observe(value)
    mine, reference = generate_latest(ours), generate_latest(theirs)
    for prefix in ("tessera_moves_total", "tessera_move_seconds_bucket",
                   "tessera_move_seconds_count"):
        assert samples(mine, prefix) == samples(reference, prefix)
    [sum_line] = samples(mine, "tessera_move_seconds_sum")
    [reference_sum] = samples(reference, "tessera_move_seconds_sum")
    assert abs(float(sum_line.split()[1]) - float(reference_sum.split()[1])) < 1e-9


def test_each_collection_is_timed_in_seconds_and_in_cpu_seconds() -> None:
    metrics = Metrics()
    stop = metrics.time_collections()
    try:
        gc.collect()
    finally:
        stop()
    gc.collect()  # not counted: stopped
    body = metrics.render()
    assert samples(body, 'tessera_gc_seconds_count{generation="2"}') == [
        'tessera_gc_seconds_count{generation="2"} 1.0']
    [cpu] = samples(body, 'tessera_gc_cpu_seconds_total{generation="2"}')
    [wall] = samples(body, 'tessera_gc_seconds_sum{generation="2"}')
    assert 0 < float(cpu.split()[1]) <= float(wall.split()[1]) + 0.01
