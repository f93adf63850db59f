"""Client addresses behind a reverse proxy (``--trusted-proxy``): the forwarding headers
are read from trusted peers only, from the right; per-address limits count the client.

End to end with Debian's nginx and HAProxy in front of a real server (each skipped, with
the reason, where it is not installed; ``.ci/run`` installs both): clients speaking from
two loopback addresses through the proxy are rationed apart, a header a client forges is
passed over, and a peer that is not a proxy is not believed. Behind HAProxy as a TCP
balancer (``--proxy-protocol``, its ``send-proxy`` and ``send-proxy-v2``) the same holds, and
a connection without the header, or from a peer that is no trusted proxy, is cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import websockets
from websockets.datastructures import Headers
from websockets.exceptions import InvalidStatus

import protocol as p
from clients.connection import Connection, ServerError
from server.proxies import BadProxyHeader, TrustedProxies, forwarded_for, proxy_header

from .conftest import Live, Serve, one_backend

CAP = 2  # connections per address in the end-to-end tests


# -- reading the headers ---------------------------------------------------------------------
def test_the_client_is_the_rightmost_hop_that_is_not_a_trusted_proxy() -> None:
    proxies = TrustedProxies(["127.0.0.1", "10.0.0.0/8"])
    forged = Headers([("X-Forwarded-For", "6.6.6.6, 203.0.113.7, 10.1.2.3")])
    assert proxies.client("127.0.0.1", forged) == "203.0.113.7"
    every_hop_trusted = Headers([("X-Forwarded-For", "10.0.0.9, 10.0.0.8")])
    assert proxies.client("127.0.0.1", every_hop_trusted) == "10.0.0.9"
    assert proxies.client("127.0.0.1", Headers()) == "127.0.0.1"  # no header: the proxy


def test_a_peer_that_is_no_trusted_proxy_is_the_client_whatever_it_says() -> None:
    headers = Headers([("X-Forwarded-For", "6.6.6.6"), ("Forwarded", "for=6.6.6.7")])
    assert TrustedProxies(["127.0.0.1"]).client("192.0.2.5", headers) == "192.0.2.5"
    assert TrustedProxies([]).client("127.0.0.1", headers) == "127.0.0.1"


def test_forwarded_wins_over_x_forwarded_for_and_is_read_as_rfc_7239_writes_it() -> None:
    headers = Headers([("X-Forwarded-For", "6.6.6.6"),
                       ("Forwarded", 'for=192.0.2.60;proto=http;by=203.0.113.43'),
                       ("Forwarded", 'For="[2001:db8:cafe::17]:4711", for=198.51.100.17:80')])
    assert forwarded_for(headers) == ["192.0.2.60", "2001:db8:cafe::17", "198.51.100.17"]
    proxies = TrustedProxies(["::1", "198.51.100.0/24"])
    assert proxies.client("::1", headers) == "2001:db8:cafe::17"


def test_lines_and_lists_of_x_forwarded_for_read_in_order() -> None:
    headers = Headers([("X-Forwarded-For", "198.51.100.1, 198.51.100.2"),
                       ("X-Forwarded-For", "198.51.100.3")])
    assert forwarded_for(headers) == ["198.51.100.1", "198.51.100.2", "198.51.100.3"]
    # a peer on a dual-stack socket (IPv4-mapped) is the IPv4 proxy it is
    assert TrustedProxies(["127.0.0.1"]).client("::ffff:127.0.0.1", headers) == "198.51.100.3"


def test_a_trusted_proxy_is_an_address_or_a_network() -> None:
    with pytest.raises(ValueError, match="not an address"):
        TrustedProxies(["proxy.example"])


def test_a_proxy_protocol_header_names_the_client_and_its_length() -> None:
    v1 = b"PROXY TCP4 192.0.2.1 10.0.0.1 56324 443\r\n"
    assert proxy_header(v1 + b"GET / HTTP/1.1") == ("192.0.2.1", len(v1))
    assert proxy_header(b"PROXY TCP6 2001:db8::1 ::1 1 2\r\n") == ("2001:db8::1", 32)
    assert proxy_header(b"PROXY UNKNOWN\r\n") == (None, 15)
    assert proxy_header(v1[:20]) is None  # more to come
    v2 = (b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, 0x11, 0, 12])
          + bytes([198, 51, 100, 7]) + bytes([10, 0, 0, 1]) + bytes(4))
    assert proxy_header(v2 + b"GET") == ("198.51.100.7", 28)
    assert proxy_header(v2[:15]) is None
    local = b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x20, 0x00, 0, 0])
    assert proxy_header(local) == (None, 16)  # a balancer's own health check


@pytest.mark.parametrize("data", [b"GET / HTTP/1.1\r\n", b"PROXY TCP4 6.6.6.6\r\n",
                                  b"PROXY TCP4 ::1 ::1 1 2\r\n", b"PROXY " + b"x" * 120,
                                  b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x31, 0x11, 0, 0])])
def test_what_is_no_proxy_protocol_header_is_refused(data: bytes) -> None:
    with pytest.raises(BadProxyHeader):
        proxy_header(data)


# -- through real proxies --------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def proxy_process(argv: list[str], port: int, log: Path) -> Iterator[None]:
    """A proxy started in the foreground, listening on ``port`` once this yields."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 15
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{argv[0]} did not start: {log.read_text()[-2000:]}")
            time.sleep(0.02)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def nginx(tmp: Path, port: int, upstream: int) -> contextlib.AbstractContextManager[None]:
    """nginx as the README's configuration has it: websockets passed through, the
    client's address appended to X-Forwarded-For."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(binary).exists():
        pytest.skip("nginx is not installed (apt-get install nginx): no nginx proxy test")
    temp = ""  # nginx's scratch directories, in the test's own
    for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (tmp / name).mkdir(exist_ok=True)
        temp += f"  {name}_temp_path {tmp / name};\n"
    conf = tmp / "nginx.conf"
    conf.write_text(f"""daemon off;
pid {tmp / 'nginx.pid'};
error_log {tmp / 'error.log'};
events {{}}
http {{
  access_log off;
{temp}  map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://127.0.0.1:{upstream};
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_read_timeout 1h;
    }}
  }}
}}
""")
    return proxy_process([binary, "-p", str(tmp), "-e", str(tmp / "error.log"), "-c",
                          str(conf)], port, tmp / "nginx.out")


def haproxy(tmp: Path, port: int, upstream: int) -> contextlib.AbstractContextManager[None]:
    """HAProxy in HTTP mode with ``option forwardfor`` (websockets pass through)."""
    binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not Path(binary).exists():
        pytest.skip("haproxy is not installed (apt-get install haproxy): no HAProxy test")
    conf = tmp / "haproxy.cfg"
    conf.write_text(f"""global
  log stderr format short local0 warning
defaults
  mode http
  timeout connect 5s
  timeout client 1h
  timeout server 1h
  timeout tunnel 1h
frontend tessera
  bind 127.0.0.1:{port}
  option forwardfor
  default_backend servers
backend servers
  server one 127.0.0.1:{upstream}
""")
    return proxy_process([binary, "-db", "-f", str(conf)], port, tmp / "haproxy.out")


def haproxy_tcp(tmp: Path, port: int, upstream: int, send: str
                ) -> contextlib.AbstractContextManager[None]:
    """HAProxy as a TCP balancer telling the server each client with ``send``
    (``send-proxy``: version 1, ``send-proxy-v2``)."""
    binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not Path(binary).exists():
        pytest.skip("haproxy is not installed (apt-get install haproxy): no HAProxy test")
    conf = tmp / "haproxy.cfg"
    conf.write_text(f"""defaults
  mode tcp
  timeout connect 5s
  timeout client 1h
  timeout server 1h
frontend tessera
  bind 127.0.0.1:{port}
  default_backend servers
backend servers
  server one 127.0.0.1:{upstream} {send}
""")
    return proxy_process([binary, "-db", "-f", str(conf)], port, tmp / "haproxy.out")


async def opens(port: int, source: str, forged: str | None = None) -> bool:
    """Whether a websocket from ``source`` through ``port`` opens (False: 429)."""
    headers = {"X-Forwarded-For": forged} if forged else None
    try:
        ws = await websockets.connect(f"ws://127.0.0.1:{port}/ws", additional_headers=headers,
                                      local_addr=(source, 0), open_timeout=10)
    except InvalidStatus as exc:
        assert exc.response.status_code == 429, exc.response
        return False
    held.append(ws)
    return True


held: list[websockets.ClientConnection] = []


@contextlib.asynccontextmanager
async def holding() -> AsyncIterator[None]:
    try:
        yield
    finally:
        await asyncio.gather(*(ws.close() for ws in held), return_exceptions=True)
        held.clear()


async def rationed_apart(port: int) -> None:
    """Two clients behind the proxy each get the cap; a header the first forges does not
    give it more; the second is not refused for the first's connections."""
    assert [await opens(port, "127.0.0.2", forged=f"198.51.100.{k}") for k in range(CAP)] == [
        True] * CAP
    assert not await opens(port, "127.0.0.2", forged="198.51.100.99")
    assert [await opens(port, "127.0.0.3") for _ in range(CAP)] == [True] * CAP
    assert not await opens(port, "127.0.0.3")


async def guest_from(port: int, source: str) -> str:
    """A guest login through ``port`` from ``source``: "ok" or the refusal's code."""
    conn = await Connection.open(f"ws://127.0.0.1:{port}/ws", local_addr=(source, 0))
    try:
        await conn.call(p.Guest)
        return "ok"
    except ServerError as exc:
        return exc.code
    finally:
        await conn.close()


@one_backend
@pytest.mark.parametrize("proxy", [nginx, haproxy], ids=["nginx", "haproxy"])
async def test_clients_behind_a_trusted_proxy_are_rationed_apart(
        serve: Serve, tmp_path: Path, proxy: object) -> None:
    async with serve(trusted_proxies=["127.0.0.1"], max_connections_per_address=CAP,
                     address_guests_per_hour=1, address_guest_burst=1) as live:
        assert isinstance(live, Live)
        port = free_port()
        with proxy(tmp_path, port, live.http_port):  # type: ignore[operator]
            async with holding():
                await rationed_apart(port)
            # the budgets of a logged-in connection count the client too (guests here)
            assert await guest_from(port, "127.0.0.5") == "ok"
            assert await guest_from(port, "127.0.0.5") == "rate_limited"
            assert await guest_from(port, "127.0.0.6") == "ok"
            async with holding():
                # the server itself, asked directly by a peer it does not trust: the header
                # is not believed (127.0.0.4 is at its cap after CAP, whatever it claims)
                direct = live.http_port
                assert [await opens(direct, "127.0.0.4", forged=f"203.0.113.{k}")
                        for k in range(CAP + 1)] == [True] * CAP + [False]


@one_backend
async def test_without_a_trusted_proxy_everyone_behind_it_is_one_address(
        serve: Serve, tmp_path: Path) -> None:
    """What ``--trusted-proxy`` is for: without it, the proxy's own address is counted, so
    the second client is refused for the first's connections."""
    async with serve(max_connections_per_address=CAP) as live:
        port = free_port()
        with nginx(tmp_path, port, live.http_port):
            async with holding():
                assert [await opens(port, "127.0.0.2") for _ in range(CAP)] == [True] * CAP
                assert not await opens(port, "127.0.0.3")


async def cut_at_once(port: int, source: str, first: bytes) -> bool:
    """Whether the server closes a raw connection from ``source`` that sends ``first`` and
    then a request for /healthz, without answering."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    try:
        writer.write(first + b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)
    except ConnectionResetError:
        return True
    finally:
        writer.close()
    return answer == b""


@one_backend
@pytest.mark.parametrize("send", ["send-proxy", "send-proxy-v2"])
async def test_behind_a_tcp_balancer_the_proxy_protocol_names_the_client(
        serve: Serve, tmp_path: Path, send: str) -> None:
    async with serve(trusted_proxies=["127.0.0.1"], proxy_protocol=True,
                     max_connections_per_address=CAP, address_guests_per_hour=1,
                     address_guest_burst=1) as live:
        port = free_port()
        with haproxy_tcp(tmp_path, port, live.http_port, send):
            async with holding():
                await rationed_apart(port)
            assert await guest_from(port, "127.0.0.5") == "ok"
            assert await guest_from(port, "127.0.0.5") == "rate_limited"
            assert await guest_from(port, "127.0.0.6") == "ok"
        direct = live.http_port  # the balancer's port is the only way in:
        forged = b"PROXY TCP4 6.6.6.6 127.0.0.1 1 2\r\n"
        assert await cut_at_once(direct, "127.0.0.1", b"")  # a trusted peer, no header
        assert await cut_at_once(direct, "127.0.0.4", forged)  # a header, from a stranger
        assert not await cut_at_once(direct, "127.0.0.1", forged)  # as a balancer does
