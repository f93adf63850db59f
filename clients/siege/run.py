"""One siege: a fresh server (or cluster), its canaries, one attack, and the figures.

The server is started as shipped (``python -m server serve``, :class:`LocalServer`) on a
free loopback port with a SQLite file in a temporary directory; with ``nodes`` of 2 or
more, a cluster of that many such processes on a PostgreSQL schema and a Redis of its own
(:class:`~clients.privatecluster.PrivateCluster`, as ``tessera chaos --nodes`` and
``tessera bench --nodes`` start theirs). Every server is given the siege's
:class:`~clients.siege.budgets.Budgets`. The run goes through three phases: ``quiet``
(canaries only), ``attack`` (the attacker process runs), ``after`` (once the attacker has
exited and every server too has closed its connections: the sockets it holds, but its own
connections out, back to within DRAIN_SLACK_CONNECTIONS of before, waiting up to
DRAIN_TIMEOUT_S; then ``settle`` seconds; its open files are no measure of that on a
cluster, whose nodes keep the PostgreSQL and Redis connections their pools opened during
the attack). Each
server's resident memory is read from ``/proc/PID/status`` (before the attack, its peak
during it, at the end of ``after``), its open files from ``/proc/PID/fd`` (the same three
times), and the rows added to each table and the moves stored through the server's own
commands (``tessera db counts``, ``tessera dump``: :mod:`clients.stored`) once the servers
have stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import protocol as p

from ..connection import Connection, ServerError
from ..localserver import LocalServer
from ..privatecluster import DEFAULT_DB, PrivateCluster
from ..stored import row_counts, stored_moves
from .budgets import Budgets
from .canaries import (
    NETWORK_ERRORS,
    Account,
    BotCanary,
    HealthProbe,
    MoveCanary,
    Phase,
    PingCanary,
    Samples,
)
from .raw import OWNER, close_reason, loop_lag

OWNER_LOGIN_TIMEOUT_S = 10.0
DRAIN_TIMEOUT_S = 60.0  # the longest wait for the attacker's connections to close server-side
DRAIN_SLACK_CONNECTIONS = 16  # "closed": the server holds at most this many more than before
BOT_NAME = "siegebot"


class Process:
    """What /proc says about the server process listening on ``port``."""

    def __init__(self, pid: int, port: int) -> None:
        self.pid = pid
        self.port = port
        self.rss_peak_mb = 0.0
        self.fds_peak = 0

    def rss_mb(self) -> float:
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def fds(self) -> int:
        try:
            return len(os.listdir(f"/proc/{self.pid}/fd"))
        except OSError:
            return 0

    def connections(self) -> int:
        """The sockets the process holds but its own connections out (to PostgreSQL, to
        Redis: its TCP sockets on another local port than its own, read from
        ``/proc/net/tcp`` and ``tcp6`` by inode): its clients' connections, those a client
        reset and it has not closed yet among them, and a few of its own that stay (its
        listening socket, its internal ones)."""
        inodes: set[str] = set()
        try:
            for fd in os.scandir(f"/proc/{self.pid}/fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(fd.path)
                    if link.startswith("socket:["):
                        inodes.add(link[8:-1])
        except OSError:
            return 0
        out = 0
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with contextlib.suppress(OSError):
                for line in Path(table).read_text().splitlines()[1:]:
                    fields = line.split()  # sl local remote state ... uid timeout inode
                    if (fields[9] in inodes
                            and int(fields[1].rsplit(":", 1)[1], 16) != self.port):
                        out += 1
        return len(inodes) - out

    def cpu_s(self) -> float:
        """User and system CPU time used so far."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return 0.0

    def open_files_limit(self) -> int | None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            for line in Path(f"/proc/{self.pid}/limits").read_text().splitlines():
                if line.startswith("Max open files"):
                    return int(line.split()[3])
        return None

    async def drained(self, before: int, timeout_s: float, period: float = 0.25
                      ) -> float | None:
        """Wait until the process holds about as many connections as ``before`` (the
        attacker's closed on the server's side too, not only on the attacker's), for up
        to ``timeout_s``: how long it took, or None if they were still open then."""
        t0 = time.monotonic()
        while self.connections() > before + DRAIN_SLACK_CONNECTIONS:
            if time.monotonic() - t0 >= timeout_s:
                return None
            await asyncio.sleep(period)
        return round(time.monotonic() - t0, 2)

    async def sample(self, period: float = 0.25) -> None:
        while True:
            self.rss_peak_mb = max(self.rss_peak_mb, self.rss_mb())
            self.fds_peak = max(self.fds_peak, self.fds())
            await asyncio.sleep(period)


def lag_summary(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    """The server's event-loop lag between two reads of its histogram: how many timer
    wake-ups (every 100 ms) came more than 20, 50, 100, 250 ms and 1 s late, and the
    largest bucket reached (the lag was at most that); the garbage collector's pauses,
    young and full, as the loop saw them and in CPU seconds (the difference: waiting for a
    core)."""
    if not before or not after:
        return {"error": "no /metrics"}
    def late(bound: str) -> int:
        total = after["+Inf"] - before["+Inf"]
        return int(total - (after.get(bound, 0.0) - before.get(bound, 0.0)))
    bounds = sorted((float(b), b) for b in after if b[0].isdigit())
    worst = next((b for b, key in bounds if late(key) == 0), None)
    return {"samples": int(after["+Inf"] - before["+Inf"]),
            **{f"over_{name}": late(key) for name, key in (
                ("20ms", "0.02"), ("50ms", "0.05"), ("100ms", "0.1"), ("250ms", "0.25"),
                ("1s", "1.0"))},
            "max_below_s": worst, "sum_s": round(after["sum"] - before["sum"], 3),
            "memory_handbacks": int(after.get("handbacks", 0) - before.get("handbacks", 0)),
            "full_collections": int(after.get("gc_count_2", 0) - before.get("gc_count_2", 0)),
            "full_collections_s": round(after.get("gc_sum_2", 0) - before.get("gc_sum_2", 0), 3),
            "full_collections_cpu_s": round(after.get("gc_cpu_2", 0)
                                            - before.get("gc_cpu_2", 0), 3),
            "young_collections_s": round(sum(after.get(f"gc_sum_{g}", 0)
                                             - before.get(f"gc_sum_{g}", 0) for g in "01"), 3),
            "young_collections_cpu_s": round(sum(after.get(f"gc_cpu_{g}", 0)
                                                 - before.get(f"gc_cpu_{g}", 0)
                                                 for g in "01"), 3)}


async def register(url: str, account: Account, source: str) -> None:
    async with await Connection.open(url, local_addr=(source, 0)) as conn:
        authed = await conn.call(p.Register, username=account.name, password=account.password)
        assert isinstance(authed, p.Authed)
        account.token = authed.session_token


async def owner_login(url: str, owner: Account) -> dict[str, Any]:
    """The owner logs in with the right password from an address that sent no wrong one,
    as a patient client would: after ``rate_limited`` (or ``locked_out``) it waits the
    ``retry_after_ms`` it was given and tries again, for up to OWNER_LOGIN_TIMEOUT_S.
    How long it took from the first connection to ``authed``, in how many attempts, or
    why it gave up."""
    t0 = time.monotonic()
    attempts = 0
    last: dict[str, Any] = {}

    def elapsed() -> float:
        return round((time.monotonic() - t0) * 1000, 1)

    while True:
        attempts += 1
        left = OWNER_LOGIN_TIMEOUT_S - (time.monotonic() - t0)
        retry_s: float | None = None
        try:
            conn = await asyncio.wait_for(Connection.open(url, local_addr=(OWNER, 0)),
                                          max(0.1, left))
        except NETWORK_ERRORS as exc:
            return {"ok": False, "ms": elapsed(), "attempts": attempts,
                    "code": close_reason(exc), **last}
        try:
            left = OWNER_LOGIN_TIMEOUT_S - (time.monotonic() - t0)
            await asyncio.wait_for(conn.call(p.Login, username=owner.name,
                                             password=owner.password), max(0.1, left))
            return {"ok": True, "ms": elapsed(), "attempts": attempts, **last}
        except ServerError as exc:
            last = {"refused": exc.code, "retry_after_ms": exc.retry_after_ms}
            if exc.retry_after_ms is not None:
                retry_s = exc.retry_after_ms / 1000
        except NETWORK_ERRORS as exc:
            return {"ok": False, "ms": elapsed(), "attempts": attempts,
                    "code": close_reason(exc), **last}
        finally:
            await conn.close()
        spent = time.monotonic() - t0
        if retry_s is None or spent + retry_s >= OWNER_LOGIN_TIMEOUT_S:
            return {"ok": False, "ms": elapsed(), "attempts": attempts,
                    "code": last["refused"], **last}
        await asyncio.sleep(retry_s)


class Bot:
    """``tessera bot --bot random`` on a bot account, as its author would run it."""

    def __init__(self, server: LocalServer, workdir: Path) -> None:
        token = server.create_bot(BOT_NAME)
        token_file = workdir / "bot.token"
        token_file.write_text(token)
        self.log = workdir / "bot.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "clients.cli", "bot", "--bot", "random",
                 "--server", server.url, "--token-file", str(token_file), "--max-games", "2"],
                stdout=out, stderr=subprocess.STDOUT)

    def stop(self) -> dict[str, Any]:
        """SIGTERM (the games in progress may finish), a second one after 10 s (resign),
        SIGKILL after 20 s: how long it took and what it needed. (A game in progress ends
        at its players' pace: on a loaded machine 5 s was not always enough.)"""
        t0 = time.monotonic()
        signals = 0
        for wait_s in (10.0, 10.0):
            if self.proc.poll() is not None:
                break
            self.proc.send_signal(signal.SIGTERM)
            signals += 1
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(wait_s)
        killed = self.proc.poll() is None
        if killed:
            self.proc.kill()
            self.proc.wait()
        return {"stop_s": round(time.monotonic() - t0, 2), "sigterms": signals,
                "killed": killed, "exit": self.proc.returncode}


@contextlib.asynccontextmanager
async def deployment(workdir: Path, nodes: int, budgets: Budgets, db_url: str,
                     redis_url: str | None) -> AsyncIterator[tuple[list[LocalServer], str]]:
    """The servers of one attack, started, and the database URL they share: one process
    on a SQLite file in ``workdir`` (``nodes`` 1), or a cluster of ``nodes`` from
    :class:`~clients.privatecluster.PrivateCluster` (a PostgreSQL schema of its own on
    ``db_url``, a private redis-server or ``redis_url``). Each is given ``budgets``. On
    exit they are stopped and a cluster's schema is dropped: read the database before."""
    args = budgets.server_args()
    if nodes == 1:
        server = LocalServer(workdir, extra_args=args)
        await asyncio.to_thread(server.start)
        try:
            yield [server], server.db_url
        finally:
            await asyncio.to_thread(server.stop)
        return
    async with PrivateCluster(workdir, nodes, db_url=db_url, redis_url=redis_url,
                              extra_args=tuple(args)) as cluster:
        first, *others = cluster.nodes
        await asyncio.to_thread(first.start)  # it brings the new schema up to date
        await asyncio.gather(*(asyncio.to_thread(node.start) for node in others))
        yield cluster.nodes, cluster.db_url


async def siege(name: str, params: dict[str, Any], workdir: Path, *, quiet_s: float,
                settle_s: float, nodes: int = 1, budgets: Budgets | None = None,
                db_url: str = DEFAULT_DB, redis_url: str | None = None) -> dict[str, Any]:
    """Run attack ``name`` against fresh servers in ``workdir`` (one process, or a cluster
    of ``nodes``: :func:`deployment`); every figure."""
    workdir.mkdir(parents=True, exist_ok=True)
    budgets = budgets or Budgets()
    async with deployment(workdir, nodes, budgets, db_url, redis_url) as (servers, db):
        out = await besiege(name, params, workdir, servers, db, quiet_s=quiet_s,
                            settle_s=settle_s)
    out["budgets"] = dataclasses.asdict(budgets)
    return out


async def besiege(name: str, params: dict[str, Any], workdir: Path, servers: list[LocalServer],
                  db_url: str, *, quiet_s: float, settle_s: float) -> dict[str, Any]:
    """Attack ``servers`` (started; one, or a cluster's nodes sharing ``db_url``) with the
    canaries beside them, stop them and read what they stored. On a cluster the canaries
    sit on different nodes: the pinger on the first, the move canary's players on the
    second and third (their games cross nodes), the owner registered on the first and
    logging in on the last; ``/healthz`` is polled on every node."""
    procs: list[Process] = []
    for server in servers:
        assert server.pid is not None
        procs.append(Process(server.pid, server.port))
    ports = [server.port for server in servers]

    def on(index: int) -> str:
        return servers[index % len(servers)].url

    phase = Phase()
    owner = Account("owner", "owner-password-1")
    pinger, mover_a, mover_b = (Account(n, f"{n}-password-1") for n in ("pinger", "white",
                                                                            "black"))
    out: dict[str, Any] = {"attack": name, "params": params, "nodes": len(servers)}
    bot: Bot | None = None
    canaries: list[Any] = []
    samplers: list[asyncio.Task[None]] = []
    try:
        await asyncio.gather(*(  # a password hash each: at once
            register(on(node), acc, OWNER if acc is owner else f"127.0.0.{10 + k}")
            for k, (acc, node) in enumerate(((owner, 0), (pinger, 0), (mover_a, 1),
                                             (mover_b, 2)))))
        ping = PingCanary(on(0), phase, pinger)
        move = MoveCanary((on(1), on(2)), phase, mover_a, mover_b)
        health = HealthProbe(on(0), phase, ports)
        canaries = [ping, move, health]
        botc: BotCanary | None = None
        if name == "challenge-flood":
            bot = await asyncio.to_thread(Bot, servers[0], workdir)
            player = Account("botfan", "botfan-password-1")
            await register(on(1), player, "127.0.0.14")
            botc = BotCanary(on(1), phase, player, BOT_NAME)
            await asyncio.sleep(1.0)  # the bot logs in
            canaries.append(botc)
        for c in canaries:
            c.start()
        await asyncio.sleep(quiet_s)
        out["server_open_files_limit"] = min((lim for proc in procs
                                              if (lim := proc.open_files_limit()) is not None),
                                             default=None)
        rows_before = await asyncio.to_thread(row_counts, db_url)
        logs_before = [server.log.stat().st_size for server in servers]
        rss_before = [proc.rss_mb() for proc in procs]
        fds_before = [proc.fds() for proc in procs]
        held_before = [proc.connections() for proc in procs]
        for proc, rss in zip(procs, rss_before, strict=True):
            proc.rss_peak_mb = rss
        samplers = [asyncio.create_task(proc.sample()) for proc in procs]
        out["load_average"] = [round(x, 2) for x in os.getloadavg()]
        cpu_before = [proc.cpu_s() for proc in procs]
        lags_before = await asyncio.gather(*(loop_lag(port) for port in ports))
        phase.name = "attack"
        out["attacker"], out["owner_login"] = await attack(name, ports, params, on(-1), owner)
        cpu_attack = [proc.cpu_s() - cpu for proc, cpu in zip(procs, cpu_before, strict=True)]
        lags_after = await asyncio.gather(*(loop_lag(port) for port in ports))
        phase.name = "after"
        drained = await asyncio.gather(*(proc.drained(held, DRAIN_TIMEOUT_S)
                                         for proc, held in zip(procs, held_before,
                                                               strict=True)))
        await asyncio.sleep(settle_s)
        if name in ("lockout", "login-flood"):
            out["owner_login"]["after"] = await owner_login(on(-1), owner)
        out["server"], out["loop_lag_during_attack"] = over_nodes([
            ({"rss_mb": {"before": round(rss_before[i], 1), "peak": round(proc.rss_peak_mb, 1),
                         "after": round(proc.rss_mb(), 1)},
              "open_files_peak": proc.fds_peak, "open_files_before": fds_before[i],
              "open_files_after": proc.fds(), "connections_before": held_before[i],
              "connections_after": proc.connections(), "drain_s": drained[i],
              "cpu_s_during_attack": round(cpu_attack[i], 2),
              "log_bytes_added": servers[i].log.stat().st_size - logs_before[i]},
             lag_summary(lags_before[i], lags_after[i]))
            for i, proc in enumerate(procs)])
        if bot is not None:  # told to stop while its opponent still plays, as in life
            out["bot_stop"] = await asyncio.to_thread(bot.stop)
        for c in canaries:
            await c.stop()
        out["canaries"] = {"ping": ping.samples.summary(), "move": move.samples.summary(),
                           "healthz": health.samples.summary()}
        out["canaries"]["move"]["games"] = move.games
        out["canaries"]["move"]["acknowledged"] = len(move.acked)
        if len(servers) > 1:
            out["canaries"]["healthz_by_node"] = [polled(node) for node in health.by_node]
        if botc is not None:
            out["bot"] = {"games_with_canary": dict(botc.finished),
                          "canary_challenges_ended": dict(botc.declined),
                          "time_to_game": botc.samples.summary()}
    finally:
        for sampler in samplers:
            sampler.cancel()
        for c in canaries:
            await c.stop()
        if bot is not None:  # stopped above, unless the run failed before
            stopped = out.pop("bot_stop", None) or await asyncio.to_thread(bot.stop)
            out.setdefault("bot", {})["stop"] = stopped
        exits = await asyncio.gather(*(asyncio.to_thread(server.stop) for server in servers))
        out["server_exit"] = exits[0] if len(exits) == 1 else exits
    rows_after, stored = await asyncio.gather(asyncio.to_thread(row_counts, db_url),
                                              asyncio.to_thread(stored_moves, db_url))
    out["rows_added"] = {t: n - rows_before.get(t, 0) for t, n in rows_after.items()
                         if n != rows_before.get(t, 0)}
    out["acked_moves_lost"] = sum(1 for key, text in move.acked.items()
                                  if stored.get(key) != text)
    out["_samples"] = {"move": move.samples, "ping": ping.samples, "healthz": health.samples}
    return out


def over_nodes(nodes: list[tuple[dict[str, Any], dict[str, Any]]]
               ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The server's figures and its loop lag over its nodes (each node's figures and lag
    summary): one process's as they are; on a cluster, the RSS of the node whose memory
    grew most (after over before, as the memory target judges), the open files of the
    node that held most, the longest drain (None if a node did not drain), CPU and log
    growth summed, the lag of the node that lagged most, and each node's as well."""
    if len(nodes) == 1:
        return nodes[0]
    figures = [fig for fig, _ in nodes]
    grew = max(range(len(nodes)), key=lambda i: figures[i]["rss_mb"]["after"]
               / max(figures[i]["rss_mb"]["before"], 1e-9))
    held = max(range(len(nodes)), key=lambda i: figures[i]["open_files_peak"])
    lagged = max(range(len(nodes)), key=lambda i: nodes[i][1].get("sum_s", 0.0))
    drains = [fig["drain_s"] for fig in figures]
    server = {"rss_mb": figures[grew]["rss_mb"], "rss_node": grew,
              **{k: figures[held][k] for k in ("open_files_peak", "open_files_before",
                                               "open_files_after")},
              "open_files_node": held,
              "drain_s": None if None in drains else max(drains),
              "cpu_s_during_attack": round(sum(f["cpu_s_during_attack"] for f in figures), 2),
              "log_bytes_added": sum(f["log_bytes_added"] for f in figures),
              "nodes": [{**fig, "loop_lag_during_attack": lag} for fig, lag in nodes]}
    return server, {**nodes[lagged][1], "node": lagged}


def polled(samples: Samples) -> dict[str, Any]:
    """One node's ``/healthz`` polls over the whole run: answered, failed, the slowest."""
    every = ("quiet", "attack", "after")
    answered = samples.during(every)
    return {"answered": len(answered), "failures": samples.count("failures", every),
            "max_ms": round(max(answered), 1) if answered else None}


async def attack(name: str, ports: list[int], params: dict[str, Any], url: str,
                 owner: Account) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the attacker process(es) against ``ports`` (one process's, or every node's);
    the owner logs in at ``url`` once the first wave is in."""
    waves = [params]
    if name == "fd-exhaustion":  # one process's open-files limit is not enough
        per = params["per_process"]
        total = params["connections"]
        waves = [{**params, "connections": min(per, total - k), "offset": k}
                 for k in range(0, total, per)]
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-m", "clients.siege.attacks", name, ",".join(map(str, ports)),
        json.dumps(w), stdout=asyncio.subprocess.PIPE) for w in waves]
    readies = [asyncio.create_task(wait_ready(pr)) for pr in procs]
    await asyncio.wait(readies, timeout=params["seconds"] + 120)
    during = await owner_login(url, owner)
    results: list[dict[str, Any]] = []
    for pr, ready in zip(procs, readies, strict=True):
        try:
            await asyncio.wait_for(ready, params["seconds"] + 120)
            assert pr.stdout is not None
            data, _ = await asyncio.wait_for(pr.communicate(), params["seconds"] + 120)
            lines = data.decode().strip().splitlines()
            results.append(json.loads(lines[-1]) if lines else {"error": "no output"})
        except (TimeoutError, json.JSONDecodeError) as exc:
            with contextlib.suppress(ProcessLookupError):
                pr.kill()
            results.append({"error": close_reason(exc)})
    return merge(results), {"during": during}


async def wait_ready(pr: asyncio.subprocess.Process) -> None:
    assert pr.stdout is not None
    while True:
        line = await pr.stdout.readline()
        if not line or line.strip() == b"ready":
            return


def merge(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Several attacker processes' tallies as one (counts and CPU added, durations the
    longest)."""
    if len(results) == 1:
        return results[0]
    out: dict[str, Any] = {"processes": len(results)}
    for r in results:
        for k, v in r.items():
            if isinstance(v, float) and k != "cpu_s":  # durations: the longest
                out[k] = max(out.get(k, 0.0), v)
            elif isinstance(v, int | float) and not isinstance(v, bool):
                out[k] = round(out.get(k, 0) + v, 2)
            elif isinstance(v, dict) and all(isinstance(x, int) for x in v.values()):
                acc = out.setdefault(k, {})
                for kk, vv in v.items():
                    acc[kk] = acc.get(kk, 0) + vv
            else:
                out.setdefault(k, v)
    return out

