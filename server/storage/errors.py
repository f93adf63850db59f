"""Exceptions raised by the storage layer.

Everything the storage package raises on purpose derives from one root::

    StorageError
    ├── Conflict            a write broke a uniqueness or reference rule; nothing was stored
    │   ├── NameTaken       create_user: the name (compared case-insensitively) is in use,
    │   │                   held (a deleted account's, for a while) or kept for deleted ones
    │   ├── GameNotPlaying  finishing a game that is unknown or already over
    │   └── StillPlaying    delete_account: the account has a game in progress
    ├── InvalidCursor       list_games: the cursor was not produced by list_games (ValueError)
    ├── StaleEpoch          a fenced write carried an epoch the game no longer has (another
    │                       node of a cluster took the game over); nothing was stored
    ├── WriteFailed         the database failed to commit a batch; nothing in it was stored
    └── WriterClosed        submit() after CommitQueue.close()

Database driver errors are chained as ``__cause__`` so logs keep the detail while callers
catch one family.
"""

from __future__ import annotations


class StorageError(Exception):
    """Root of every error the storage package raises on purpose."""


class Conflict(StorageError):
    """A write violated a uniqueness or foreign-key rule and was not stored."""


class NameTaken(Conflict):
    """A user with this name (case-insensitively) already exists."""


class GameNotPlaying(Conflict):
    """The game to finish does not exist or has already ended."""


class StillPlaying(Conflict):
    """The account to delete has a game in progress (``game_id``, its oldest)."""

    def __init__(self, game_id: str) -> None:
        super().__init__(f"a game in progress: {game_id}")
        self.game_id = game_id


class InvalidCursor(StorageError, ValueError):
    """A pagination cursor that list_games did not produce."""


class StaleEpoch(StorageError):
    """A write made under an epoch the game no longer has: refused by the database
    (``server/storage/fencing.py``)."""


class WriteFailed(StorageError):
    """The database refused or lost a batch; none of its items were stored."""


class WriterClosed(StorageError):
    """The commit queue is closed and accepts no more items."""
