"""A Tessera server as a child process, for tools and tests that need their own.

The arena, the crash test, botcheck and the client tests start ``python -m server serve``
this way (never by importing ``server``): on a fixed free port, so clients can reconnect to
the same address after a restart, with a SQLite file of their choosing. Besides starting and
stopping it, a tool can freeze it (SIGSTOP: a stalled server, whose sockets still take what
clients send), see what clients sent that it has not read, and read its ``/metrics``.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Collection, Sequence
from pathlib import Path

from .stored import sqlite_file_url

START_TIMEOUT_S = 60.0
PROC_NET_TCP = Path("/proc/net/tcp")  # Linux: IPv4 sockets, with their queues
TCP_ESTABLISHED = "01"


PORT_TRIES = 3
IN_USE = "is already in use"  # what the server says of a port it cannot listen on


class PortTaken(RuntimeError):
    """The port was taken by another process before the server could listen on it."""


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LocalServer:
    """``python -m server serve`` in ``directory``: start, stop (SIGTERM), kill (SIGKILL),
    freeze (SIGSTOP) and thaw (SIGCONT).

    ``extra_args`` go to ``serve`` (e.g. ``["--grace", "1"]``). The log of every start is
    appended to ``directory/server.log``.
    """

    def __init__(self, directory: Path, *, db_url: str | None = None, port: int | None = None,
                 extra_args: Sequence[str] = (), log_level: str = "warning") -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.db_url = db_url or sqlite_file_url(directory / 'tessera.db')
        self.port = port or free_port()
        self._port_chosen_here = port is None  # another may be taken if it is gone first
        self.extra_args = list(extra_args)
        self.log_level = log_level
        self.log = directory / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.frozen = False

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        """Start the server (again) and wait until it listens. On its first start, a port
        picked here that another process took meanwhile (a free port is only free when it
        is asked for) is given up for another; a restart keeps its port."""
        for _ in range(PORT_TRIES - 1):
            try:
                return self._start(timeout)
            except PortTaken:
                if not self._port_chosen_here or self.starts > 1:
                    raise
                self.port = free_port()
        self._start(timeout)

    def _start(self, timeout: float) -> None:
        self.starts += 1
        ready = self.directory / "ready"
        log_from = self.log.stat().st_size if self.log.exists() else 0
        ready.unlink(missing_ok=True)
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "server", "serve", "--port", str(self.port),
                 "--db", self.db_url, "--ready-file", str(ready),
                 "--log-level", self.log_level, *self.extra_args],
                stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not (ready.exists() and ready.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                said = self.log.read_bytes()[log_from:].decode(errors="replace")
                if IN_USE in said:
                    self.starts -= 1
                    raise PortTaken(said)
                raise RuntimeError(f"the server did not start:\n{self.log_tail()}")
            time.sleep(0.05)

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM and wait (SIGKILL if it does not stop in time); the exit status."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            if self.frozen:  # a stopped process handles its SIGTERM once it runs again
                proc.send_signal(signal.SIGCONT)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def kill(self) -> None:
        """SIGKILL: a crash, with no close frames and nothing flushed on purpose."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        self.frozen = False

    def freeze(self) -> None:
        """SIGSTOP: the server stalls (as on a swapped-out or overloaded host); its sockets
        still take what clients send, unread, and nothing is answered until :meth:`thaw`."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGSTOP)
            self.frozen = True

    def thaw(self) -> None:
        """SIGCONT: a frozen server runs on, reading what came meanwhile."""
        if self.proc is not None and self.frozen:
            self.proc.send_signal(signal.SIGCONT)
        self.frozen = False

    def unread_bytes(self, except_ports: Collection[int] = ()) -> int | None:
        """Bytes that clients sent and the server has not read yet: the receive queues of its
        connections, from the kernel's table (``/proc/net/tcp``), leaving out connections
        from the client ports ``except_ports``. None where the kernel shows no such table.
        While the server is frozen, this is what the other clients sent meanwhile."""
        try:
            lines = PROC_NET_TCP.read_text().splitlines()[1:]
        except OSError:
            return None
        unread = 0
        for line in lines:
            fields = line.split()
            local, remote, state, queues = fields[1], fields[2], fields[3], fields[4]
            if (state == TCP_ESTABLISHED and int(local.split(":")[1], 16) == self.port
                    and int(remote.split(":")[1], 16) not in except_ports):
                unread += int(queues.split(":")[1], 16)
        return unread

    def metric(self, name: str) -> dict[str, float]:
        """The samples of counter or gauge ``name`` on ``/metrics``, by their labels as
        written there (``'code="forbidden"'``; ``''`` for a sample without labels)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics",
                                    timeout=30) as reply:
            text = reply.read().decode()
        samples: dict[str, float] = {}
        for line in text.splitlines():
            sample, _, value = line.rpartition(" ")
            metric, _, labels = sample.partition("{")
            if metric == name:
                samples[labels.rstrip("}")] = float(value)
        return samples

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def admin(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """Run ``python -m server admin ARGS --db <this database>``."""
        return subprocess.run([sys.executable, "-m", "server", "admin", *args,
                               "--db", self.db_url],
                              capture_output=True, text=True, timeout=timeout)

    def create_bot(self, name: str) -> str:
        """A bot token for account ``name`` (created, or given a new token if it exists)."""
        done = self.admin("create-bot", name)
        if done.returncode != 0 and "taken" in done.stderr:
            done = self.admin("new-token", name)
        found = re.search(r"^token \d+: (\S+)$", done.stdout, re.MULTILINE)
        if done.returncode != 0 or not found:
            raise RuntimeError(f"cannot create bot account {name}: {done.stderr.strip()}")
        return found.group(1)
