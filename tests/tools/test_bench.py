"""The load benchmark runs end to end and accounts for every acknowledged move.

It asserts no timing: the figures are printed by ``tessera bench`` for people to read.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest


@pytest.fixture(scope="module")
def small_run() -> dict[str, Any]:
    """One small run with the stage breakdown, which serves both tests below (a run of its
    own each cost the suite as much again): the bots think 20 ms, so none outruns its
    connection's budget and the run has no errors."""
    run = subprocess.run(
        [sys.executable, "-m", "clients.bench", "--games", "4", "--seconds", "2",
         "--breakdown", "--think-ms", "20", "--json"],
        capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return result


def test_bench_small_run_reports_every_field(small_run: dict[str, Any]) -> None:
    result = small_run
    for key in ("games", "moves", "moves_per_s", "p50_ms", "p99_ms", "errors", "acknowledged",
                "stored", "lost", "server_cpu_s", "server_rss_mb", "echo_roundtrips_per_s",
                "ratio"):
        assert key in result, key
    assert result["moves"] > 0
    assert result["echo_before_per_s"] > 0 and result["echo_after_per_s"] > 0
    assert result["lost"] == 0
    assert result["stored"] >= result["acknowledged"]


def test_bench_breakdown_times_the_server_stage_by_stage(small_run: dict[str, Any]) -> None:
    result = small_run
    stages = result["breakdown_us_per_move"]
    for stage in ("frames in", "decode", "validate", "messages", "encode+send", "store",
                  "total"):
        assert stage in stages, stage
    assert stages["total"] > 0 and stages["validate"] > 0 and stages["store"] > 0
    assert result["lost"] == 0 and result["errors"] == 0
