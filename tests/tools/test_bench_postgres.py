"""``tessera bench`` on PostgreSQL: one process on it (``--db``), and a cluster beside the
one process on SQLite and on the same PostgreSQL (``--nodes``); each test a run of its own,
apart from ``test_bench.py``'s shared small run so that the suite runs them side by side.

It asserts no timing: the figures are printed by ``tessera bench`` for people to read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest


def bench(*args: str, timeout: float = 300) -> dict[str, Any]:
    """``tessera bench ARGS --json``: its JSON object."""
    run = subprocess.run([sys.executable, "-m", "clients.bench", *args, "--json"],
                         capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, run.stderr[-2000:]
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return result


def pg_url() -> str:
    db_url = os.environ.get("TESSERA_TEST_PG_URL")
    if not db_url:
        pytest.skip("PostgreSQL bench skipped: TESSERA_TEST_PG_URL is not set")
    return db_url


def test_bench_with_db_runs_the_one_process_on_that_postgresql() -> None:
    """``--db`` without ``--nodes``: the server's moves are stored in PostgreSQL (looked up
    there: a run on SQLite would find none of them) and its backends' CPU is counted."""
    result = bench("--games", "4", "--seconds", "2", "--think-ms", "20", "--db", pg_url())
    assert result["db"] == "postgresql" and result["moves"] > 0
    assert result["lost"] == 0 and result["stored"] >= result["acknowledged"] > 0
    assert result["errors"] == 0, result["error_codes"]
    assert result["postgres_cpu_us_per_move"] >= 0 and result["server_cpu_us_per_move"] > 0
    assert result["cpu_us_per_move"] == pytest.approx(
        result["server_cpu_us_per_move"] + result["postgres_cpu_us_per_move"], abs=0.2)


def test_bench_refuses_a_db_that_is_not_postgresql() -> None:
    run = subprocess.run([sys.executable, "-m", "clients.bench", "--db", "sqlite:///x.db"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "not a PostgreSQL URL" in run.stderr
    assert run.stdout == ""  # nothing ran


def test_bench_on_a_cluster_reports_the_cluster_and_the_single_server() -> None:
    """``--nodes``: two nodes, then one process on SQLite, then one on the same PostgreSQL;
    skipped without PostgreSQL and Redis."""
    db_url = pg_url()
    if not os.environ.get("TESSERA_TEST_REDIS_URL"):
        pytest.skip("cluster bench skipped: TESSERA_TEST_REDIS_URL is not set")
    run = subprocess.run(
        [sys.executable, "-m", "clients.bench", "--nodes", "2", "--games", "6", "--seconds",
         "2", "--db", db_url, "--json"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["nodes"] == 2 and result["moves"] > 0
    assert result["lost"] == result["single_lost"] == 0
    # at full speed a few bots outrun their connection's budget, as with bench alone
    assert set(result["error_codes"]) <= {"rate_limited"}, result["error_codes"]
    assert result["cluster_cpu_us_per_move"] > 0 and result["single_cpu_us_per_move"] > 0
    assert result["cluster_cpu_us_per_move"] >= result["nodes_cpu_us_per_move"] > 0
    # the one process on the same PostgreSQL, in the same run: the process and its backends
    assert result["pg_single_lost"] == 0 and result["pg_single_moves_per_s"] > 0
    assert set(result["pg_single_error_codes"]) <= {"rate_limited"}
    assert result["pg_single_server_cpu_us_per_move"] > 0
    assert result["pg_single_postgres_cpu_us_per_move"] > 0
    assert result["pg_single_cpu_us_per_move"] == pytest.approx(
        result["pg_single_server_cpu_us_per_move"]
        + result["pg_single_postgres_cpu_us_per_move"], abs=0.2)
    assert result["cluster_over_pg_single"] > 0
    # players on both nodes at random: some games' moves crossed nodes, never more than all
    assert 0 < result["crossed_moves"] <= result["moves"]
    assert result["crossed_share"] == round(result["crossed_moves"] / result["moves"], 3)
