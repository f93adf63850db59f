"""Where stored matches come from, for replay, export and verify: a server or a database.

A server is asked with ``get_game`` (and ``list_games`` to find every game); a database is
read by running ``python -m server dump`` as a subprocess, so the clients never import the
server. Both give the wire form of a record, :class:`protocol.Record`, which
:func:`clients.records.match_record_from_wire` turns into a ``MatchRecord``.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from websockets.exceptions import WebSocketException

import protocol as p
from clients.connection import DEFAULT_URL, Connection, Disconnected, ServerError

DUMP_TIMEOUT_S = 120.0
LIST_PAGE = 100


class FetchError(Exception):
    """A record could not be fetched: no such game, server unreachable, bad database."""


@dataclass(frozen=True, slots=True)
class Source:
    """A server URL or a database URL (``db`` wins when both are set)."""

    server: str = DEFAULT_URL
    db: str | None = None

    def describe(self) -> str:
        return f"database {self.db}" if self.db else f"server {self.server}"


# -- from a server -----------------------------------------------------------------------------
async def _with_server(url: str, work: Any) -> Any:
    try:
        conn = await Connection.open(url, client="tessera-fetch")
    except (OSError, TimeoutError, Disconnected, WebSocketException, ServerError) as exc:
        raise FetchError(f"cannot connect to {url}: {exc}") from None
    async with conn:
        try:
            return await work(conn)
        except ServerError as exc:
            raise FetchError(f"{url}: {exc.message}") from None
        except Disconnected:
            raise FetchError(f"{url}: the connection closed") from None


async def get_record(conn: Connection, game_id: str) -> p.Record:
    """One game's record over an open connection (ServerError if there is none)."""
    reply = await conn.call(p.GetGame, game_id=game_id)
    assert isinstance(reply, p.GameRecord)
    return reply.record


async def list_game_ids(conn: Connection) -> list[str]:
    """Every game the server lists, oldest last (it pages with a cursor)."""
    ids: list[str] = []
    cursor: str | None = None
    while True:
        reply = await conn.call(p.ListGames, cursor=cursor, limit=LIST_PAGE)
        assert isinstance(reply, p.GameList)
        ids += [g.game_id for g in reply.games]
        if reply.next_cursor is None or not reply.games:
            return ids
        cursor = reply.next_cursor


async def records_from_server(url: str, game_ids: Sequence[str],
                              all_games: bool = False) -> list[p.Record]:
    async def work(conn: Connection) -> list[p.Record]:
        ids = list(game_ids) + (await list_game_ids(conn) if all_games else [])
        out = []
        for game_id in ids:
            try:
                out.append(await get_record(conn, game_id))
            except ServerError as exc:
                raise FetchError(f"game {game_id}: {exc.message}") from None
        return out

    records: list[p.Record] = await _with_server(url, work)
    return records


# -- from a database ---------------------------------------------------------------------------
def records_from_db(db_url: str, game_ids: Sequence[str],
                    all_games: bool = False) -> list[p.Record]:
    """Run ``python -m server dump`` and read its JSON lines."""
    command = [sys.executable, "-m", "server", "dump", *game_ids, "--db", db_url]
    if all_games:
        command.append("--all")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=DUMP_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FetchError(f"server dump failed: {exc}") from None
    records = []
    for line in done.stdout.splitlines():
        if line.strip():
            try:
                records.append(p.load_value(p.Record, json.loads(line), "record"))
            except json.JSONDecodeError as exc:
                raise FetchError(f"server dump printed a line that is not JSON: {exc}") from None
            except p.InvalidMessage as exc:
                raise FetchError(f"server dump printed a record that is not valid: {exc}") \
                    from None
    if done.returncode != 0:
        raise FetchError(f"{db_url}: {_dump_failure(done.stderr, done.returncode)}")
    return records


def _dump_failure(stderr: str, status: int) -> str:
    """The gist of a failed dump: its ``error:`` lines, or the exception that ended it."""
    lines = stderr.splitlines()
    errors = [ln.removeprefix("error: ") for ln in lines if ln.startswith("error:")]
    if errors:
        return "; ".join(errors)
    raised = [ln for ln in lines if re.match(r"[A-Za-z_][\w.]*(Error|Exception)\b.*: ", ln)]
    return raised[-1] if raised else f"server dump exited with status {status}"


def fetch_records(source: Source, game_ids: Sequence[str],
                  all_games: bool = False) -> list[p.Record]:
    """The records of ``game_ids`` (and every stored game if ``all_games``) from ``source``."""
    if source.db:
        return records_from_db(source.db, game_ids, all_games)
    return asyncio.run(records_from_server(source.server, game_ids, all_games))


def fetch_record(source: Source, game_id: str) -> p.Record:
    records = fetch_records(source, [game_id])
    if not records:
        raise FetchError(f"no game {game_id} in {source.describe()}")
    return records[0]
