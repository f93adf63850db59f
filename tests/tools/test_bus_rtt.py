"""The bus round-trip measurement runs (small) and reports both settings."""

from __future__ import annotations

import os

import pytest

from tests.server.cluster.conftest import REDIS_URL_ENV, redis_reason_unavailable
from tests.tools.bus_rtt import measure


async def test_bus_rtt_measures_one_and_two_processes() -> None:
    url = os.environ.get(REDIS_URL_ENV)
    if not url:
        pytest.skip(f"{REDIS_URL_ENV} is not set")
    reason = await redis_reason_unavailable(url)
    if reason:
        pytest.skip(reason)
    figures = await measure(url, 40)
    assert set(figures) == {"one_process", "two_processes"}
    for setting in figures.values():
        assert setting["requests"] == 40
        assert 0 < setting["p50_ms"] <= setting["p99_ms"]
