"""Plain HTTP on the websocket port: health and Prometheus metrics."""

from __future__ import annotations

import asyncio

import protocol as p

from .conftest import Live
from .support import TIMEOUT, Clients, start_game


async def http_get(port: int, path: str) -> tuple[int, str]:
    """GET ``path`` from the server; (status, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                     .encode())
        await writer.drain()
        response = await asyncio.wait_for(reader.read(), TIMEOUT)
    finally:
        writer.close()
    head, _, body = response.decode().partition("\r\n\r\n")
    return int(head.split()[1]), body


def metric(body: str, name: str) -> float:
    [line] = [line for line in body.splitlines() if line.startswith(f"{name} ")]
    return float(line.split()[1])


async def test_healthz_and_metrics(server: Live, clients: Clients) -> None:
    assert await http_get(server.http_port, "/healthz") == (200, "ok\n")
    status, body = await http_get(server.http_port, "/metrics")
    assert status == 200
    assert metric(body, "tessera_moves_total") == 0

    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, "hadron")
    await game.play("a1")
    await game.play("b2")
    await a.refused(p.Move, game_id=game.game_id, ply=0, move="c3")
    status, body = await http_get(server.http_port, "/metrics")
    assert metric(body, "tessera_moves_total") == 2
    assert metric(body, "tessera_games_in_progress") == 1
    assert metric(body, "tessera_connections") == 2
    assert metric(body, 'tessera_errors_total{code="stale_ply"}') == 1

    assert (await http_get(server.http_port, "/nowhere"))[0] == 404
    assert isinstance(await a.call(p.Ping), p.Pong)  # websockets unaffected
