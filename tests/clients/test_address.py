"""Every client command finds its server the same way: ``--server`` or ``$TESSERA_SERVER``,
as ``HOST:PORT`` or a URL (:mod:`clients.address`)."""

from __future__ import annotations

import os
import subprocess

import pytest

import engine
from clients.address import server_url
from tests.clients.conftest import LiveServer, tessera_command

Games = dict[str, tuple[str, engine.State]]


@pytest.mark.parametrize(("given", "url"), [
    ("127.0.0.1:8765", "ws://127.0.0.1:8765/ws"),
    ("ws://127.0.0.1:8765/ws", "ws://127.0.0.1:8765/ws"),
    ("ws://127.0.0.1:8765", "ws://127.0.0.1:8765/ws"),
    ("http://127.0.0.1:8765/", "ws://127.0.0.1:8765/ws"),  # the lobby's address
    ("https://tessera.example", "wss://tessera.example/ws"),
    ("localhost", "ws://localhost:8765/ws"),
    ("[::1]:9000", "ws://[::1]:9000/ws"),
])
def test_server_addresses_people_write(given: str, url: str) -> None:
    assert server_url(given) == url


@pytest.mark.parametrize("given", ["ftp://host", "http://", "host:port", "ws://h:1/ws?x=1"])
def test_a_wrong_address_is_refused_saying_what_to_write(given: str) -> None:
    with pytest.raises(ValueError, match="write HOST:PORT or ws://HOST:PORT/ws"):
        server_url(given)


def _tessera(*args: str, server: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TESSERA_SERVER": server}
    return subprocess.run([*tessera_command(), *args], capture_output=True, text=True,
                          input=stdin, timeout=60, env=env, check=False)


def test_every_client_command_reads_tessera_server(live_server: LiveServer,
                                                   finished_games: Games) -> None:
    game_id, _ = finished_games["hadron"]
    server = f"127.0.0.1:{live_server.port}"
    runs = {
        "export": _tessera("export", game_id, server=server),
        "verify": _tessera("verify", "--all", server=server),
        "replay": _tessera("replay", game_id, "--ply", "0", server=server),
        "ladder": _tessera("ladder", "standings", "hadron", server=server),
        "play": _tessera("play", "--guest", server=server, stdin="quit\n"),
    }
    failed = {name: run.stderr for name, run in runs.items() if run.returncode != 0}
    assert failed == {}
    assert f"[Game \"{game_id}\"]" in runs["export"].stdout or game_id in runs["export"].stdout
    assert f"Connected to ws://{server}/ws" in runs["play"].stdout, runs["play"].stdout


def test_an_unusable_tessera_server_is_one_line() -> None:
    done = _tessera("export", "abc", server="ftp://nowhere")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "tessera: $TESSERA_SERVER: not a server address: 'ftp://nowhere' (write HOST:PORT "
        "or ws://HOST:PORT/ws)"], done.stderr
