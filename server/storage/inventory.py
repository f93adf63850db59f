"""What a database holds and whether it is whole: ``tessera db counts`` and ``tessera db
check``, for operators and for the tools that test a server from outside (siege, chaos),
which read what was stored through these commands and ``tessera dump``, not the file.

``check`` looks at what the store itself promises, on either backend: every game's moves are
plies 0, 1, 2, ... with no gap, each with an event number of its own. On SQLite it also runs
the file's own ``integrity_check`` and ``foreign_key_check`` (a file written through crashes
must still be whole); PostgreSQL guards its own pages and keys.
"""

from __future__ import annotations

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from .models import Base

_GAPS = text("""
SELECT game_id, count(*), min(ply), max(ply), count(DISTINCT seq) FROM moves
GROUP BY game_id
HAVING min(ply) <> 0 OR max(ply) <> count(*) - 1 OR count(DISTINCT seq) <> count(*)
ORDER BY game_id
""")


async def row_counts(engine: AsyncEngine) -> dict[str, int]:
    """Rows per table of the schema, by table name."""
    async with engine.connect() as conn:
        return {table.name: int((await conn.execute(
            select(func.count()).select_from(table))).scalar_one())
            for table in Base.metadata.sorted_tables}


async def problems(engine: AsyncEngine) -> list[str]:
    """What is wrong with the stored data, a line each (none: it is whole)."""
    found: list[str] = []
    async with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            for (line,) in (await conn.execute(text("PRAGMA integrity_check"))).all():
                if line != "ok":
                    found.append(f"sqlite integrity_check: {line}")
            for row in (await conn.execute(text("PRAGMA foreign_key_check"))).all():
                found.append(f"sqlite foreign_key_check: {tuple(row)}")
        for game_id, n, first, last, seqs in (await conn.execute(_GAPS)).all():
            found.append(f"game {game_id}: {n} moves with plies {first}..{last} and {seqs} "
                         "distinct event numbers (plies 0..n-1, one number each)")
    return found
