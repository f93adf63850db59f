"""The bus round-trip measurement runs (small) and reports both settings."""

from __future__ import annotations

from tests.server.cluster.conftest import redis_url  # noqa: F401  (a fixture, used by name)
from tests.tools.bus_rtt import measure


async def test_bus_rtt_measures_one_and_two_processes(redis_url: str) -> None:  # noqa: F811
    figures = await measure(redis_url, 40)
    assert set(figures) == {"one_process", "two_processes"}
    for setting in figures.values():
        assert setting["requests"] == 40
        assert 0 < setting["p50_ms"] <= setting["p99_ms"]
