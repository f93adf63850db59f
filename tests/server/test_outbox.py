"""Frames of one event-loop turn leave a connection together, in order (``server.Outbox``)."""

from __future__ import annotations

from typing import Any

import protocol as p

from .conftest import Live
from .support import start_game


def _session_of(live: Live, name: str) -> Any:
    (session,) = [s for s in live.running.app.sessions
                  if s.user is not None and s.user.name == name]
    return session


async def test_moved_and_move_ack_reach_the_mover_in_one_write(server: Live) -> None:
    a, b = await server.clients.guest(), await server.clients.guest()
    game = await start_game(a, b, "hadron")
    await a.drain(0.1)
    mover, opponent = game.mover, game.waiter
    transport = _session_of(server, mover.name).ws.transport
    writes: list[bytes] = []
    real_write = transport.write

    def counting_write(data: bytes) -> None:  # a spy: the real write still happens
        writes.append(bytes(data))
        real_write(data)

    transport.write = counting_write
    try:
        ack = await game.play("a1")
        moved = await opponent.wait_for(p.Moved, game_id=game.game_id)
    finally:
        del transport.write
    assert moved.seq == ack.seq
    assert len(writes) == 1, writes
    # one write, two websocket frames: moved, then move_ack
    moved_at, ack_at = writes[0].find(b"moved"), writes[0].find(b"move_ack")
    assert 0 <= moved_at < ack_at
