"""Fenced writes: the database refuses a write made under an epoch the game no longer has.

In a cluster a live game is owned by one node, through a lease in Redis (``leases``). A
lease cannot stop an owner that stalled past it (a long pause, a broken link to Redis) from
writing when it wakes up: it does not know it stalled. So ownership is also written where
the moves are: ``games.epoch``. A node that takes a game over bumps it
(``Store.take_over_game``)::

    UPDATE games SET epoch = epoch + 1 WHERE id = :id AND status = 'playing' RETURNING epoch

and every write of an owner carries the epoch it holds the game at. Each transaction of the
commit queue first *fences* every game it writes to, one statement per game (in game id
order, so two transactions never lock two rows in opposite orders)::

    UPDATE games SET last_seq = CASE WHEN last_seq < :seq THEN :seq ELSE last_seq END
    WHERE id = :id AND epoch = :epoch AND status = 'playing'

where ``:seq`` is the highest event number the batch holds for that game. One row changed:
the writer still owns the game, and the row stays locked until the commit. No row: the
game's items are not written and each gets ``StaleEpoch`` (or ``GameNotPlaying`` if it is
over or unknown); the other games of the batch are written as usual. Then, for the games
that passed::

    INSERT INTO moves (...) VALUES (...)          -- moves, as the commit queue does now
    INSERT INTO chat (...) VALUES (...)           -- chat lines
    UPDATE games SET status = :status, winner = :winner, reason = :reason,
                     last_seq = :seq, ended_at = :ended_at
    WHERE id = :id AND status = 'playing' AND epoch = :epoch      -- game ends

and a seq advance (``opponent_left``, ``opponent_back``) is the fence statement alone.

**Why an UPDATE and not a check.** A check (``INSERT ... WHERE EXISTS (... epoch = :e)``)
reads the epoch without locking it: on PostgreSQL (READ COMMITTED) a takeover could bump
the epoch and load the game while the old owner's transaction, which had checked the old
epoch, is still open; that transaction would then commit a move the new owner never saw.
The fence's UPDATE locks the game's row, so the takeover's UPDATE waits for that
transaction to end (then re-reads the row) and the new owner loads everything it stored;
every later write of the old owner finds the new epoch and is refused. On SQLite the whole
database has one writer at a time, which serializes the same way.

``write_fenced`` takes the commit queue's items (``server.storage.items``), each paired
with its epoch in a ``Fenced``. Wiring it into the queue is mechanical: the items gain an
``epoch`` field (None on a single server: unfenced, as today) and the batch writer
(``server.storage.statements.write_batch``) runs ``write_fenced_blocking`` for those that
carry one, in the same transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Connection, case, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from server.storage.errors import GameNotPlaying, StorageError
from server.storage.items import ChatSent, GameCreated, GameFinished, Item, MovePlayed
from server.storage.rating_writes import rate_finished_game
from server.storage.statements import CHAT as _CHAT

# the rows the commit queue writes, built where it builds them (one definition of a row)
from server.storage.statements import (
    GAME_RATINGS,
    CoreStatements,
    Outcomes,
    _chat_row,
    _game_row,
    _move_row,
)
from server.storage.statements import GAMES as _GAMES
from server.storage.statements import MOVES as _MOVES

from .errors import StaleEpoch


@dataclass(frozen=True, slots=True)
class Fenced:
    """A commit queue item written under the epoch its owner holds the game at."""

    item: Item
    epoch: int

    def __post_init__(self) -> None:
        if self.epoch < 0:
            raise ValueError(f"an epoch is >= 0, not {self.epoch}")


async def write_fenced(conn: AsyncConnection, batch: Sequence[Fenced]
                       ) -> Outcomes:
    """``write_fenced_blocking`` on an async connection, inside the caller's transaction."""
    return await conn.run_sync(write_fenced_blocking, batch)


def write_fenced_blocking(conn: Connection, batch: Sequence[Fenced]
                          ) -> Outcomes:
    """Write a batch inside the caller's transaction; per item, None (stored) or why not.

    New games are inserted first (under their epoch, normally 0), then every other game
    written to is fenced as the module docstring says. Raises IntegrityError as the commit
    queue's ``write_batch`` does (a duplicate ply, an unknown user): the caller rolls back.
    """
    created = [entry for entry in batch if isinstance(entry.item, GameCreated)]
    if created:
        conn.execute(insert(_GAMES), [
            {**_game_row(cast(GameCreated, entry.item)), "epoch": entry.epoch}
            for entry in created])
    highest: dict[tuple[str, int], int] = defaultdict(int)
    for entry in batch:
        if not isinstance(entry.item, GameCreated):
            key = (entry.item.game_id, entry.epoch)
            highest[key] = max(highest[key], entry.item.seq)
    refused = {key: _why_refused(conn, *key) for key in sorted(highest)
               if not _fence(conn, *key, highest[key])}
    outcomes: Outcomes = [None] * len(batch)
    moves: list[dict[str, Any]] = []
    chat: list[dict[str, Any]] = []
    for index, entry in enumerate(batch):
        item = entry.item
        if isinstance(item, GameCreated):
            continue
        why = refused.get((item.game_id, entry.epoch))
        if why is not None:
            outcomes[index] = why
        elif isinstance(item, MovePlayed):
            moves.append(_move_row(item))
        elif isinstance(item, ChatSent):
            chat.append(_chat_row(item))
    if moves:
        conn.execute(insert(_MOVES), moves)
    if chat:
        conn.execute(insert(_CHAT), chat)
    for index, entry in enumerate(batch):
        item = entry.item
        if not isinstance(item, GameFinished) or outcomes[index] is not None:
            continue
        if not _finish(conn, item, entry.epoch):
            outcomes[index] = GameNotPlaying(f"game {item.game_id!r} is over")
        elif item.rated is not None and item.status == "over":  # in the same transaction
            outcomes[index] = rate_finished_game(conn, item, CoreStatements(), GAME_RATINGS)
    return outcomes


def _fence(conn: Connection, game_id: str, epoch: int, seq: int) -> bool:
    """Lock a live game's row if it is at ``epoch``, advancing its last_seq to ``seq``."""
    return conn.execute(
        update(_GAMES)
        .where(_GAMES.c.id == game_id, _GAMES.c.epoch == epoch, _GAMES.c.status == "playing")
        .values(last_seq=case((_GAMES.c.last_seq < seq, seq), else_=_GAMES.c.last_seq))
    ).rowcount == 1


def _why_refused(conn: Connection, game_id: str, epoch: int) -> StorageError:
    found = conn.execute(select(_GAMES.c.epoch, _GAMES.c.status)
                         .where(_GAMES.c.id == game_id)).one_or_none()
    if found is None or found.status != "playing":
        return GameNotPlaying(f"game {game_id!r} is unknown or over")
    return StaleEpoch(f"game {game_id!r} was taken over: epoch {epoch} is stale "
                      f"(the game is at {found.epoch})")


def _finish(conn: Connection, item: GameFinished, epoch: int) -> bool:
    return conn.execute(
        update(_GAMES)
        .where(_GAMES.c.id == item.game_id, _GAMES.c.status == "playing",
               _GAMES.c.epoch == epoch)
        .values(status=item.status, winner=item.winner, reason=item.reason,
                last_seq=item.seq, ended_at=item.ended_at)).rowcount == 1

