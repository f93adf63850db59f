"""What a server stored, read as an operator reads it: through the server's own commands
(``tessera dump``, ``tessera db counts``, ``tessera db check``, run as processes on the
database URL the server was given), never by opening its database. The load and fault
tools (bench, chaos, siege) check their acknowledgements against these, and run the other
server commands they need with ``server_output``."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TIMEOUT_S = 600.0


def _server(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server", *args], capture_output=True,
                          text=True, timeout=TIMEOUT_S)


def server_output(*args: str) -> str:
    """What ``tessera ARGS`` (``python -m server ARGS``) prints; RuntimeError with the end of
    its stderr if it fails."""
    done = _server(*args)
    if done.returncode != 0:
        command = " ".join(itertools.takewhile(lambda arg: not arg.startswith("-"), args))
        raise RuntimeError(f"tessera {command} failed: {done.stderr[-2000:]}")
    return done.stdout


def sqlite_file_url(path: Path) -> str:
    """The database URL of a server's SQLite file (as ``tessera serve --db`` takes it)."""
    return f"sqlite+aiosqlite:///{path}"


def records(db_url: str) -> Iterator[dict[str, Any]]:
    """Every stored game's record, as ``tessera dump --all`` prints it (docs/PROTOCOL.md)."""
    dump = server_output("dump", "--all", "--db", db_url)
    return (json.loads(line) for line in dump.splitlines() if line.strip())


def stored_moves(db_url: str) -> dict[tuple[str, int], str]:
    """Every stored move: (game id, ply) -> its text."""
    return {(record["game_id"], move["ply"]): move["move"]
            for record in records(db_url) for move in record["moves"]}


def row_counts(db_url: str) -> dict[str, int]:
    """Rows per table (``tessera db counts``)."""
    found: dict[str, int] = json.loads(server_output("db", "counts", "--db", db_url))
    return found


def problems(db_url: str) -> list[str]:
    """What ``tessera db check`` finds wrong (empty: the stored data is whole)."""
    check = _server("db", "check", "--db", db_url)
    if check.returncode not in (0, 1):
        raise RuntimeError(f"tessera db check failed: {check.stderr[-2000:]}")
    return [] if check.returncode == 0 else check.stdout.splitlines()
