"""The browser page as HTTP serves it: paths, caching, compression, security headers, and
which browser origins may open the websocket (no browser here: see tests/server/web/)."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import re
from pathlib import Path

import pytest
import websockets

import protocol as p
from clients.connection import Connection
from server import web

from .conftest import Live, Serve
from .support import TIMEOUT

STATIC = Path(web.__file__).parent / "static"
MANIFEST = Path(web.__file__).parent / "vendor.json"


async def get(port: int, path: str, *extra: tuple[str, str], **headers: str
              ) -> tuple[int, dict[str, str], bytes]:
    """GET ``path``: (status, headers with lower-case names, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    fields = [*((k.replace("_", "-"), v) for k, v in headers.items()), *extra]
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}",
             *(f"{k}: {v}" for k, v in fields), "", ""]
    try:
        writer.write("\r\n".join(lines).encode())
        await writer.drain()
        response = await asyncio.wait_for(reader.read(), TIMEOUT)
    finally:
        writer.close()
    head, _, body = response.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    found = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        found[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), found, body


def asset_paths(page: bytes) -> list[str]:
    return re.findall(r'(?:href|src)="(/static/[^"]+)"', page.decode())


async def test_the_page_and_its_files(server: Live) -> None:
    port = server.http_port
    status, headers, page = await get(port, "/")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    assert headers["cache-control"] == "no-cache"
    csp = headers["content-security-policy"]
    assert csp.startswith("default-src 'self'; ")
    assert f"connect-src 'self' ws://127.0.0.1:{port} wss://127.0.0.1:{port};" in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert b'<script type="module"' in page and b"<script>" not in page  # no inline script
    assert await get(port, "/game/k3v9q2x7ma") == (status, headers, page)  # the same page

    paths = asset_paths(page)
    version = web.site().version
    assert paths and all(path.startswith(f"/static/{version}/") for path in paths)
    assert f"/static/{version}/js/main.js" in paths and any("msgpack" in x for x in paths)
    for path in paths:
        status, headers, body = await get(port, path)
        assert status == 200, path
        assert headers["cache-control"] == "public, max-age=31536000, immutable"
        name = path.split("/", 3)[3]
        assert body == (STATIC / name).read_bytes()
        if name.endswith((".js", ".mjs")):
            assert headers["content-type"] == "text/javascript; charset=utf-8"

    # revalidated, not sent again; compressed when the browser can take it
    status, headers, _ = await get(port, "/")
    status, _, body = await get(port, "/", If_None_Match=headers["etag"])
    assert (status, body) == (304, b"")
    status, headers, packed = await get(port, paths[0], Accept_Encoding="gzip, br")
    assert headers["content-encoding"] == "gzip" and headers["vary"] == "Accept-Encoding"
    assert gzip.decompress(packed) == (STATIC / paths[0].split("/", 3)[3]).read_bytes()


async def test_unknown_paths_and_old_versions(server: Live) -> None:
    port = server.http_port
    assert (await get(port, "/static/0123456789ab/nothing.js"))[0] == 404
    assert (await get(port, "/game/not%20a%20game"))[0] == 404
    assert (await get(port, "/game/x/y"))[0] == 404
    assert (await get(port, "/elsewhere"))[0] == 404
    # a page of an older release gets today's files, not cached for good
    status, headers, body = await get(port, "/static/0123456789ab/js/main.js")
    assert status == 200 and headers["cache-control"] == "no-cache"
    assert body == (STATIC / "js/main.js").read_bytes()
    assert (await get(port, "/healthz"))[:1] == (200,)


async def test_browser_pages_of_the_servers_own_origin_may_connect(serve: Serve) -> None:
    async with serve(origins=["https://tessera.example"]) as live:
        own = f"http://127.0.0.1:{live.http_port}"
        for origin in (own, "https://tessera.example", None):
            conn = await live.clients.connect(origin=origin)
            assert isinstance(await asyncio.wait_for(conn.call(p.Ping), TIMEOUT), p.Pong)
        for origin in ("https://evil.example", f"http://127.0.0.1:{live.http_port + 1}",
                       "null", f"http://localhost:{live.http_port}"):
            with pytest.raises(websockets.InvalidStatus) as refused:
                await Connection.open(live.url, origin=origin)
            assert refused.value.response.status_code == 403, origin


async def test_two_origin_headers_are_refused(server: Live) -> None:
    port = server.http_port
    status, _, _ = await get(port, "/ws", ("Origin", f"http://127.0.0.1:{port}"),
                             ("Origin", "https://evil.example"), Upgrade="websocket",
                             Connection="Upgrade", Sec_WebSocket_Key="dGhlIHNhbXBsZSBub25jZQ==",
                             Sec_WebSocket_Version="13")
    assert status == 403


def test_the_vendored_msgpack_is_the_published_package() -> None:
    """The files under static/vendor/msgpack are those of the npm package named in
    vendor.json, byte for byte (tests/server/web/vendor.py fetches and checks the package
    itself); nothing else is vendored."""
    manifest = json.loads(MANIFEST.read_text())
    root = STATIC / manifest["directory"]
    on_disk = {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
               for path in root.rglob("*") if path.is_file()}
    assert on_disk == manifest["files"]
    assert manifest["package"] == "@msgpack/msgpack" and manifest["version"] == "3.1.3"
    assert "ISC" in (root / "LICENSE").read_text() or "Permission to use" in \
        (root / "LICENSE").read_text()


def test_the_page_imports_only_files_it_ships() -> None:
    site = web.site()
    assert site.page.body.count(b'rel="modulepreload"') >= 10
    for name in re.findall(rb'href="/static/[0-9a-f]+/([^"]+)"', site.page.body):
        assert name.decode() in site.assets, name
