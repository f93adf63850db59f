"""The crash test in its short form: a real server process SIGKILLed mid-game."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clients import chaos
from clients.connection import Connection
from clients.localserver import LocalServer

PG_URL_ENV = "TESSERA_TEST_PG_URL"
REDIS_URL_ENV = "TESSERA_TEST_REDIS_URL"


def test_chaos_short_run_loses_nothing() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "clients.chaos", "--games", "4", "--kills", "2", "--json"],
        capture_output=True, text=True, timeout=240)
    assert run.stdout.strip(), run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["kills"] == 2
    assert result["finished"] == result["games"] == 4
    assert result["interrupted"] >= 1  # a game was in progress at a kill and resumed
    assert result["acknowledged"] > 0
    assert result["lost"] == 0
    assert result["duplicated"] == 0
    assert result["replay_mismatches"] == 0
    assert result["rated"] == 2  # every other game, each rated once: verified equal
    assert result["rating_differences"] == 0
    assert result["integrity"] == "ok"
    assert run.returncode == 0


def test_chaos_on_a_cluster_loses_nothing_and_times_the_failovers() -> None:
    """``--nodes``: a node of three SIGKILLed twice; skipped without PostgreSQL and Redis."""
    db_url, redis_url = os.environ.get(PG_URL_ENV), os.environ.get(REDIS_URL_ENV)
    if not db_url or not redis_url:
        pytest.skip(f"cluster chaos skipped: {PG_URL_ENV} and {REDIS_URL_ENV} are needed")
    run = subprocess.run(
        [sys.executable, "-m", "clients.chaos", "--nodes", "3", "--games", "6", "--kills", "2",
         "--think", "0.5", "--lease-ms", "2000", "--db", db_url, "--json"],
        capture_output=True, text=True, timeout=300)
    assert run.stdout.strip(), run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert (result["kills"], result["nodes"]) == (2, 3)
    assert result["finished"] == result["games"] == 6
    assert result["lost"] == result["duplicated"] == result["replay_mismatches"] == 0
    assert result["rated"] == 3  # every other game, rated across nodes: verified equal
    assert result["rating_differences"] == 0
    assert result["integrity"] == "ok"
    assert result["failovers_measured"] >= 1  # a killed node owned a game, which moved on
    assert 0 < result["failover_p50_s"] <= result["failover_p99_s"]
    assert run.returncode == 0


def test_chaos_server_takes_every_registration_of_a_big_run(tmp_path: Path) -> None:
    """``chaos --games 40`` registers 40 players from one address: the server it starts
    takes them all, however fast they come (issue 23: the 31st was refused and chaos
    ended in a traceback)."""
    server = LocalServer(tmp_path, extra_args=chaos.OWN_SERVER_ARGS)
    server.start()
    try:
        async def register_all() -> list[object]:
            return await asyncio.gather(*(chaos._registered(server.url, f"p{i}")
                                          for i in range(40)), return_exceptions=True)

        outcomes = asyncio.run(register_all())
    finally:
        server.stop()
    refused = [repr(o) for o in outcomes if isinstance(o, BaseException)]
    assert refused == []



def test_a_refused_connection_ends_a_client_command_in_one_line(tmp_path: Path) -> None:
    """A refusal no command expected (here the server's per-address cap of connections,
    HTTP 429, met by ``tessera ladder``) is one line and exit status 1, not a traceback."""
    server = LocalServer(tmp_path, extra_args=("--max-connections-per-address", "1"))
    server.start()
    try:
        async def while_one_is_open() -> subprocess.CompletedProcess[str]:
            async with await Connection.open(server.url):
                return await asyncio.to_thread(
                    subprocess.run, [sys.executable, "-m", "clients.cli", "ladder",
                                     "standings", "hadron", "--server", server.url],
                    capture_output=True, text=True, timeout=60)

        run = asyncio.run(while_one_is_open())
    finally:
        server.stop()
    assert run.returncode == 1, run.stderr
    assert run.stderr.splitlines() == [
        "tessera ladder: the server refused the connection: HTTP 429 Too Many Requests"]
