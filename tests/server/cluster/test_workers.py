"""``tessera serve --workers N``: real worker processes on one port, a real Redis and
PostgreSQL; a worker killed is started again; SIGTERM stops everything; bad flags refused."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis.asyncio as aioredis
import websockets

import protocol as p
from server.cli import build_parser
from server.cluster.keys import Keys
from server.cluster.nodes import NodeInfo, cluster_status
from server.cluster.workers import Supervisor, worker_argv
from tests.server.conftest import TestDatabase

from .conftest import eventually

REPO = Path(__file__).resolve().parents[3]


def serve(*flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server", "serve", *flags], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


def test_workers_without_a_cluster_and_postgresql_are_refused(tmp_path: Path) -> None:
    sqlite = f"sqlite+aiosqlite:///{tmp_path}/t.db"
    with ThreadPoolExecutor(4) as pool:  # four processes at once, not one after the other
        three, two, cluster, not_redis = pool.map(lambda flags: serve(*flags), [
            ("--workers", "3", "--db", sqlite),
            ("--workers", "2", "--cluster", "redis://127.0.0.1:6379/0", "--db", sqlite),
            ("--cluster", "redis://127.0.0.1:6379/0", "--db", sqlite),
            ("--cluster", "http://x", "--db", "postgresql://u@127.0.0.1/db")])
    assert three.returncode == 2
    assert "--workers 3 runs 3 node processes" in three.stderr
    assert "--cluster redis://HOST:PORT/DB and a PostgreSQL --db" in three.stderr
    assert two.returncode == 2 and "needs a PostgreSQL --db" in two.stderr
    assert cluster.returncode == 2 and "--cluster needs a PostgreSQL --db" in cluster.stderr
    assert not_redis.returncode == 2 and "is not a Redis URL" in not_redis.stderr
    assert not (tmp_path / "t.db").exists()  # refused before anything was opened


def test_worker_flags_are_the_supervisors_but_those_set_per_worker() -> None:
    args = build_parser().parse_args([
        "serve", "--workers", "3", "--port", "9000", "--db", "postgresql://u@h/d",
        "--cluster", "redis://h:1/0", "--origin", "https://a", "--origin", "https://b",
        "--grace", "5", "--node-id", "box", "--ready-file", "/tmp/r"])
    parser: argparse.ArgumentParser = args.serve_parser
    assert worker_argv(args, parser) == [
        "--db", "postgresql://u@h/d", "--origin", "https://a", "--origin", "https://b",
        "--grace", "5.0", "--cluster", "redis://h:1/0"]


async def test_a_dead_worker_is_started_again_with_backoff(tmp_path: Path) -> None:
    marker = tmp_path / "runs"
    script = f"import os; open({str(marker)!r}, 'a').write('x'); os._exit(3)"
    supervisor = Supervisor([[sys.executable, "-c", script]], backoff_s=(0.1, 0.4),
                            stable_s=60)
    runner = asyncio.ensure_future(supervisor.run())
    await eventually(lambda: supervisor.restarts[0] >= 4, 10)
    supervisor.stop()
    assert await runner == 0
    started = len(marker.read_text())
    await asyncio.sleep(0.5)
    assert len(marker.read_text()) == started  # nothing started after the stop
    # pauses 0.1, 0.2, 0.4, 0.4...: four restarts take at least 1.1 s, not a tight loop
    assert started <= 8


async def test_sighup_is_passed_to_every_worker_which_goes_on(tmp_path: Path) -> None:
    marks = [tmp_path / "worker-1", tmp_path / "worker-2"]
    commands = [[sys.executable, "-c", (
        "import pathlib, signal, time\n"
        f"mark = pathlib.Path({str(path)!r})\n"
        "signal.signal(signal.SIGHUP, lambda *_: mark.write_text(mark.read_text() + 'h'))\n"
        "mark.write_text('up ')\n"
        "time.sleep(60)\n")] for path in marks]
    supervisor = Supervisor(commands, stable_s=60)
    runner = asyncio.ensure_future(supervisor.run())
    await eventually(lambda: all(m.exists() and m.read_text() for m in marks), 20)
    supervisor.pass_on(signal.SIGHUP)
    await eventually(lambda: all(m.read_text() == "up h" for m in marks), 10)
    assert supervisor.restarts == [0, 0]  # reloaded, not ended
    supervisor.stop()
    assert await runner == 0


async def node_table(redis_url: str, keys: Keys) -> list[NodeInfo]:
    client = aioredis.Redis.from_url(redis_url)
    try:
        return await cluster_status(client, keys)
    finally:
        await client.aclose()


async def hello(url: str) -> websockets.ClientConnection:
    ws = await websockets.connect(url)
    await ws.send(p.encode(p.Hello(id=1, version=1, client="test")))
    assert isinstance(p.decode_server(await ws.recv()), p.Welcome)
    return ws


@pytest.mark.slow
@pytest.mark.parametrize("database", ["postgresql"], indirect=True)
async def test_workers_share_a_port_restart_and_stop_cleanly(
        tmp_path: Path, redis_url: str, keys: Keys, database: TestDatabase) -> None:
    pg_url = database.url
    ready = tmp_path / "ready"
    errors_file = (tmp_path / "stderr").open("wb")
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "server", "serve", "--workers", "2", "--port", "0",
         "--db", pg_url, "--cluster", redis_url, "--cluster-name", keys.cluster,
         "--node-id", "box", "--ready-file", str(ready), "--log-level", "warning"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=errors_file)  # a file: never full
    try:
        await eventually(ready.exists, 60, 0.1)
        url = f"ws://127.0.0.1:{int(ready.read_text())}/ws"
        clients = [await hello(url) for _ in range(24)]

        async def both_serve() -> bool:
            nodes = await node_table(redis_url, keys)
            return ([n.node_id for n in nodes] == ["box-1", "box-2"]
                    and all(n.alive and n.connections > 0 for n in nodes)
                    and sum(n.connections for n in nodes) == 24)

        await eventually(both_serve, 20, 0.2)  # the kernel spread them over both workers
        for ws in clients:
            await ws.close()

        [first, _] = await node_table(redis_url, keys)
        os.kill(first.pid, signal.SIGKILL)

        async def restarted() -> bool:
            nodes = await node_table(redis_url, keys)
            return (nodes[0].pid not in (0, first.pid) and nodes[0].alive
                    and nodes[0].incarnation != first.incarnation)

        try:
            await eventually(restarted, 60, 0.2)
        except AssertionError:
            raise AssertionError(f"not restarted: {await node_table(redis_url, keys)}; "
                                 f"{(tmp_path / 'stderr').read_text()[-3000:]}") from None
        ws = await hello(url)  # still serving on the same port
        await ws.close()

        pids = [n.pid for n in await node_table(redis_url, keys)]
        started = time.monotonic()
        supervisor.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(supervisor.wait, 30) == 0
        assert time.monotonic() - started < 15
        for pid in pids:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        assert await node_table(redis_url, keys) == []  # each left the registry
        errors = (tmp_path / "stderr").read_text()
        assert "worker 1 (pid" in errors and "exited with -9" in errors
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()
        errors_file.close()


def test_workers_stop_when_the_supervisor_is_killed(tmp_path: Path) -> None:
    """Even a SIGKILLed supervisor leaves no worker behind (Linux: PR_SET_PDEATHSIG)."""
    pids = tmp_path / "pids"
    worker = (f"import os, time; open({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n'); "
              "time.sleep(60)")
    script = ("import asyncio, sys; from server.cluster.workers import Supervisor; "
              f"asyncio.run(Supervisor([[sys.executable, '-c', {worker!r}]] * 2).run())")
    supervisor = subprocess.Popen([sys.executable, "-c", script], cwd=REPO)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while not (pids.exists() and len(pids.read_text().split()) == 2):
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.05)
        workers = [int(pid) for pid in pids.read_text().split()]
        supervisor.kill()
        supervisor.wait()
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in workers):
            assert time.monotonic() < deadline, "a worker outlived its supervisor"
            time.sleep(0.05)
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by init) counts as gone
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False
