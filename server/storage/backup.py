"""Copies of a SQLite database: taken while a server plays on it, checked, and put back.

:func:`copy_live` takes a consistent copy with SQLite's online backup API. The source
connection holds one read transaction for the whole copy, so every page comes from the same
snapshot (the moment the copy began) and the copy never restarts; in WAL mode, which every
connection Tessera opens uses, a reader does not block the server's writers, and the copy
goes a few pages at a time with a short pause between, so that the server keeps its share
of the disk. The copy is written beside its destination, set to a rollback journal (one
self-contained file), checked with ``PRAGMA integrity_check`` and only then renamed into
place.

:func:`check_copy` reads a copy into a scratch file and checks it: that it is a SQLite
database, whole, and at a migration revision this version knows. :func:`put_back` then
moves the database it replaces aside (its ``-wal`` with it, so nothing of it is lost) and
renames the checked copy into its place. Holding the database against a server meanwhile
is the caller's part (:func:`server.storage.sole.sole_server`).

These run in the calling thread: they are the work of ``tessera db backup`` and ``tessera
db restore``, processes of their own beside the server.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .errors import StorageError

PAGES_PER_STEP = 256  # a megabyte at SQLite's default page size
PAUSE_S = 0.005  # between steps: the server's commits and fsyncs get the disk
SIDE_FILES = ("-wal", "-shm", "-journal")


class BackupError(StorageError):
    """A copy could not be taken, or is not one to restore; the message says why."""


@dataclass(frozen=True)
class Copied:
    """A copy taken: where, its size, how long it took, its revision, and how often the
    online backup started over because the source changed under it (never, when it holds a
    snapshot)."""

    path: Path
    pages: int
    page_size: int
    seconds: float
    revision: str | None
    restarts: int

    @property
    def bytes(self) -> int:
        return self.pages * self.page_size


@dataclass(frozen=True)
class Checked:
    """A copy read and found whole: the scratch file holding it, and its revision."""

    scratch: Path
    revision: str


def copy_live(source: Path, destination: Path, *, pages_per_step: int = PAGES_PER_STEP,
              pause_s: float = PAUSE_S) -> Copied:
    """Copy the database ``source`` to the new file ``destination`` while others write it
    (see the module docstring); :class:`BackupError` if it cannot, leaving nothing behind."""
    if not source.is_file():
        raise BackupError(f"no database at {source}")
    if destination.exists():
        raise BackupError(f"{destination} exists already: give a new path")
    partial = destination.with_name(destination.name + ".partial")
    _remove(partial)
    started = time.monotonic()
    try:
        src = sqlite3.connect(f"file:{source}?mode=rw", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise BackupError(f"cannot open {source}: {exc}") from None
    try:
        with contextlib.closing(src), contextlib.closing(sqlite3.connect(partial)) as dst:
            wal = src.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            if wal:  # one snapshot for every step; WAL writers go on beside it
                src.execute("BEGIN")
                src.execute("SELECT count(*) FROM sqlite_master").fetchone()

            left = -1  # pages left after the last step
            restarts = 0

            def pause(status: int, remaining: int, total: int) -> None:
                nonlocal left, restarts
                restarts += 0 <= left < remaining
                left = remaining
                if remaining:
                    time.sleep(pause_s)

            # without WAL a reader would hold writers off: the copy is made in one step
            src.backup(dst, pages=pages_per_step if wal else -1, progress=pause)
            if wal:
                src.execute("COMMIT")
            dst.execute("PRAGMA journal_mode=DELETE")
            pages = dst.execute("PRAGMA page_count").fetchone()[0]
            page_size = dst.execute("PRAGMA page_size").fetchone()[0]
        checked = _whole(partial)
        _fsync(partial)
        os.replace(partial, destination)
        _fsync(destination.parent)
    except BaseException as exc:
        for path in _with_side_files(partial):
            _remove(path)
        if isinstance(exc, sqlite3.Error):
            raise BackupError(f"copying {source}: {exc}") from None
        raise
    return Copied(destination, pages, page_size, time.monotonic() - started, checked,
                  restarts)


def check_copy(copy: Path, scratch: Path, known: set[str]) -> Checked:
    """Read ``copy`` into the new file ``scratch`` and check it: a SQLite database,
    whole, at one of the ``known`` migration revisions. :class:`BackupError` says what is
    wrong (and ``scratch`` is gone); ``copy`` itself is only read."""
    if not copy.is_file():
        raise BackupError(f"no file at {copy}")
    for path in _with_side_files(scratch):
        _remove(path)
    try:
        try:
            with contextlib.closing(sqlite3.connect(f"file:{copy}?mode=ro", uri=True)) as src, \
                    contextlib.closing(sqlite3.connect(scratch)) as dst:
                src.backup(dst)
                dst.execute("PRAGMA journal_mode=DELETE")
        except sqlite3.DatabaseError as exc:
            raise BackupError(f"{copy} is not a SQLite database ({exc})") from None
        revision = _whole(scratch)
        if revision is None:
            raise BackupError(f"{copy} is not a Tessera database: it has no migration "
                              "revision")
        if revision not in known:
            raise BackupError(f"{copy} is at migration revision {revision}, which this "
                              "version of Tessera does not know (made by a newer one?)")
        _fsync(scratch)
    except BaseException:
        for path in _with_side_files(scratch):
            _remove(path)
        raise
    return Checked(scratch, revision)


def put_back(checked: Checked, database: Path) -> Path | None:
    """Make the checked copy ``database``: the database there before (with its ``-wal``)
    is renamed aside, to the path returned (None when there was none)."""
    aside = None
    if database.exists():
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = database.with_name(f"{database.name}.replaced-{stamp}")
        for suffix in ("", *SIDE_FILES):
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{database}{suffix}", f"{aside}{suffix}")
    for suffix in SIDE_FILES:  # a stale log beside the restored file would be replayed
        _remove(Path(f"{database}{suffix}"))
    database.parent.mkdir(parents=True, exist_ok=True)
    os.replace(checked.scratch, database)
    _fsync(database.parent)
    return aside


def _whole(path: Path) -> str | None:
    """Check the file with ``PRAGMA integrity_check``; its migration revision (None if it
    has none). :class:`BackupError` lists what is broken."""
    try:
        with contextlib.closing(sqlite3.connect(path)) as db:
            lines = [line for (line,) in db.execute("PRAGMA integrity_check")]
            if lines != ["ok"]:
                shown = "; ".join(lines[:5]) + (" ..." if len(lines) > 5 else "")
                raise BackupError(f"the copy is not whole: integrity_check: {shown}")
            try:
                row = db.execute("SELECT version_num FROM alembic_version").fetchone()
            except sqlite3.OperationalError:  # no such table: never migrated
                return None
            return None if row is None else str(row[0])
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"the copy is not whole: {exc}") from None


def _with_side_files(path: Path) -> Iterator[Path]:
    yield path
    for suffix in SIDE_FILES:
        yield Path(f"{path}{suffix}")


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _fsync(path: Path) -> None:
    """Make a file's content, or a directory's entries, durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
