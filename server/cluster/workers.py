"""``tessera serve --workers N``: N node processes on one port, supervised.

One Python process uses one core; a machine with more is used by running one node per core.
The supervisor starts N ``python -m server serve`` processes with the same flags, each
with a node id of its own (``NODE-1`` ... ``NODE-N``) and listening on the same port with
``SO_REUSEPORT``, so the kernel spreads new connections over them. It serves nothing itself:

- a worker that exits (crashes, is killed) is started again, after a pause that doubles
  with each quick failure in a row (``backoff_s``), so a worker that cannot start does not
  spin; a worker that ran ``stable_s`` resets the pause;
- SIGTERM (or SIGINT) is passed to every worker, which stops cleanly as a lone server does
  (connections closed with 1001, everything acknowledged stored); a worker that has not
  exited after ``stop_timeout_s`` is killed; then the supervisor exits 0;
- SIGHUP is passed to every worker (with ``--tls-cert``: each loads the certificate again);
- with ``--port 0`` it picks the port first, and keeps a socket bound to it (never
  listening, so it is given no connections) so that no other program takes the port
  while a worker restarts;
- ``--ready-file`` is written (the port) once every worker is listening;
- on Linux each worker is sent SIGTERM by the kernel if the supervisor itself dies (even by
  SIGKILL), so no worker outlives it unsupervised.

The workers are nodes of the cluster (``--cluster``), which is what lets them share games;
``serve_flags_problem`` refuses ``--workers`` above 1 without it and PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import ctypes.util
import logging
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from ..config import Settings, flag_of

log = logging.getLogger(__name__)

SETTINGS = Settings.__dataclass_fields__

# serve flags the supervisor sets per worker instead of passing on
PER_WORKER = {"workers", "node_id", "port", "ready_file", "reuse_port", "serve_parser",
              "house_bots"}  # the house bots run in the first worker only


def worker_argv(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[str]:
    """The serve flags given to the supervisor, as a worker's command line: every option of
    ``parser`` whose value is not its default, but those set per worker (``PER_WORKER``).
    A :class:`Settings` field's value is written back as its flag shows it."""
    argv: list[str] = []
    for action in parser._actions:  # argparse's declared options: the flags, derived
        if not action.option_strings or action.dest in PER_WORKER:
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default:  # None may be a value: --ping-interval 0
            continue
        flag = action.option_strings[-1]
        show = flag_of(action.dest).show if action.dest in SETTINGS else str
        if action.nargs == 0:  # a switch (store_true)
            argv.append(flag)
        elif isinstance(value, list):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv += [flag, show(value)]
    return argv


PR_SET_PDEATHSIG = 1  # prctl(2)


def _stop_with_parent() -> None:
    """In the worker before it runs (Linux): SIGTERM when the supervisor dies. Elsewhere,
    nothing (the supervisor still stops its workers on every clean exit)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def reserve_port(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` with SO_REUSEPORT (port 0: a free one), not
    listening: it holds the port for the workers, which bind it too."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    holder = socket.socket(family, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    holder.bind((host, port))
    return holder


class Supervisor:
    """Runs and restarts worker processes; see the module docstring."""

    def __init__(
        self,
        commands: Sequence[Sequence[str]],
        *,
        ready_files: Sequence[Path] = (),
        backoff_s: tuple[float, float] = (0.5, 30.0),
        stable_s: float = 10.0,
        stop_timeout_s: float = 30.0,
    ) -> None:
        """``commands[i]`` starts worker i; it writes ``ready_files[i]`` once listening."""
        self.commands = [list(command) for command in commands]
        self.ready_files = list(ready_files)
        self.backoff_s = backoff_s
        self.stable_s = stable_s
        self.stop_timeout_s = stop_timeout_s
        self.processes: list[asyncio.subprocess.Process | None] = [None] * len(commands)
        self.restarts = [0] * len(commands)
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        """Begin a clean stop (what SIGTERM does)."""
        self._stopping.set()

    def pass_on(self, sig: int) -> None:
        """Send ``sig`` to every worker running now."""
        for process in self.processes:
            if process is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(sig)

    async def run(self, ready: Path | None = None, port: int | None = None) -> int:
        """Run until ``stop()``; write ``port`` to ``ready`` once every worker is ready."""
        keepers = [asyncio.create_task(self._keep(index)) for index in range(len(self.commands))]
        try:
            if ready is not None and port is not None:
                await self._announce(ready, port)
            await self._stopping.wait()
        finally:
            self._stopping.set()
            await self._stop_all()
            for keeper in keepers:
                keeper.cancel()
            await asyncio.gather(*keepers, return_exceptions=True)
        return 0

    async def _keep(self, index: int) -> None:
        failures = 0
        while not self._stopping.is_set():
            if index < len(self.ready_files):
                self.ready_files[index].unlink(missing_ok=True)
            started = time.monotonic()
            process = await asyncio.create_subprocess_exec(
                *self.commands[index], stdin=asyncio.subprocess.DEVNULL,
                preexec_fn=_stop_with_parent)
            self.processes[index] = process
            code = await process.wait()
            if self._stopping.is_set():
                return
            failures = 0 if time.monotonic() - started >= self.stable_s else failures + 1
            first, longest = self.backoff_s
            pause = min(longest, first * 2 ** max(0, failures - 1))
            print(f"tessera: worker {index + 1} (pid {process.pid}) exited with {code}; "
                  f"starting it again in {pause:g} s", file=sys.stderr, flush=True)
            self.restarts[index] += 1
            with contextlib.suppress(TimeoutError):  # not wait_for: it can lose a cancel
                async with asyncio.timeout(pause):
                    await self._stopping.wait()

    async def _announce(self, ready: Path, port: int) -> None:
        while not all(path.exists() for path in self.ready_files):
            await asyncio.sleep(0.05)
        ready.write_text(f"{port}\n")

    async def _stop_all(self) -> None:
        live = [p for p in self.processes if p is not None and p.returncode is None]
        for process in live:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(self.stop_timeout_s):
                await asyncio.gather(*(p.wait() for p in live))
        except TimeoutError:
            for process in live:
                if process.returncode is None:
                    log.error("worker %d did not stop in time: killed", process.pid)
                    with contextlib.suppress(ProcessLookupError):
                        process.kill()
            await asyncio.gather(*(p.wait() for p in live))


def run_workers(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``tessera serve --workers N`` (flags already checked by ``serve_flags_problem``)."""
    from ..wsio import CannotListen, listen_problem
    from .config import default_node_id

    base = args.node_id or default_node_id()
    try:
        holder = reserve_port(args.host, args.port)
    except OSError as exc:
        raise CannotListen(listen_problem(args.host, args.port, exc)) from None
    port = holder.getsockname()[1]
    common = worker_argv(args, parser)
    with tempfile.TemporaryDirectory(prefix="tessera-workers-") as scratch:
        ready_files = [Path(scratch) / f"worker-{i + 1}.port" for i in range(args.workers)]
        commands = [[sys.executable, "-m", "server", "serve", *common,
                     "--node-id", f"{base}-{i + 1}", "--port", str(port), "--reuse-port",
                     "--ready-file", str(ready_files[i])] for i in range(args.workers)]
        if args.house_bots:
            commands[0] += ["--house-bots", flag_of("house_bots").show(args.house_bots)]
        supervisor = Supervisor(commands, ready_files=ready_files)

        async def main() -> int:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, supervisor.stop)
            loop.add_signal_handler(signal.SIGHUP, supervisor.pass_on, signal.SIGHUP)
            print(f"tessera: {args.workers} workers on ws://{args.host}:{port}/ws "
                  f"(supervisor pid {os.getpid()})", flush=True)
            return await supervisor.run(Path(args.ready_file) if args.ready_file else None,
                                        port)

        try:
            return asyncio.run(main())
        finally:
            holder.close()
