"""Tessera's storage: accounts, tokens and complete game records in SQLite or PostgreSQL.

The modules, each small:

    models   the schema: one DeclarativeBase, typed columns, a constraint naming convention
    db       engines (SQLite pragmas: WAL, synchronous, busy_timeout, foreign keys), URLs
    migrate  Alembic migrations run from code: ``await upgrade(url)`` on every start
    repo     ``Store``: users, tokens, creating games, history listing, game records
    items    what the commit queue stores: game starts, moves, chat, seq advances, game ends
    writer   ``CommitQueue``: group commit of moves, chat and game ends (the hot path)
    rating_writes  a rated game's two rating updates, in the transaction of its end
    rating_reads   ratings by player and pool, leaderboards, histories, a game's changes
    statements  how a batch is written: Core (the reference) or, on a SQLite file, SQL
             text in a thread of its own, chosen when storage opens
    records  the frozen values returned; ``errors`` the exceptions (root ``StorageError``)
    runtime  ``open_storage``: all of the above wired together for ``main()``
    sandbox  a PostgreSQL login role and schema of a tool's or a test's own

This package knows nothing of the protocol or the rules: moves are stored as the engine's
canonical text, options and clock settings as JSON, and the move list is the truth from
which positions and clocks are derived.

In ``main()``::

    async with open_storage(url, sqlite_synchronous="FULL") as storage:
        for record in await storage.store.load_active_games():
            ...                                   # rebuild each game from its moves
        await storage.writer.submit(MovePlayed(...))   # returns once the move is durable
    # on exit: everything queued is written, then the engine is disposed
"""

from .db import (
    SqliteSynchronous,
    default_data_dir,
    default_database_url,
    make_blocking_engine,
    make_engine,
    make_session_factory,
    make_write_lock,
    normalize_url,
    redact_url,
    sqlite_url,
)
from .errors import (
    Conflict,
    GameNotPlaying,
    InvalidCursor,
    NameTaken,
    StaleEpoch,
    StillPlaying,
    StorageError,
    WriteFailed,
    WriterClosed,
)
from .items import (
    ChatSent,
    GameCreated,
    GameFinished,
    Item,
    MovePlayed,
    RatedPlayers,
    SeqAdvanced,
)
from .migrate import current_revision, downgrade, head_revision, upgrade
from .rating_reads import RatingReads, StoredUpdate
from .records import (
    ChallengePolicy,
    ChallengeTerms,
    ChatRecord,
    FinishedStatus,
    GameInfo,
    GamePage,
    GameRatings,
    GameStatus,
    MoveRecord,
    PlayingGame,
    PlayingPage,
    PoolRating,
    RatingChange,
    RatingPoint,
    StoredGame,
    Token,
    TokenKind,
    User,
    UserKind,
)
from .repo import Store, name_key, new_game_id, token_digest
from .runtime import Storage, open_storage
from .statements import BatchWriter, CoreWriter, SqliteThreadWriter, open_batch_writer
from .writer import CommitQueue, WriterStats

__all__ = [
    "BatchWriter",
    "ChallengePolicy",
    "ChallengeTerms",
    "ChatRecord",
    "ChatSent",
    "CommitQueue",
    "Conflict",
    "CoreWriter",
    "FinishedStatus",
    "GameCreated",
    "GameFinished",
    "GameInfo",
    "GameNotPlaying",
    "GamePage",
    "GameRatings",
    "GameStatus",
    "InvalidCursor",
    "Item",
    "MovePlayed",
    "MoveRecord",
    "NameTaken",
    "PlayingGame",
    "PlayingPage",
    "PoolRating",
    "RatedPlayers",
    "RatingChange",
    "RatingPoint",
    "RatingReads",
    "SeqAdvanced",
    "SqliteSynchronous",
    "SqliteThreadWriter",
    "StaleEpoch",
    "StillPlaying",
    "Storage",
    "StorageError",
    "Store",
    "StoredGame",
    "StoredUpdate",
    "Token",
    "TokenKind",
    "User",
    "UserKind",
    "WriteFailed",
    "WriterClosed",
    "WriterStats",
    "current_revision",
    "default_data_dir",
    "default_database_url",
    "downgrade",
    "head_revision",
    "make_blocking_engine",
    "make_engine",
    "make_session_factory",
    "make_write_lock",
    "name_key",
    "new_game_id",
    "normalize_url",
    "open_batch_writer",
    "open_storage",
    "redact_url",
    "sqlite_url",
    "token_digest",
    "upgrade",
]
