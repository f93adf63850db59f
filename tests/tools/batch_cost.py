"""What one commit queue batch costs its thread: ``python -m tests.tools.batch_cost``.

Writes batches like those of a busy server (``--moves`` moves of running games, ``--games``
game starts and as many game ends) into a fresh SQLite file, once through Core statements
and once through the SQL text the commit queue uses on SQLite (``SqliteTextStatements``),
alternately, and prints the median CPU time of the writing thread per batch and per move.
That thread's Python holds the GIL the event loop waits for, so less here is more moves a
second for the server (docs/PERFORMANCE.md, second round).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from server.storage import (
    GameCreated,
    GameFinished,
    Item,
    MovePlayed,
    new_game_id,
    open_storage,
    sqlite_url,
)
from server.storage.db import make_blocking_engine
from server.storage.statements import CoreStatements, SqliteTextStatements, write_batch

FISCHER = {"kind": "fischer", "base_ms": 60_000, "increment_ms": 1_000}


async def _players(url: str) -> tuple[int, int]:
    async with open_storage(url) as storage:
        a = await storage.store.create_user("a", "guest")
        b = await storage.store.create_user("b", "guest")
        return a.id, b.id


def measure(url: str, moves: int, games: int, batches: int) -> dict[str, float]:
    players = asyncio.run(_players(url))
    twin = make_blocking_engine(url)
    assert twin is not None
    statements = {True: CoreStatements(), False: SqliteTextStatements(twin.dialect)}
    plies: dict[str, int] = {}  # the games running, and their next ply
    cpu: dict[bool, list[float]] = {True: [], False: []}
    with twin.connect() as conn:
        for number in range(batches):
            now = datetime.now(UTC)
            items: list[Item] = []
            for _ in range(games):
                game_id = new_game_id()
                items.append(GameCreated(game_id, "xodd", {"size": 9}, FISCHER, "1", players,
                                         1, now, now))
                plies[game_id] = 0
            running = list(plies)
            for k in range(moves):
                game_id = running[k % len(running)]
                ply = plies[game_id]
                items.append(MovePlayed(game_id, ply, ply + 2, f"a{ply + 1}", ply % 2, 120,
                                        59_000, datetime.now(UTC)))
                plies[game_id] = ply + 1
            for game_id in running[:games]:
                items.append(GameFinished(game_id, 0, "normal", plies.pop(game_id) + 2, now,
                                          "over"))
            core = number % 2 == 0
            began = time.thread_time()
            with conn.begin():
                outcomes = write_batch(conn, items, statements[core])
            cpu[core].append(time.thread_time() - began)
            assert not any(outcomes), outcomes
    twin.dispose()
    skip = min(4, batches // 4)  # per path, the first batches compile and warm caches
    return {"core_ms": statistics.median(cpu[True][skip:]) * 1e3,
            "text_ms": statistics.median(cpu[False][skip:]) * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=190)
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--dir", type=Path, default=None)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=opts.dir) as tmp:
        result = measure(sqlite_url(Path(tmp) / "batch.db"), opts.moves, opts.games,
                         opts.batches)
    print(f"a batch of {opts.moves} moves, {opts.games} game starts and {opts.games} ends "
          f"(median CPU of the writing thread):")
    for label, key in (("Core statements", "core_ms"), ("SQL text", "text_ms")):
        ms = result[key]
        print(f"  {label:<16} {ms:6.2f} ms  ({ms * 1e3 / opts.moves:5.1f} us a move)")


if __name__ == "__main__":
    main()
