"""Bytes on a socket for ``tessera siege``: loopback source addresses, a websocket that
stops after the handshake, hand-made frames, a ``/healthz`` probe and the tally of what an
attacker got back.

The attacks that must not speak the protocol properly (connections that never say hello,
half-sent handshakes, frames no library would send) use these instead of
:class:`clients.connection.Connection`.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

ATTACKER = "127.0.0.1"  # the one address of single-host attacks
CANARY = "127.0.0.2"  # the ping and move canaries and the /healthz probe
OWNER = "127.0.0.3"  # the account owner, who never sent a wrong password
CLOSE_EOF = "eof"  # the server closed the TCP connection without a close frame
CLOSE_RESET = "reset"


def spread_address(i: int) -> str:
    """The i-th of 62,500 loopback addresses 127.1.0.1 .. 127.1.249.250 (attackers that
    pose as many hosts; Linux answers for all of 127.0.0.0/8)."""
    return f"127.1.{(i // 250) % 250}.{i % 250 + 1}"


def handshake_request(port: int, path: str = "/ws") -> bytes:
    return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n").encode()


def frame(payload: bytes, opcode: int = 2, announce: int | None = None) -> bytes:
    """A masked client frame; ``announce`` puts another length in the header (a lie)."""
    length = len(payload) if announce is None else announce
    head = bytes([0x80 | opcode])
    if length < 126:
        head += bytes([0x80 | length])
    elif length < 1 << 16:
        head += bytes([0x80 | 126]) + length.to_bytes(2, "big")
    else:
        head += bytes([0x80 | 127]) + length.to_bytes(8, "big")
    mask = os.urandom(4)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def close_reason(exc: BaseException) -> str:
    """How a connection attempt or a connection ended, as one short key."""
    if isinstance(exc, asyncio.IncompleteReadError | ConnectionResetError | BrokenPipeError):
        return CLOSE_RESET if isinstance(exc, ConnectionResetError) else CLOSE_EOF
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return "timeout"
    if isinstance(exc, OSError) and exc.errno is not None:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return type(exc).__name__


@dataclass
class Tally:
    """What an attacker got: requests or connections accepted, refusals by error code (or
    HTTP status), connections closed by close code, connection failures by reason."""

    accepted: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    closed: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"accepted": self.accepted, "refused": dict(self.refused),
                "closed": dict(self.closed), "failed": dict(self.failed), **self.extra}

    def add(self, other: Tally) -> None:
        """Count ``other``'s answers here too (its ``extra`` is not merged)."""
        self.accepted += other.accepted
        self.refused.update(other.refused)
        self.closed.update(other.closed)
        self.failed.update(other.failed)


class RawSocket:
    """One TCP connection to the server driven by hand."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.opened = time.monotonic()
        self.ended: str | None = None  # close code, CLOSE_EOF, ...
        self.lifetime: float | None = None

    @classmethod
    async def connect(cls, port: int, source: str, timeout: float = 10.0) -> RawSocket:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0), limit=1 << 16),
            timeout)
        return cls(reader, writer)

    async def handshake(self, port: int, timeout: float = 10.0) -> int:
        """Send a websocket upgrade request; the HTTP status of the answer (101: upgraded)."""
        self.writer.write(handshake_request(port))
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), timeout)
        return int(head.split(b" ", 2)[1])

    async def next_frame(self) -> tuple[int, bytes]:
        """The next server frame (opcode, payload); server frames are never masked."""
        h = await self.reader.readexactly(2)
        n = h[1] & 0x7F
        if n == 126:
            n = int.from_bytes(await self.reader.readexactly(2), "big")
        elif n == 127:
            n = int.from_bytes(await self.reader.readexactly(8), "big")
        return h[0] & 0x0F, await self.reader.readexactly(n)

    async def idle(self, answer_pings: bool = True) -> str:
        """Read until the server ends the connection, answering pings (an idle client that
        is alive); how it ended: the close code, or CLOSE_EOF / CLOSE_RESET."""
        try:
            while True:
                opcode, payload = await self.next_frame()
                if opcode == 8:
                    code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
                    self.end(str(code))
                    break
                if opcode == 9 and answer_pings:
                    self.writer.write(frame(payload, opcode=10))
        except (OSError, asyncio.IncompleteReadError) as exc:
            self.end(close_reason(exc))
        return self.ended or CLOSE_EOF

    async def wait_closed_by_server(self) -> str:
        """Read (HTTP or nothing) until the server closes; CLOSE_EOF or CLOSE_RESET."""
        try:
            while await self.reader.read(4096):
                pass
            self.end(CLOSE_EOF)
        except OSError as exc:
            self.end(close_reason(exc))
        return self.ended or CLOSE_EOF

    def end(self, how: str) -> None:
        if self.ended is None:
            self.ended = how
            self.lifetime = time.monotonic() - self.opened

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.transport.abort()


async def healthz(port: int, source: str = CANARY, timeout: float = 2.0) -> str | None:
    """GET /healthz: None if it answered 200, else what went wrong."""
    writer: asyncio.StreamWriter | None = None
    try:
        try:
            reader, opened = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0)), timeout)
        except TimeoutError:
            return "connect_timeout"  # not accepted in time (a full accept queue drops SYNs)
        writer = opened
        opened.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        line = await asyncio.wait_for(reader.readline(), timeout)
        status = line.split(b" ", 2)[1].decode() if line.count(b" ") >= 1 else "none"
        return None if status == "200" else f"http_{status}"
    except (TimeoutError, OSError, IndexError) as exc:
        return close_reason(exc)
    finally:
        if writer is not None:
            writer.transport.abort()


async def loop_lag(port: int, source: str = CANARY, timeout: float = 15.0) -> dict[str, float]:
    """The server's ``tessera_loop_lag_seconds`` histogram from ``/metrics``: cumulative
    counts by upper bound (``"+Inf"`` is every sample), and its collections' count, seconds
    and CPU seconds by generation (``gc_count_2``, ``gc_sum_2``, ``gc_cpu_2``); empty if it
    did not answer."""
    writer: asyncio.StreamWriter | None = None
    try:
        reader, opened = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0)), timeout)
        writer = opened
        opened.write(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        body = await asyncio.wait_for(reader.read(), timeout)
    except (TimeoutError, OSError):
        return {}
    finally:
        if writer is not None:
            writer.transport.abort()
    out: dict[str, float] = {}
    for line in body.decode(errors="replace").splitlines():
        if line.startswith("tessera_loop_lag_seconds_bucket{"):
            bound = line.split('le="', 1)[1].split('"', 1)[0]
            out[bound] = float(line.rsplit(" ", 1)[1])
        elif line.startswith("tessera_loop_lag_seconds_sum "):
            out["sum"] = float(line.rsplit(" ", 1)[1])
        elif line.startswith("tessera_memory_handbacks_total "):
            out["handbacks"] = float(line.rsplit(" ", 1)[1])
        elif line.startswith(("tessera_gc_seconds_count{", "tessera_gc_seconds_sum{")):
            kind = "gc_count" if "_count{" in line else "gc_sum"
            generation = line.split('generation="', 1)[1].split('"', 1)[0]
            out[f"{kind}_{generation}"] = float(line.rsplit(" ", 1)[1])
        elif line.startswith("tessera_gc_cpu_seconds_total{"):
            generation = line.split('generation="', 1)[1].split('"', 1)[0]
            out[f"gc_cpu_{generation}"] = float(line.rsplit(" ", 1)[1])
    return out


def sock_count_limit() -> int:
    """Raise this process's open-files soft limit to its hard limit; the new soft limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return max(soft, hard)

