"""A cluster of Tessera nodes of a tool's own: ``tessera chaos --nodes`` and ``bench --nodes``.

Everything it makes it removes: a PostgreSQL schema and a login role of the same name (the
role's ``search_path`` is the schema, so the nodes are configured by URL alone:
:class:`PrivateSchema`, which ``bench --db`` also uses for one process), a cluster
name of its own in Redis (its keys deleted at the end) or a private ``redis-server`` on a
free port, and N node processes (``python -m server serve --cluster ...``, each a
:class:`~clients.localserver.LocalServer`: started, killed, started again on its port).

It opens neither PostgreSQL nor Redis itself: the server's own commands do that, run as
processes (``tessera db sandbox create|drop|backends``, ``tessera cluster
owners|forget|redis-cpu``), as an operator would run them.

The CPU of every server-side process is readable for ``bench``: the nodes', the private
Redis's (or, on a shared Redis, its ``INFO cpu``, which counts everyone's work) and that of
the PostgreSQL backends serving the cluster's role (``/proc/PID/stat``; the server's
shared background processes, such as its WAL writer, are not counted).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Collection
from pathlib import Path

from .localserver import LocalServer, free_port
from .stored import server_output

DEFAULT_DB = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (0 if it is gone)."""
    return _running_cpu_s(pid) or 0.0


def _running_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process so far; None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _tessera(*args: str) -> str:
    """What ``tessera ARGS`` prints, run in a thread (RuntimeError if it fails)."""
    return await asyncio.to_thread(server_output, *args)


class PrivateSchema:
    """A PostgreSQL schema and a login role of the same name, of a tool's own: made by
    ``async with`` (``tessera db sandbox create``), dropped with its connections ended on
    exit; ``db_url`` logs in as the role.

    ``backend_cpu_by_pid`` reads the CPU of the backends serving the role (the server's
    shared background processes, such as its WAL writer, are not counted).
    """

    def __init__(self, admin_url: str = DEFAULT_DB) -> None:
        self.admin_url = admin_url
        self.role = ""
        self.db_url = ""

    async def __aenter__(self) -> PrivateSchema:
        made = json.loads(await _tessera("db", "sandbox", "create", "--db", self.admin_url))
        self.role, self.db_url = made["role"], made["url"]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.role:
            await _tessera("db", "sandbox", "drop", self.role, "--db", self.admin_url)

    async def backend_pids(self) -> list[int]:
        """The process ids of the PostgreSQL backends serving the role now (``tessera db
        sandbox backends``: a process started, a second or so on a busy machine)."""
        pids: list[int] = json.loads(await _tessera("db", "sandbox", "backends", self.role,
                                                    "--db", self.admin_url))
        return pids

    async def backend_cpu_by_pid(self, listed: Collection[int] = (), *,
                                 look_again: bool = True) -> dict[int, float]:
        """CPU seconds so far of each PostgreSQL backend serving the role: first, at once,
        those ``listed`` earlier by ``backend_pids`` that still run (so that a reading at a
        measured window's edge is taken at the edge, not a listing later), then, with
        ``look_again``, those serving it now that were not listed. A window opens with
        ``look_again=False``: a backend found only by a listing that ends late, after the
        window's work, would read as having done none of it; one not listed at all counts
        from 0 at the window's close (``backends_cpu_s``)."""
        found = {pid: cpu for pid in listed if (cpu := _running_cpu_s(pid)) is not None}
        if not look_again:
            return found
        for pid in await self.backend_pids():
            if pid not in found and (cpu := _running_cpu_s(pid)) is not None:
                found[pid] = cpu
        return found


def backends_cpu_s(before: dict[int, float], after: dict[int, float]) -> float:
    """The CPU the backends spent between two ``backend_cpu_by_pid`` readings (a backend
    that started between them counts from 0)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


class PrivateCluster:
    """See the module docstring. ``async with PrivateCluster(...) as c: c.start_node(0)``."""

    def __init__(self, workdir: Path, nodes: int, *, db_url: str = DEFAULT_DB,
                 redis_url: str | None = None, lease_ms: int = 5000,
                 extra_args: tuple[str, ...] = ()) -> None:
        self.workdir = workdir
        self.schema = PrivateSchema(db_url)
        self.name = f"tool-{uuid.uuid4().hex[:10]}"
        self._given_redis = redis_url
        self.redis_url = redis_url or ""
        self._redis_proc: subprocess.Popen[bytes] | None = None
        self.lease_ms = lease_ms
        self.extra_args = extra_args
        self.count = nodes
        self.nodes: list[LocalServer] = []

    @property
    def db_url(self) -> str:
        return self.schema.db_url

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    async def __aenter__(self) -> PrivateCluster:
        await self.schema.__aenter__()
        if self._given_redis is None:
            self._start_redis()
        for index in range(self.count):
            self.nodes.append(LocalServer(
                self.workdir / f"node{index}", db_url=self.db_url, extra_args=[
                    "--cluster", self.redis_url, "--cluster-name", self.name,
                    "--node-id", f"n{index}", "--lease-ms", str(self.lease_ms),
                    *self.extra_args]))
        return self

    async def __aexit__(self, *exc: object) -> None:
        for node in self.nodes:
            node.stop()
        if self._redis_proc is not None:
            self._redis_proc.kill()
            self._redis_proc.wait()
        else:
            await self._delete_keys()
        await self.schema.__aexit__(*exc)

    def node_cpu_s(self) -> float:
        return sum(proc_cpu_s(node.pid) for node in self.nodes if node.pid is not None)

    async def redis_cpu_s(self) -> float:
        """The Redis server's CPU seconds so far (all its clients' work on a shared one,
        read by ``tessera cluster redis-cpu``, a process started: a second or so late)."""
        if self._redis_proc is not None:
            return proc_cpu_s(self._redis_proc.pid)
        used = json.loads(await _tessera("cluster", "redis-cpu", "--cluster", self.redis_url))
        return float(used["used_cpu_sys"]) + float(used["used_cpu_user"])

    @property
    def private_redis(self) -> bool:
        return self._redis_proc is not None

    async def postgres_cpu_by_pid(self, listed: Collection[int] = (), *,
                                  look_again: bool = True) -> dict[int, float]:
        """CPU seconds so far of each PostgreSQL backend serving this cluster (``listed``,
        ``look_again``: as :meth:`PrivateSchema.backend_cpu_by_pid` takes them)."""
        return await self.schema.backend_cpu_by_pid(listed, look_again=look_again)

    # -- setup ---------------------------------------------------------------------------
    def _start_redis(self) -> None:
        if shutil.which("redis-server") is None:
            self.redis_url = DEFAULT_REDIS
            return
        port = free_port()
        directory = self.workdir / "redis"
        directory.mkdir(parents=True, exist_ok=True)
        self._redis_proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(directory)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    self.redis_url = f"redis://127.0.0.1:{port}/0"
                    return
            time.sleep(0.02)
        raise RuntimeError("the private redis-server did not start")

    async def _delete_keys(self) -> None:
        await _tessera("cluster", "forget", "--cluster", self.redis_url,
                       "--cluster-name", self.name)

    async def lease_owners(self, game_ids: list[str]) -> dict[str, str | None]:
        """The node id owning each game now (None: no lease)."""
        if not game_ids:
            return {}
        owners: dict[str, str | None] = json.loads(await _tessera(
            "cluster", "owners", *game_ids, "--cluster", self.redis_url,
            "--cluster-name", self.name))
        return owners
