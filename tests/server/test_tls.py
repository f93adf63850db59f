"""``tessera serve --tls-cert FILE --tls-key FILE``: wss:// and https:// on one port, with a
certificate made in the test, reloaded on SIGHUP while connections stay open.

The clients trust the certificate the standard way, ``SSL_CERT_FILE`` (read by Python's
default context, which the client connection uses for a wss:// URL).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import ssl
import subprocess
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import protocol as p
from clients.connection import Connection
from server.storage import sqlite_url

from .certs import Certificate, self_signed
from .cluster.conftest import eventually
from .conftest import ServeOn
from .support import Clients, start_game


def common_name(peercert: Any) -> str:
    """The common name of a certificate as ``getpeercert()`` gives it."""
    return str(dict(pair for rdn in peercert["subject"] for pair in rdn)["commonName"])


async def served_name(port: int, *trusted: Certificate) -> str:
    """The common name of the certificate a new connection to the port is shown."""
    context = ssl.create_default_context(
        cadata="".join(c.cert.read_text() for c in trusted))
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        return common_name(writer.get_extra_info("peercert"))
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()


def https_get(url: str, trusted: Certificate) -> bytes:
    context = ssl.create_default_context(cafile=str(trusted.cert))
    with urllib.request.urlopen(url, timeout=10, context=context) as reply:
        body: bytes = reply.read()
        return body


def put_in_place(certificate: Certificate, cert: Path, key: Path) -> None:
    """Replace the served files as an operator's renewal does: each one renamed over."""
    for source, target in ((certificate.key, key), (certificate.cert, cert)):
        shutil.copyfile(source, target.with_suffix(".new"))
        os.replace(target.with_suffix(".new"), target)


async def test_wss_and_https_with_a_certificate_reloaded_on_sighup(
        tmp_path: Path, serve_on: ServeOn, monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = self_signed(tmp_path / "made", "one"), self_signed(tmp_path / "made", "two")
    cert, key = tmp_path / "served" / "server.crt", tmp_path / "served" / "server.key"
    cert.parent.mkdir()
    put_in_place(one, cert, key)
    server = serve_on(sqlite_url(tmp_path / "tessera.db"), "--tls-cert", str(cert),
                      "--tls-key", str(key))
    await server.start()
    assert server.proc is not None and server.port is not None
    port = server.port
    url = f"wss://127.0.0.1:{port}/ws"
    await eventually(lambda: "listening on" in server.log(), 10)
    assert (f"listening on {url}; the lobby is at https://127.0.0.1:{port}/"
            in server.log()), server.log()

    # a client that trusts the certificate plays over wss://; /healthz answers over https
    monkeypatch.setenv("SSL_CERT_FILE", str(one.cert))
    clients = Clients(url)
    try:
        a, b = await clients.guest(), await clients.guest()
        game = await start_game(a, b, "hadron")
        await game.play("a1")
        assert common_name(a.conn.ws.transport.get_extra_info("peercert")) == "one"
        assert await asyncio.to_thread(
            https_get, f"https://127.0.0.1:{port}/healthz", one) == b"ok\n"

        # renewed: new files and SIGHUP; new connections are shown the new certificate
        put_in_place(two, cert, key)
        server.proc.send_signal(signal.SIGHUP)

        async def shows_the_new_one() -> bool:
            return await served_name(port, one, two) == "two"

        await eventually(shows_the_new_one, 10)
        monkeypatch.setenv("SSL_CERT_FILE", str(two.cert))
        c = await clients.guest()
        assert common_name(c.conn.ws.transport.get_extra_info("peercert")) == "two"
        monkeypatch.setenv("SSL_CERT_FILE", str(one.cert))
        with pytest.raises(ssl.SSLCertVerificationError):
            await Connection.open(url)
        # the connections opened before keep theirs, and play on
        await game.play("e5")
        await game.play("b2")
        assert common_name(b.conn.ws.transport.get_extra_info("peercert")) == "one"
        assert await asyncio.to_thread(
            https_get, f"https://127.0.0.1:{port}/healthz", two) == b"ok\n"

        # a renewal gone wrong (a key that is not the certificate's): logged, and the
        # certificate in use stays
        shutil.copyfile(one.key, key)
        server.proc.send_signal(signal.SIGHUP)
        await eventually(lambda: "TLS reload failed" in server.log(), 10)
        assert "KEY_VALUES_MISMATCH" in server.log() or "key values mismatch" in server.log()
        assert await served_name(port, one, two) == "two"
        await game.play("d4")
        record = await game.record()
        assert [m.move for m in record.moves] == ["a1", "e5", "b2", "d4"]
        assert (await c.call(p.GetGame, game_id=game.game_id)).record == record
    finally:
        await clients.close_all()
    assert await server.stopped() == 0


def serve(*flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server", "serve", "--port", "0",
                           "--log-level", "warning", *flags], capture_output=True, text=True,
                          timeout=60)


def test_tls_settings_that_cannot_be_served_are_one_line_before_anything_opens(
        tmp_path: Path) -> None:
    one, two = self_signed(tmp_path, "one"), self_signed(tmp_path, "two")
    db = tmp_path / "tessera.db"
    missing = tmp_path / "missing.crt"
    cases = {
        ("--tls-cert", str(one.cert)): "--tls-cert and --tls-key go together",
        ("--tls-cert", str(missing), "--tls-key", str(one.key)):
            f"cannot read {missing}: No such file or directory",
        ("--tls-cert", str(one.cert), "--tls-key", str(two.key)):
            "are not a certificate and its key in PEM",
        ("--tls-cert", str(one.cert), "--tls-key", str(one.key), "--house-bots", "random"):
            "--house-bots cannot run beside --tls-cert",
    }
    with ThreadPoolExecutor(4) as pool:
        done = list(pool.map(lambda flags: serve("--db", sqlite_url(db), *flags), cases))
    for (flags, why), refused in zip(cases.items(), done, strict=True):
        assert refused.returncode == 1, (flags, refused.stderr)
        [line] = refused.stderr.splitlines()
        assert line.startswith("tessera: ") and why in line, (flags, line)
    assert not db.exists()  # refused before the database was opened
