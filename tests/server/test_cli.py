"""Operator commands behave in a pipe: a reader that stops reading ends them quietly."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from server.storage import GameCreated, MovePlayed, new_game_id, open_storage, sqlite_url

FISCHER = {"kind": "fischer", "base_ms": 60_000, "increment_ms": 0}


async def _many_games(url: str, games: int, moves: int) -> None:
    async with open_storage(url) as storage:
        a = await storage.store.create_user("ann", "human")
        b = await storage.store.create_user("bob", "human")
        now = datetime.now(UTC)
        for _ in range(games):
            game_id = new_game_id()
            await storage.writer.submit(GameCreated(game_id, "hadron", {"size": 9}, FISCHER,
                                                    "1", (a.id, b.id), 1, now, now))
            for ply in range(moves):
                await storage.writer.submit(MovePlayed(game_id, ply, ply + 2, f"a{ply + 1}",
                                                       ply % 2, 100, 59_000, now))


async def test_dump_into_a_pipe_that_closes_ends_quietly(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "tessera.db")
    await _many_games(url, games=120, moves=40)  # far more than a pipe's buffer holds
    proc = subprocess.Popen([sys.executable, "-m", "server", "dump", "--all", "--db", url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = json.loads(proc.stdout.readline())
    proc.stdout.close()  # `| head -1`
    errors = proc.stderr.read().decode()
    status = proc.wait(60)
    assert first["game"] == "hadron"
    assert "Traceback" not in errors and "BrokenPipe" not in errors, errors
    assert status == 141  # as a shell reports a tool whose reader went away
