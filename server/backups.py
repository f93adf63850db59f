"""``tessera db backup PATH`` and ``tessera db restore PATH``: a SQLite database copied
while its server plays on, and a copy put back (the mechanics: :mod:`server.storage.backup`).

A restore holds the database as a server would (:mod:`server.storage.sole`): it refuses
while a server runs on it, and no server starts on it until the copy is in place. The
restored database is at the copy's migration revision; the next ``serve`` (or ``db
upgrade``) brings it to this version's. PostgreSQL has tools of its own for both
(``pg_dump``, ``pg_restore``): docs/OPERATIONS.md.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from .storage import normalize_url, redact_url
from .storage.backup import BackupError, check_copy, copy_live, put_back
from .storage.db import is_sqlite
from .storage.migrate import head_revision, known_revisions
from .storage.sole import DatabaseInUse, sole_server

POSTGRES = ("on PostgreSQL use pg_dump and pg_restore, as docs/OPERATIONS.md shows "
            "(section Backups)")


def run(command: str, path: str, db_url: str) -> int:
    """``command`` (``backup`` or ``restore``) between the file ``path`` and the database
    ``db_url``: 0, or one line on stderr and 1 (2 for a database it does not apply to)."""
    database = sqlite_file(db_url)
    if database is None:
        print(f"tessera db {command}: {redact_url(db_url)} is not a SQLite file: {POSTGRES}",
              file=sys.stderr)
        return 2
    try:
        if command == "backup":
            copied = copy_live(database, Path(path))
            print(f"backed up {database} to {copied.path}: {copied.bytes / 1e6:.1f} MB in "
                  f"{copied.seconds:.2f} s, integrity ok, migration revision "
                  f"{copied.revision or 'none'}")
        else:
            asyncio.run(restore(Path(path), database, db_url))
    except (BackupError, DatabaseInUse) as exc:
        print(f"tessera db {command}: {exc}", file=sys.stderr)
        return 1
    return 0


def sqlite_file(db_url: str) -> Path | None:
    """The file of a SQLite URL; None for PostgreSQL or an in-memory database."""
    url = normalize_url(db_url)
    if not is_sqlite(url) or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database).resolve()


async def restore(copy: Path, database: Path, db_url: str) -> None:
    """Check ``copy`` and make it ``database``, holding the database meanwhile."""
    scratch = database.with_name(database.name + ".restoring")
    async with sole_server(db_url):
        checked = check_copy(copy, scratch, known_revisions())
        aside = put_back(checked, database)
    head = head_revision()
    upgrade = ("" if checked.revision == head else
               f"; the next serve or db upgrade migrates it to {head}")
    print(f"restored {copy} into {database} (migration revision {checked.revision}"
          f"{upgrade})")
    if aside is not None:
        print(f"the database it replaced is kept as {aside}")
