"""Which server a client command talks to: ``--server``, else ``$TESSERA_SERVER``, else
``ws://127.0.0.1:8765/ws``, written however a person would write it.

Every command that connects to a running server (``play``, ``bot``, ``bridge``, ``replay``,
``export``, ``verify``, ``ladder``) takes the address the same way. These forms mean the
same server::

    127.0.0.1:8765   ws://127.0.0.1:8765/ws   ws://127.0.0.1:8765   http://127.0.0.1:8765/

A bare ``HOST`` means port 8765; ``http://`` (what the server prints as the lobby's
address) becomes ``ws://`` and ``https://`` becomes ``wss://``; a URL without a path gets
``/ws``. Tools that start a server of their own (``arena``, ``bench``, ``chaos``,
``siege``) do not read ``$TESSERA_SERVER``.
"""

from __future__ import annotations

import argparse
import os
from urllib.parse import urlsplit

from .connection import DEFAULT_URL

SERVER_ENV = "TESSERA_SERVER"
DEFAULT_PORT = 8765
_SCHEMES = {"ws": "ws", "wss": "wss", "http": "ws", "https": "wss"}


def server_url(text: str) -> str:
    """The websocket URL of a server address in any of the forms above; ValueError if it
    is none of them."""
    given = text.strip()
    if "://" not in given:
        given = f"ws://{given}"
    try:
        parts = urlsplit(given)
        port = parts.port
    except ValueError:
        raise ValueError(f"not a server address: {text!r} (write HOST:PORT or "
                         f"ws://HOST:PORT/ws)") from None
    scheme = _SCHEMES.get(parts.scheme)
    if scheme is None or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"not a server address: {text!r} (write HOST:PORT or "
                         f"ws://HOST:PORT/ws)")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    if port is None and "://" not in text:
        port = DEFAULT_PORT
    netloc = host if port is None else f"{host}:{port}"
    path = parts.path if parts.path not in ("", "/") else "/ws"
    return f"{scheme}://{netloc}{path}"


def default_server() -> str:
    """``$TESSERA_SERVER`` if set (ValueError if it is not an address), else the default."""
    return server_url(os.environ.get(SERVER_ENV) or DEFAULT_URL)


def server_argument(text: str) -> str:
    """``--server``'s argparse type: :func:`server_url`, refused in argparse's words."""
    try:
        return server_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_server_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
                        what: str = "the server") -> None:
    """``--server ADDRESS``; read it back with :func:`chosen_server` (None: not given)."""
    parser.add_argument("--server", type=server_argument, default=None, metavar="ADDRESS",
                        help=f"{what}: HOST:PORT or ws://HOST:PORT/ws (default "
                             f"${SERVER_ENV}, else {DEFAULT_URL})")


def chosen_server(given: str | None) -> str:
    """``--server`` if given, else :func:`default_server`; an unusable ``$TESSERA_SERVER``
    ends the command with a one-line error (SystemExit 2)."""
    if given is not None:
        return given
    try:
        return default_server()
    except ValueError as exc:
        raise SystemExit(f"tessera: ${SERVER_ENV}: {exc}") from None
