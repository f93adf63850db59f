"""One siege: a fresh server, its canaries, one attack, and the figures.

The server is started as shipped (``python -m server serve``, :class:`LocalServer`) on a
free loopback port with a SQLite file in a temporary directory. The run goes through three
phases: ``quiet`` (canaries only), ``attack`` (the attacker process runs), ``after``
(once the attacker has exited and the server too has closed its connections: its open
files back to within DRAIN_SLACK_FILES of before, waiting up to DRAIN_TIMEOUT_S; then
``settle`` seconds). The server's resident memory is read from ``/proc/PID/status``
(before the attack, its peak during it, at the end of ``after``), its open files from
``/proc/PID/fd`` (the same three times), and the rows
added to each table from the SQLite file, read-only, once the server has stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import protocol as p

from ..connection import Connection, ServerError
from ..localserver import LocalServer
from ..stored import row_counts, stored_moves
from .canaries import NETWORK_ERRORS, Account, BotCanary, HealthProbe, MoveCanary, Phase, PingCanary
from .raw import OWNER, close_reason, loop_lag

OWNER_LOGIN_TIMEOUT_S = 10.0
DRAIN_TIMEOUT_S = 60.0  # the longest wait for the attacker's connections to close server-side
DRAIN_SLACK_FILES = 16  # "closed": the server holds at most this many files more than before
BOT_NAME = "siegebot"


class Process:
    """What /proc says about the server process."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
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
        """Wait until the process holds about as many files as ``before`` (the attacker's
        connections closed on the server's side too, not only on the attacker's), for up
        to ``timeout_s``: how long it took, or None if they were still open then."""
        t0 = time.monotonic()
        while self.fds() > before + DRAIN_SLACK_FILES:
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


async def siege(name: str, params: dict[str, Any], workdir: Path, *, quiet_s: float,
                settle_s: float) -> dict[str, Any]:
    """Run attack ``name`` against a fresh server in ``workdir``; every figure."""
    workdir.mkdir(parents=True, exist_ok=True)
    server = LocalServer(workdir)
    db_url = server.db_url
    await asyncio.to_thread(server.start)
    assert server.pid is not None
    proc = Process(server.pid)
    url = server.url
    phase = Phase()
    owner = Account("owner", "owner-password-1")
    pinger, mover_a, mover_b = (Account(n, f"{n}-password-1") for n in ("pinger", "white",
                                                                            "black"))
    out: dict[str, Any] = {"attack": name, "params": params}
    bot: Bot | None = None
    canaries: list[Any] = []
    sampler: asyncio.Task[None] | None = None
    try:
        for k, acc in enumerate((owner, pinger, mover_a, mover_b)):
            await register(url, acc, OWNER if acc is owner else f"127.0.0.{10 + k}")
        ping = PingCanary(url, phase, pinger)
        move = MoveCanary(url, phase, mover_a, mover_b)
        health = HealthProbe(url, phase, server.port)
        canaries = [ping, move, health]
        botc: BotCanary | None = None
        if name == "challenge-flood":
            bot = await asyncio.to_thread(Bot, server, workdir)
            player = Account("botfan", "botfan-password-1")
            await register(url, player, "127.0.0.14")
            botc = BotCanary(url, phase, player, BOT_NAME)
            await asyncio.sleep(1.0)  # the bot logs in
            canaries.append(botc)
        for c in canaries:
            c.start()
        await asyncio.sleep(quiet_s)
        out["server_open_files_limit"] = proc.open_files_limit()
        rows_before = await asyncio.to_thread(row_counts, db_url)
        log_before = server.log.stat().st_size
        rss_before = proc.rss_mb()
        fds_before = proc.fds()
        proc.rss_peak_mb = rss_before
        sampler = asyncio.create_task(proc.sample())
        out["load_average"] = [round(x, 2) for x in os.getloadavg()]
        cpu_before = proc.cpu_s()
        lag_before = await loop_lag(server.port)
        phase.name = "attack"
        out["attacker"], out["owner_login"] = await attack(name, server.port, params, url,
                                                           owner)
        cpu_attack = proc.cpu_s() - cpu_before
        out["loop_lag_during_attack"] = lag_summary(lag_before, await loop_lag(server.port))
        phase.name = "after"
        drained = await proc.drained(fds_before, DRAIN_TIMEOUT_S)
        await asyncio.sleep(settle_s)
        if name in ("lockout", "login-flood"):
            out["owner_login"]["after"] = await owner_login(url, owner)
        rss_after = proc.rss_mb()
        out["server"] = {"rss_mb": {"before": round(rss_before, 1),
                                    "peak": round(proc.rss_peak_mb, 1),
                                    "after": round(rss_after, 1)},
                         "open_files_peak": proc.fds_peak,
                         "open_files_before": fds_before, "open_files_after": proc.fds(),
                         "drain_s": drained,
                         "cpu_s_during_attack": round(cpu_attack, 2),
                         "log_bytes_added": server.log.stat().st_size - log_before}
        for c in canaries:
            await c.stop()
        out["canaries"] = {"ping": ping.samples.summary(), "move": move.samples.summary(),
                           "healthz": health.samples.summary()}
        out["canaries"]["move"]["games"] = move.games
        out["canaries"]["move"]["acknowledged"] = len(move.acked)
        if botc is not None:
            out["bot"] = {"games_with_canary": dict(botc.finished),
                          "canary_challenges_ended": dict(botc.declined),
                          "time_to_game": botc.samples.summary()}
    finally:
        if sampler is not None:
            sampler.cancel()
        for c in canaries:
            await c.stop()
        if bot is not None:
            stopped = await asyncio.to_thread(bot.stop)
            out.setdefault("bot", {})["stop"] = stopped
        out["server_exit"] = await asyncio.to_thread(server.stop)
    rows_after = await asyncio.to_thread(row_counts, db_url)
    out["rows_added"] = {t: n - rows_before.get(t, 0) for t, n in rows_after.items()
                         if n != rows_before.get(t, 0)}
    stored = await asyncio.to_thread(stored_moves, db_url)
    out["acked_moves_lost"] = sum(1 for key, text in move.acked.items()
                                  if stored.get(key) != text)
    out["_samples"] = {"move": move.samples, "ping": ping.samples, "healthz": health.samples}
    return out


async def attack(name: str, port: int, params: dict[str, Any], url: str, owner: Account
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the attacker process(es); the owner logs in once the first wave is in."""
    waves = [params]
    if name == "fd-exhaustion":  # one process's open-files limit is not enough
        per = params["per_process"]
        total = params["connections"]
        waves = [{**params, "connections": min(per, total - k), "offset": k}
                 for k in range(0, total, per)]
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-m", "clients.siege.attacks", name, str(port), json.dumps(w),
        stdout=asyncio.subprocess.PIPE) for w in waves]
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

