"""Where stored matches come from, for replay, export and verify: a server or a database.

A server is asked with ``get_game`` (and ``list_games`` to find every game); a database is
read by running ``python -m server dump`` as a subprocess, so the clients never import the
server. Both give the wire form of a record, :class:`protocol.Record`, which
:func:`to_match_record` turns into a :class:`clients.records.MatchRecord`.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgpack
from websockets.exceptions import WebSocketException

import protocol as p
from clients import records
from clients.connection import DEFAULT_URL, Connection, Disconnected, ServerError
from clients.records import MatchRecord

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


def record_from_wire(data: Mapping[str, Any]) -> p.Record:
    """Validate a record's wire form (as ``server dump`` prints it) with the protocol codec."""
    frame = msgpack.packb({"t": "game_record", "id": 0, "record": dict(data)})
    try:
        message = p.decode_server(frame)
    except p.ProtocolError as exc:
        raise FetchError(f"not a valid record: {exc}") from None
    assert isinstance(message, p.GameRecord)
    return message.record


def iso_date(epoch_ms: int) -> str:
    """Epoch milliseconds as a record date: ``2026-01-01T00:00:40.123Z``."""
    when = datetime.fromtimestamp(epoch_ms / 1000, UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def to_match_record(record: p.Record) -> MatchRecord:
    """The match record of a stored game; a game still in progress is ``unterminated``."""
    return records.record_from_wire(record)


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
                records.append(record_from_wire(json.loads(line)))
            except json.JSONDecodeError as exc:
                raise FetchError(f"server dump printed a line that is not JSON: {exc}") from None
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
