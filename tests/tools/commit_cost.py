"""What durability costs: ``python -m tests.tools.commit_cost [--moves N] [--games K]``.

Stores moves through the server's commit queue into a fresh SQLite file, once with
``synchronous=FULL`` (the default: an acknowledged move survives a power loss) and once
with ``NORMAL`` (it survives a crash of the server, not of the machine), and prints, for
each: the latency of one commit when moves come one at a time, and the moves stored per
second when K games submit at once (group commit: one fsync per batch). The file goes in
``--dir`` (default: a temporary directory), so the disk measured is the one given.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from server.storage import GameCreated, MovePlayed, new_game_id, open_storage, sqlite_url


async def measure(url: str, synchronous: str, moves: int, games: int) -> dict[str, float]:
    async with open_storage(url, sqlite_synchronous=synchronous) as storage:  # type: ignore
        store, writer = storage.store, storage.writer
        a = await store.create_user(f"a{synchronous}", "guest")
        b = await store.create_user(f"b{synchronous}", "guest")
        now = datetime.now(UTC)
        ids = [new_game_id() for _ in range(games)]
        for game_id in ids:
            await writer.submit(GameCreated(game_id, "hadron", {"size": 5},
                                            {"kind": "unlimited"}, "1", (a.id, b.id), 1, now,
                                            now))

        def move(game_id: str, ply: int) -> MovePlayed:
            return MovePlayed(game_id, ply, ply + 2, f"m{ply}", ply % 2, 10, None,
                              datetime.now(UTC))

        one_by_one = []
        for ply in range(moves):
            started = time.perf_counter()
            await writer.submit(move(ids[0], ply))
            one_by_one.append(time.perf_counter() - started)

        async def play(game_id: str, first: int) -> None:
            for ply in range(first, first + moves):
                await writer.submit(move(game_id, ply))

        started = time.perf_counter()
        await asyncio.gather(*(play(game_id, moves if i == 0 else 0)
                               for i, game_id in enumerate(ids)))
        together = time.perf_counter() - started
    return {"commit_p50_ms": round(statistics.median(one_by_one) * 1000, 2),
            "commit_p99_ms": round(statistics.quantiles(one_by_one, n=100)[98] * 1000, 2),
            "moves_per_s_one_game": round(1 / statistics.mean(one_by_one)),
            f"moves_per_s_{games}_games": round(games * moves / together)}


async def main_async(opts: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(dir=opts.dir, prefix="tessera-commit-cost-") as tmp:
        for synchronous in ("FULL", "NORMAL"):
            url = sqlite_url(Path(tmp) / f"{synchronous}.db")
            result = await measure(url, synchronous, opts.moves, opts.games)
            print(f"synchronous={synchronous}: " +
                  ", ".join(f"{k}={v}" for k, v in result.items()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.tools.commit_cost",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=200, help="moves per game")
    parser.add_argument("--games", type=int, default=50, help="games submitting at once")
    parser.add_argument("--dir", default=None, help="where to put the database files")
    asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
