"""The most a one-process websockets server can do with the bench's games:
``python -m tests.tools.relay_ceiling``.

The relay answers ``tessera bench``'s own load generator (the same processes, games and
frames) with the least a game server must do: it parses each frame with plain msgpack,
plays the move through the engine (to know when a game ends), and sends ``moved`` to both
players and ``move_ack`` to the mover, written as the server writes them (one socket write
per connection and loop turn). It checks no schema, keeps no clock, stores nothing and
counts nothing. The echo ceiling is measured in the same run, as ``tessera bench`` does
(half before, half after), and the relay's moves a second over it is the best ``ratio``
any server of this shape can reach on this machine (docs/PERFORMANCE.md, third round).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgpack
import websockets
from websockets.asyncio.server import ServerConnection

import engine
import protocol as p
from clients.bench import (
    _run_loadgens,
    _shares,
    raise_fd_limit,
    run_echo_bench,
    start,
)


class _Relay:
    """The relay's state: who is connected, the open challenges, the games in play."""

    def __init__(self) -> None:
        self.by_name: dict[str, ServerConnection] = {}
        self.challenges: dict[int, tuple[str, str, str, dict[str, Any], int]] = {}
        self.games: dict[str, tuple[engine.State, tuple[ServerConnection, ServerConnection]]] = {}
        self.ids = itertools.count(1)
        self.pending: set[ServerConnection] = set()
        self.packer = msgpack.Packer()

    def send(self, ws: ServerConnection, message: dict[str, Any]) -> None:
        """Frame now; write once per connection at the end of the loop turn."""
        ws.protocol.send_binary(self.packer.pack(message))
        if not self.pending:
            asyncio.get_running_loop().call_soon(self.flush)
        self.pending.add(ws)

    def flush(self) -> None:
        for ws in self.pending:
            data = ws.protocol.data_to_send()
            if data and not ws.transport.is_closing():
                ws.transport.write(b"".join(data))
        self.pending.clear()

    async def handler(self, ws: ServerConnection) -> None:
        name = f"relay{next(self.ids)}"
        self.by_name[name] = ws
        try:
            async for frame in ws:
                assert isinstance(frame, bytes)
                self.on(ws, name, msgpack.unpackb(frame))
        except websockets.ConnectionClosed:
            pass
        finally:
            del self.by_name[name]

    def on(self, ws: ServerConnection, name: str, m: dict[str, Any]) -> None:
        kind = m["t"]
        if kind == "move":
            state, players = self.games[m["game_id"]]
            by = state.to_move
            state = state.play(m["move"])
            self.games[m["game_id"]] = (state, players)
            moved = {"t": "moved", "game_id": m["game_id"], "seq": m["ply"] + 2,
                     "ply": m["ply"], "move": m["move"], "by": by, "ms_used": 0}
            self.send(players[1 - by], moved)
            self.send(ws, moved)
            self.send(ws, {"t": "move_ack", "id": m["id"], "game_id": m["game_id"],
                           "ply": m["ply"], "seq": m["ply"] + 2})
            if state.is_over:
                over = {"t": "game_over", "game_id": m["game_id"], "seq": m["ply"] + 3,
                        "winner": state.winner, "reason": "normal"}
                for player in players:
                    self.send(player, over)
                del self.games[m["game_id"]]
        elif kind == "challenge":
            cid = next(self.ids)
            self.challenges[cid] = (name, m["to"], m["game"], m["options"], m.get("color", 0))
            self.send(self.by_name[m["to"]], {"t": "challenge_received", "challenge_id": cid})
        elif kind == "accept_challenge":
            sender, to, game, options, color = self.challenges.pop(m["challenge_id"])
            names = (sender, to) if color == 0 else (to, sender)
            players = (self.by_name[names[0]], self.by_name[names[1]])
            game_id = f"g{next(self.ids)}"
            self.games[game_id] = (engine.new_game(game, **options), players)
            started = {"t": "game_started", "game_id": game_id, "seq": 1, "snapshot": {
                "players": [{"name": n, "kind": "guest"} for n in names]}}
            for player in players:
                self.send(player, started)
            self.send(ws, {"t": "ok", "id": m["id"]})
        elif kind == "hello":
            self.send(ws, p.Welcome(
                id=m["id"], version=p.PROTOCOL_VERSION, server="relay",
                limits=p.Limits(max_frame_bytes=16_384, rate_per_s=1000, burst=1000,
                                max_open_seeks=1), games=()).to_wire())
        elif kind == "guest":
            self.send(ws, p.Authed(id=m["id"], user=p.User(name=name, kind="guest"),
                                   session_token="relay", active_games=()).to_wire())


async def _serve(ready: str) -> None:
    raise_fd_limit()
    relay = _Relay()
    async with websockets.serve(relay.handler, "127.0.0.1", 0, compression=None,
                                max_size=16 * 1024) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        Path(ready).write_text(f"{port}\n")
        await asyncio.Future()


def measure(games: int, seconds: float, procs: int = 2, seed: int = 1) -> dict[str, Any]:
    """Echo (half), relay, echo (half): the figures of one run."""
    with tempfile.TemporaryDirectory(prefix="tessera-relay-") as tmp:
        workdir = Path(tmp)
        echo_before = run_echo_bench(2 * games, seconds / 2, procs, workdir)
        port_file = workdir / "relay.port"
        relay = start(["-m", "tests.tools.relay_ceiling", "_serve", str(port_file)], port_file,
                      workdir / "relay.log")
        cpu: list[float] = []
        try:
            parts = _run_loadgens(
                "games", f"ws://127.0.0.1:{relay.port}/", workdir, _shares(games, procs),
                seconds, on_start=lambda: cpu.append(relay.cpu_s()),
                on_stop=lambda: cpu.append(relay.cpu_s()), seed=seed, think_ms=0.0)
        finally:
            relay.popen.kill()
            relay.popen.wait()
        echo_after = run_echo_bench(2 * games, seconds / 2, procs, workdir)
    moves = sum(len(part["acked"]) for part in parts)
    elapsed = max(part["elapsed_s"] for part in parts)
    echo = (echo_before["roundtrips"] + echo_after["roundtrips"]) / (
        echo_before["elapsed_s"] + echo_after["elapsed_s"])
    return {
        "games": sum(part["games"] for part in parts),
        "moves": moves,
        "errors": sum(part["errors"] for part in parts),
        "relay_moves_per_s": round(moves / elapsed, 1),
        "relay_cpu_us_per_move": round((cpu[1] - cpu[0]) / max(1, moves) * 1e6, 1),
        "echo_roundtrips_per_s": round(echo, 1),
        "ratio": round(moves / elapsed / echo, 3) if echo else 0.0,
    }


def main() -> int:
    if sys.argv[1:2] == ["_serve"]:
        asyncio.run(_serve(sys.argv[2]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--procs", type=int, default=2)
    args = parser.parse_args()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    started = time.monotonic()
    result = measure(args.games, args.seconds, args.procs)
    result["load_avg"] = load
    result["wall_s"] = round(time.monotonic() - started, 1)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
