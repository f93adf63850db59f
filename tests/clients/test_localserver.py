"""The tools' local server (``clients.localserver.LocalServer``): a real ``python -m server
serve`` process."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from clients.localserver import LocalServer


def test_a_port_taken_before_the_first_start_is_given_up_for_another(tmp_path: Path) -> None:
    """A free port is only free when asked for: another process may listen on it before
    the server does (the suite starts many at once). The first start takes another; a
    restart keeps its port, or fails saying why."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = LocalServer(tmp_path)
        server.port = taken.getsockname()[1]  # as if another had taken it meanwhile
        server.start()
        try:
            assert server.port != taken.getsockname()[1]
            moved_to = server.port
            server.stop()
            server.start()  # a restart: the same port
            assert server.port == moved_to
        finally:
            server.stop()
        given = LocalServer(tmp_path / "given", port=taken.getsockname()[1])
        with pytest.raises(RuntimeError, match="already in use"):
            given.start()  # a port the caller chose is not changed behind its back
