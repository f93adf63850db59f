"""The browser client, served by the server itself on its own port.

``/`` (the lobby), ``/game/ID`` (a game to play, watch or replay), ``/profile/NAME`` and
``/leaderboard/GAME`` (ratings) are one page, the
files under ``static/`` (plain ES modules, CSS and SVG, no build step), installed as
package data. The page is a client like any other: it speaks the protocol over ``/ws``.

Files are read once. They are served under ``/static/<version>/``, where the version is a
digest of them all, with a year's immutable caching: a new release has new URLs, and the
page itself (``no-cache``, revalidated by its ETag) names them. Compressible files are
gzipped once. Every response carries a Content-Security-Policy that allows nothing but this
server (and its websocket), so no user text can run as script.

:func:`respond` is the HTTP hook's one call: a response for the page's paths, a 403 for a
websocket handshake from a browser page of another origin, or None to let the request
through (to the websocket handshake, or to the caller's 404).
"""

from __future__ import annotations

import gzip
import hashlib
import re
from dataclasses import dataclass
from functools import cache
from http import HTTPStatus
from importlib import resources
from importlib.resources.abc import Traversable

from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from ..config import Settings

STATIC_PREFIX = "/static/"
PAGE_PATH = re.compile(r"/(?:game/[0-9A-Za-z_-]{1,32}|profile/[A-Za-z][A-Za-z0-9_-]{1,19}"
                       r"|leaderboard(?:/[a-z][a-z0-9_]{0,31})?)?")
ENTRY_MODULE = "js/main.js"
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".json": "application/json",
}
COMPRESSIBLE = frozenset({".html", ".css", ".js", ".mjs", ".svg", ".json", ""})
HOST = re.compile(r"(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
IMPORT = re.compile(r"""(?:\bfrom|\bimport)\s*["'](\.{1,2}/[^"']+)["']""")
SECURITY_HEADERS = (
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
)


@dataclass(frozen=True, slots=True)
class Asset:
    """One file as served: its bytes, gzipped bytes (if that is smaller), type and ETag."""

    body: bytes
    gzipped: bytes | None
    content_type: str
    etag: str


def _asset(body: bytes, suffix: str) -> Asset:
    packed = gzip.compress(body, compresslevel=9, mtime=0) if suffix in COMPRESSIBLE else None
    etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
    return Asset(body, packed if packed is not None and len(packed) < len(body) else None,
                 TYPES.get(suffix, "text/plain; charset=utf-8"), etag)


class Site:
    """The page and its files, read from ``root`` (a directory of package data)."""

    def __init__(self, root: Traversable) -> None:
        files: dict[str, bytes] = {}
        _read_tree(root, "", files)
        digest = hashlib.sha256()
        for name in sorted(files):
            digest.update(name.encode() + b"\0" + files[name] + b"\0")
        self.version = digest.hexdigest()[:12]
        self.prefix = f"{STATIC_PREFIX}{self.version}/"
        template = files.pop("index.html").decode()
        self.assets = {name: _asset(body, _suffix(name)) for name, body in files.items()}
        preload = "\n".join(f'<link rel="modulepreload" href="{self.prefix}{name}">'
                            for name in _module_graph(files, ENTRY_MODULE))
        page = template.replace("{{static}}", self.prefix.rstrip("/"))
        self.page = _asset(page.replace("{{preload}}", preload).encode(), ".html")

    def respond(self, request: Request, settings: Settings) -> Response | None:
        path = request.path.split("?", 1)[0]
        if request.headers.get("Upgrade", "").lower() == "websocket":
            if origin_allowed(request.headers, settings.origins):
                return None
            return _plain(HTTPStatus.FORBIDDEN, "this origin may not connect\n")
        if request.method not in ("GET", "HEAD"):
            return None
        if PAGE_PATH.fullmatch(path):
            return _serve(request, self.page, REVALIDATE)
        if path.startswith(STATIC_PREFIX):
            version, _, name = path[len(STATIC_PREFIX):].partition("/")
            asset = self.assets.get(name)
            if asset is None:
                return _plain(HTTPStatus.NOT_FOUND, "not found\n")
            # a page of an older release asks for its files: serve today's, not for keeps
            return _serve(request, asset, IMMUTABLE if version == self.version else REVALIDATE)
        return None


def _read_tree(node: Traversable, prefix: str, out: dict[str, bytes]) -> None:
    for child in node.iterdir():
        name = prefix + child.name
        if child.is_dir():
            _read_tree(child, name + "/", out)
        elif not child.name.startswith("."):
            out[name] = child.read_bytes()


def _suffix(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    return "." + base.rsplit(".", 1)[1] if "." in base else ""


def _module_graph(files: dict[str, bytes], entry: str) -> list[str]:
    """Every module ``entry`` imports, directly or not (relative imports only), entry first:
    the page preloads them all at once instead of discovering them one level at a time."""
    seen: list[str] = []
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in seen or name not in files:
            continue
        seen.append(name)
        base = name.rsplit("/", 1)[0] + "/" if "/" in name else ""
        for target in IMPORT.findall(files[name].decode()):
            todo.append(_join(base, target))
    return seen


def _join(base: str, target: str) -> str:
    parts = (base + target).split("/")
    out: list[str] = []
    for part in parts:
        if part == "..":
            if out:
                out.pop()
        elif part not in (".", ""):
            out.append(part)
    return "/".join(out)


def origin_allowed(headers: Headers, allowed: list[str] | None) -> bool:
    """May a websocket handshake with these headers go ahead? Programs send no Origin; a
    browser page may connect from the server's own origin (scheme, then the Host it asked
    for) or from one the operator allowed (``--origin``)."""
    origins = headers.get_all("Origin")
    if not origins:
        return True
    if len(origins) > 1:
        return False
    origin = origins[0].lower()
    if allowed and origin in (o.lower() for o in allowed):
        return True
    host = headers.get("Host", "").lower()
    return bool(host) and origin in (f"http://{host}", f"https://{host}")


def _csp(headers: Headers) -> str:
    host = headers.get("Host", "")
    sockets = f" ws://{host} wss://{host}" if HOST.fullmatch(host) else ""
    return ("default-src 'self'; "
            f"connect-src 'self'{sockets}; "
            "img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'")


def _serve(request: Request, asset: Asset, cache_control: str) -> Response:
    headers = Headers([
        ("Content-Type", asset.content_type),
        ("Cache-Control", cache_control),
        ("ETag", asset.etag),
        ("Content-Security-Policy", _csp(request.headers)),
        *SECURITY_HEADERS,
        ("Connection", "close"),
    ])
    if asset.gzipped is not None:
        headers["Vary"] = "Accept-Encoding"
    if asset.etag in _etags(request.headers.get("If-None-Match", "")):
        return Response(HTTPStatus.NOT_MODIFIED, "Not Modified", headers, b"")
    body = asset.body
    if asset.gzipped is not None and "gzip" in request.headers.get("Accept-Encoding", ""):
        body = asset.gzipped
        headers["Content-Encoding"] = "gzip"
    headers["Content-Length"] = str(len(body))
    return Response(HTTPStatus.OK, "OK", headers, b"" if request.method == "HEAD" else body)


def _etags(value: str) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in value.split(",") if tag.strip()}


def _plain(status: HTTPStatus, text: str) -> Response:
    body = text.encode()
    return Response(status, status.phrase, Headers([
        ("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body))),
        ("Connection", "close"), *SECURITY_HEADERS]), body)


@cache
def site() -> Site:
    """The installed page, read once per process."""
    return Site(resources.files(__package__) / "static")


def respond(request: Request, settings: Settings) -> Response | None:
    """The response to a request for the page or its files; a 403 for a websocket handshake
    from a browser origin that may not connect; None for anything else."""
    return site().respond(request, settings)
